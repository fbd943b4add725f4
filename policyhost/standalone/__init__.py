"""The policy host for people without the farm: one file, `mlgo_cc.py`, that needs only numpy and onnxruntime.

The dashboard serves it beside the policies (`policies/host/mlgo-cc.py` and its `.sha256`; the C file below as
`policies/host/mlgo-policy-host.c`); it imports nothing of the farm, so its flags and wire format are copies,
which tests/policyhost/test_standalone.py compares with policyhost/advisors.py, protocol.py, launcher.py and
runnable.py.

Beside it, `mlgo-policy-host.c`: the same host as one C file users build with their clang, reading the weights file
policytrain/native_export.py writes beside the ONNX model, so that a policy build does not start an interpreter and
onnxruntime per compile (tests/policyhost/test_native_host.py holds its decisions to onnxruntime's, bit for bit).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

#: the file users download, and the name it is served and saved under
SOURCE = Path(__file__).with_name("mlgo_cc.py")
SERVED_NAME = "mlgo-cc.py"
#: the one advisor it drives (its flags are the inliner's)
ADVISOR = "inline"


def source() -> bytes:
    return SOURCE.read_bytes()


def sha256_line() -> str:
    """The `sha256sum -c` line of the served file."""
    return f"{hashlib.sha256(source()).hexdigest()}  {SERVED_NAME}\n"


#: the native host (one C file, no dependency): what a policy build runs per compile when the user has built it,
#: at about a millisecond's start-up instead of an interpreter's and onnxruntime's (policytrain/native_export.py
#: writes the weights file it reads beside the ONNX model)
NATIVE_SOURCE = Path(__file__).with_name("mlgo-policy-host.c")
NATIVE_NAME = "mlgo-policy-host"
#: the one line that builds it, with the clang users already have
NATIVE_BUILD = f"clang -O2 -o {NATIVE_NAME} {NATIVE_SOURCE.name} -lm"
#: the name the dashboard serves it under (`policies/host/mlgo-policy-host.c`, and `.sha256`)
NATIVE_SERVED_NAME = NATIVE_SOURCE.name


def native_source() -> bytes:
    return NATIVE_SOURCE.read_bytes()


def native_build(clang: str = "clang") -> str:
    """The line that builds the native host with `clang` (a policy page names the clang of its LLVM)."""
    return NATIVE_BUILD.replace("clang", clang, 1)


def native_shim(clang: str = "clang", vocab: bool = True, weights: str = "model.weights") -> str:
    """The line that writes `cc` beside the native host (in `$mlgo`): a compiler shim, `exec HOST --weights W
    [--vocab V] -- CLANG "$@"` with `$mlgo`'s absolute paths, that build systems take as a plain compiler
    (`CC=$mlgo/cc` through libtool and autoconf, `-DCMAKE_C_COMPILER=$mlgo/cc`; policyhost/shim.py)."""
    words = [f'"%s/{NATIVE_NAME}"', "--weights", f'"%s/{weights}"', *(["--vocab", '"%s/vocab.json"'] if vocab else []),
             "--", clang, '"$@"']
    paths = " ".join(['"$mlgo"'] * (3 if vocab else 2))
    return f"printf '#!/bin/sh\\nexec {' '.join(words)}\\n' {paths} >cc && chmod 755 cc"


def native_sha256_line() -> str:
    """The `sha256sum -c` line of the native host's source."""
    return f"{hashlib.sha256(NATIVE_SOURCE.read_bytes()).hexdigest()}  {NATIVE_SOURCE.name}\n"
