"""Bench-only eviction policies that spread builds between LLVM's heuristic and chance, and the launcher serving them.

bench_evict_reward.py asks whether RegAllocScore ranks builds as callgrind does; a rank needs several builds that
differ by known amounts, more than the farm's policies give (the heuristic, `spill`, a trained scorer). So here:

* `rebuilt`: LLVM's default rule redone on the features (policytrain/evict_model.py `rebuilt_default`), close to
  the heuristic but not exact;
* `perturbed:P:SEED`: the rebuilt rule, except that with probability P a decision is a random candidate the mask
  allows: builds a little (P small) to a lot (P large) away from the heuristic;
* `random:SEED`: every decision a random allowed candidate (what tests/policyhost/test_evict_channel.py shows LLVM
  takes without crashing);
* `mir2vec:MODEL.onnx:VOCAB.json`: a policy trained with `policy train-evict --mir-vocab`, which also reads its
  decision's function's MIR2Vec embedding (policytrain/evict_context.py). LLVM does not send it, so before the
  compile the same command runs once with LLVM's own advisor, stopped after `virtregrewriter`, and the embeddings
  are read off that MIR, as in training.

Each compile seeds its own generator, so compiling a module twice (the build's object, then the scored MIR) asks
the same questions in the same order and gets the same answers: the reward is the one of the build measured.
A Python policy cannot go through `policy-cc` (it loads built-ins and ONNX files), so `launcher(spec)` is an argv
prefix that runs this module, which serves the compile with `policyhost.launcher.run_compile`, as a Variant's
launcher (regression/build.py) wants: `[*launcher(spec), clang, args...]`.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Mapping, Sequence

from bench.harness import ROOT

MASK = "mask"  # policyhost/runnable.py EVICT_MASK, not imported: this module starts once per compile
CONTEXT = "function_embedding"  # policytrain/evict_model.py CONTEXT, likewise
STOP = "-stop-after=virtregrewriter"  # policytrain/evict_reward.py STOP_AFTER, likewise
#: the specs this module serves (anything else is a built-in name or an ONNX path, served by policy-cc)
KINDS = ("rebuilt", "perturbed", "random", "mir2vec")


def random_allowed(rng: random.Random, mask: Sequence[float]) -> int:
    """A uniformly random candidate the mask allows (LLVM crashes on any other: the host refuses it first)."""
    allowed = [i for i, m in enumerate(mask) if m]
    if not allowed:
        raise ValueError("the mask allows no candidate")
    return rng.choice(allowed)


class Perturbed:
    """A host policy: `default(features)`, but with probability `p` a random allowed candidate instead (p = 1: all
    random, p = 0: the default); the generator is seeded per compile, so a module's answers repeat."""

    def __init__(self, name: str, p: float, seed: int, default=None) -> None:
        from policytrain.evict_model import rebuilt_default

        self.name, self.p, self.rng = name, p, random.Random(seed)
        self.default = default or rebuilt_default

    def bind(self, header) -> None:
        from farm.errors import InputError

        if header.feature(MASK) is None:
            raise InputError(f"policy {self.name} answers regalloc eviction, but the compiler sends no 'mask'")

    def answer(self, features: Mapping[str, Sequence[float]]) -> int:
        # the draw happens on every decision, so one seed's random stream does not depend on the default's answers
        draw = self.rng.random()
        pick = random_allowed(self.rng, features[MASK])
        return pick if draw < self.p else self.default(features)

    def decide(self, obs) -> int:
        return self.answer(obs.features)


class WithEmbeddings:
    """A host policy: an eviction ONNX model (policytrain/evict_onnx.py) that also reads its decision's function's
    MIR2Vec embedding, `function_embedding`, which LLVM does not send (so policy-cc cannot serve it): the vector of
    the function named by the decision's context, from `embeddings` (function name -> vector), zeros if unknown."""

    def __init__(self, name: str, model: str, embeddings) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1
        self.name, self.embeddings = name, embeddings
        self.session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        self.inputs = {i.name: i.type for i in self.session.get_inputs()}
        self.dim = next((i.shape[1] for i in self.session.get_inputs() if i.name == CONTEXT), 0)

    def bind(self, header) -> None:
        from farm.errors import InputError

        missing = [n for n in self.inputs if n != CONTEXT and header.feature(n) is None]
        if header.feature(MASK) is None or missing:
            raise InputError(f"policy {self.name}: the compiler sends no {(missing or [MASK])[0]!r}")

    def decide(self, obs) -> int:
        import numpy as np

        from policyhost.runnable import masked_argmax

        feed = {}
        for name, kind in self.inputs.items():
            if name == CONTEXT:
                vec = self.embeddings.get(obs.context or "")
                feed[name] = np.asarray([np.zeros(self.dim) if vec is None else vec], dtype=np.float32)
            else:
                dtype = np.float32 if "float" in kind else np.int64
                feed[name] = np.asarray([obs.features[name]], dtype=dtype)
        scores = self.session.run(None, feed)[0][0]
        return masked_argmax([float(x) for x in scores], obs.features[MASK])


def prepass_argv(argv: Sequence[str], mir: str) -> list[str]:
    """The compile `argv` (compiler first) turned into one that stops after register allocation with LLVM's own
    advisor and writes the MIR to `mir`: what policytrain/evict_context.py reads the embeddings from, the same as
    in training (the policy never changes it)."""
    out, skip = [], False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if a == "-o" and i + 1 < len(argv):
            out += ["-o", mir]
            skip = True
        elif a.startswith("-o") and len(a) > 2:
            out.append("-o" + mir)
        else:
            out.append("-S" if a == "-c" else a)
    if STOP not in out:
        out += ["-mllvm", STOP]
    return out


def function_embeddings(argv: Sequence[str], vocab: str, toolchain) -> dict:
    """Each function's embedding, from LLVM's own allocation of the compile `argv`."""
    import subprocess
    import tempfile
    from pathlib import Path

    from policytrain.evict_context import FunctionEmbedder

    with tempfile.TemporaryDirectory(prefix="mlgo-prepass-") as tmp:
        mir = str(Path(tmp) / "m.mir")
        subprocess.run(prepass_argv(argv, mir), check=True, capture_output=True, timeout=300)
        return FunctionEmbedder.load(vocab).embed(toolchain, Path(mir))


def parse(spec: str, argv: Sequence[str] = (), toolchain=None):
    """`rebuilt`, `perturbed:P:SEED`, `random:SEED` or `mir2vec:MODEL.onnx:VOCAB.json` as its policy (the last
    needs the compile's `argv`, for its functions' embeddings); ValueError for anything else."""
    kind, *args = spec.split(":")
    if kind == "mir2vec" and len(args) == 2:
        from pathlib import Path

        if not (Path(args[0]).is_file() and Path(args[1]).is_file()):
            raise ValueError(f"{spec}: the model and the vocabulary must be files")
        return WithEmbeddings(spec, args[0], function_embeddings(argv, args[1], toolchain) if argv else {})
    if kind == "rebuilt" and not args:
        return Perturbed(spec, 0.0, 0)
    if kind == "perturbed" and len(args) == 2:
        return Perturbed(spec, float(args[0]), int(args[1]))
    if kind == "random" and len(args) == 1:
        return Perturbed(spec, 1.0, int(args[0]))
    raise ValueError(f"unknown bench eviction policy {spec!r}: rebuilt, perturbed:P:SEED, random:SEED or "
                     "mir2vec:MODEL.onnx:VOCAB.json")


def is_bench_policy(spec: str) -> bool:
    return spec.split(":", 1)[0] in KINDS


def launcher(spec: str) -> tuple[str, ...]:
    """The argv prefix that compiles through `spec` (checked now, not once per compile)."""
    parse(spec)
    return ("env", f"PYTHONPATH={ROOT}", sys.executable, "-m", "bench.evict_policies", spec, "--")


def main(argv: list[str] | None = None) -> int:
    """`SPEC -- COMPILER ARGS...`: one compile served by SPEC; the compiler's stderr passed on, its failure (or the
    host's) the exit status."""
    from farm.toolchain import Toolchain
    from policyhost.launcher import run_compile

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m bench.evict_policies SPEC -- COMPILER ARGS...", file=sys.stderr)
        return 2
    tc = Toolchain.from_settings()
    out = run_compile(argv[2:], parse(argv[0], [str(tc.path("clang")) if argv[2] == "clang" else argv[2],
                                                *argv[3:]], tc),
                      advisor="regalloc", toolchain=tc, timeout=120)
    sys.stderr.write(out.stderr)
    if not out.ok:
        print(out.error, file=sys.stderr)
        return out.returncode or 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
