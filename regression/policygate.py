"""The size gate of a retrained policy: does it build code at most as large as the policy in force?

Why a gate before `latest`: the nightly regression builder judges `latest` after the fact, against
the heuristic and the previous version; by then every download and every regression run follows
it. A retrained policy (and the IR vocabulary it was trained with: vocabgen/gate.py's
`policy_size` rule) becomes `latest` only if, on each of the `[gate] policy_benchmarks`, the
benchmark's binary built with it has at most `policy_size_tolerance` percent more `.text` than
built with the policy in force.

Why against the policy in force and not the heuristic: the warm start clones the heuristic and
loses to it by 0.3-1.5 % of `.text` (bench/README.md), which the nightly builder reports every
night; what promotion must stop is a step backwards. The first policy has nothing in force to
step back from, and passes saying so.

`.text` is deterministic, so each policy builds each benchmark once, without repeats. A benchmark
neither policy can build (its sources cannot be fetched) is listed and left out; one only the new
policy fails to build fails the gate: a policy that breaks a compile is worse than any size.
`judge` is pure, so a verdict can be recomputed from the sizes it names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from farm.errors import FarmError, InputError
from farm.toolchain import Toolchain
from regression import benchmarks, build, measure
from regression.benchmarks import Benchmark
from vocabgen.gate import POLICY_SIZE, Check

CANDIDATE, IN_FORCE = "candidate", "in-force"


@dataclass(frozen=True)
class SizeRow:
    """The binary `.text` (bytes) of one benchmark built with the policy in force and with the candidate."""

    benchmark: str
    in_force: int
    candidate: int

    @property
    def delta_pct(self) -> float:
        return 100.0 * (self.candidate - self.in_force) / self.in_force if self.in_force else 0.0

    def line(self) -> str:
        return f"{self.benchmark} .text {self.delta_pct:+.2f}% ({self.candidate:,} vs {self.in_force:,} bytes)"


def judge(rows: Sequence[SizeRow], tolerance_pct: float, in_force: str | None,
          broken: Sequence[tuple[str, str]] = (), skipped: Sequence[tuple[str, str]] = ()) -> Check:
    """The `policy_size` check: `broken` are (benchmark, reason) only the candidate failed to build,
    `skipped` those neither built."""
    if in_force is None:
        return Check(POLICY_SIZE, True, "no policy in force to compare with")
    left_out = "".join(f"; {b} left out: {why}" for b, why in skipped)
    if broken:
        b, why = broken[0]
        return Check(POLICY_SIZE, False, f"it cannot build {b} ({why}), which policy {in_force} builds{left_out}")
    if not rows:
        return Check(POLICY_SIZE, False, f"no benchmark could be built to compare with policy {in_force}{left_out}")
    worse = [r for r in rows if r.delta_pct > tolerance_pct]
    shown = worse or rows
    what = "; ".join(r.line() for r in shown)
    if worse:
        return Check(POLICY_SIZE, False, f"{what} against policy {in_force}, above the tolerance "
                                         f"{tolerance_pct:+g}%{left_out}")
    return Check(POLICY_SIZE, True, f"{what} against policy {in_force}, within the tolerance {tolerance_pct:+g}%"
                                    f"{left_out}")


def gate_benchmarks(spec: str) -> list[Benchmark]:
    """`[gate] policy_benchmarks`: comma-separated names of regression/benchmarks.py, or absolute paths of
    local C benchmark directories (set by the farm's operator, never by a build property)."""
    out = []
    for item in (x.strip() for x in spec.split(",")):
        if not item:
            continue
        out.append(benchmarks.local_benchmark(Path(item)) if Path(item).is_absolute() else benchmarks.lookup(item))
    if not out:
        raise InputError("[gate] policy_benchmarks names no benchmark")
    return out


@dataclass(frozen=True)
class Policy:
    """A policy to build with: its model file and the vocabulary it reads (None: none)."""

    name: str
    model: Path
    vocab: Path | None
    advisor: str


def _variant(label: str, p: Policy) -> build.Variant:
    return dataclasses.replace(build.policy_variant(str(p.model), p.vocab, advisor=p.advisor), name=label)


def measure_sizes(toolchain: Toolchain, benches: Sequence[Benchmark], candidate: Policy, in_force: Policy,
                  work: Path, sources: Path, opt_flags: Sequence[str] = ("-Oz",), jobs: int = 2
                  ) -> tuple[list[SizeRow], list[tuple[str, str]], list[tuple[str, str]]]:
    """(rows, broken, skipped) for `judge`: every benchmark built with both policies, binary `.text` measured."""
    rows, broken, skipped = [], [], []
    for bench in benches:
        try:
            root = benchmarks.fetch(bench, sources)
        except FarmError as e:
            skipped.append((bench.name, str(e)))
            continue
        built = {label: build.build_benchmark(toolchain, bench, root, _variant(label, p), work / bench.name / label,
                                              opt_flags, jobs)
                 for label, p in ((IN_FORCE, in_force), (CANDIDATE, candidate))}
        if built[IN_FORCE].error and built[CANDIDATE].error:
            skipped.append((bench.name, str(built[IN_FORCE].error)))
        elif built[CANDIDATE].error:
            broken.append((bench.name, str(built[CANDIDATE].error)))
        elif built[IN_FORCE].error:
            skipped.append((bench.name, f"policy {in_force.name} cannot build it: {built[IN_FORCE].error}"))
        else:
            sizes = measure.text_sizes(toolchain, [built[IN_FORCE].binary, built[CANDIDATE].binary])
            rows.append(SizeRow(bench.name, sizes[built[IN_FORCE].binary], sizes[built[CANDIDATE].binary]))
    return rows, broken, skipped
