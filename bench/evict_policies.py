"""Bench-only eviction policies that spread builds between LLVM's heuristic and chance, and the launcher serving them.

bench_evict_reward.py asks whether RegAllocScore ranks builds as callgrind does; a rank needs several builds that
differ by known amounts, more than the farm's policies give (the heuristic, `spill`, a trained scorer). So here:

* `rebuilt`: LLVM's default rule redone on the features (policytrain/evict_model.py `rebuilt_default`), close to
  the heuristic but not exact;
* `perturbed:P:SEED`: the rebuilt rule, except that with probability P a decision is a random candidate the mask
  allows: builds a little (P small) to a lot (P large) away from the heuristic;
* `random:SEED`: every decision a random allowed candidate (what tests/policyhost/test_evict_channel.py shows LLVM
  takes without crashing).

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
#: the specs this module serves (anything else is a built-in name or an ONNX path, served by policy-cc)
KINDS = ("rebuilt", "perturbed", "random")


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


def parse(spec: str) -> Perturbed:
    """`rebuilt`, `perturbed:P:SEED` or `random:SEED` as its policy; ValueError for anything else."""
    kind, *args = spec.split(":")
    if kind == "rebuilt" and not args:
        return Perturbed(spec, 0.0, 0)
    if kind == "perturbed" and len(args) == 2:
        return Perturbed(spec, float(args[0]), int(args[1]))
    if kind == "random" and len(args) == 1:
        return Perturbed(spec, 1.0, int(args[0]))
    raise ValueError(f"unknown bench eviction policy {spec!r}: rebuilt, perturbed:P:SEED or random:SEED")


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
    out = run_compile(argv[2:], parse(argv[0]), advisor="regalloc", toolchain=Toolchain.from_settings(), timeout=120)
    sys.stderr.write(out.stderr)
    if not out.ok:
        print(out.error, file=sys.stderr)
        return out.returncode or 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
