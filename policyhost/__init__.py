"""The policy side of MLGO: LLVM's interactive channel, the host that serves it, policies and the launcher.

Everything that makes a compiler take its decisions from a policy lives here: the protocol
codec, the per-compile host, the launcher (`mlgo-farm policy-cc`, `mlgo-farm-cc`), built-in and
ONNX policies and the shared policy server. The trainer (`policytrain/`) stands on it and the comparison side
(`regression/`) uses it as a client; nothing here imports either.
"""
