"""The size gate of a retrained policy: does it beat LLVM's heuristic on code it never trained on?

Why a gate before `latest`: the nightly regression builder judges `latest` after the fact; by then
every download and every regression run follows it. A retrained policy becomes `latest` only if,
on the `[gate] policy_benchmarks` it was neither trained nor validated on, each built with LLVM's
heuristic, with the candidate and with the policy in force:

* it is smaller than the heuristic: the geomean of binary `.text` ratios (candidate / heuristic)
  is below `1 - policy_margin` percent;
* no benchmark grows: none is above `1 + policy_size_tolerance` percent of the heuristic's;
* it is not worse than the policy in force (its geomean ratio is not above the in-force one's).

"Nothing in force" is no longer a pass: a first policy must beat the heuristic like any other
(the warm start that merely cloned the heuristic lost by 0.3-1.5 % and still became `latest`).
A benchmark the candidate trained or validated on (its manifest's `splits`) is left out and
listed: a policy is judged only on code it never saw.

The IR vocabulary the policy was trained with is not judged here: its `policy_size` rule asks only that
this policy is not worse than the one trained with the vocabulary in force (vocabgen/gate.py
`policy_not_worse`, settled by regression/tasks.py), so a policy that loses to the heuristic stays a
candidate without keeping its vocabulary back.

`.text` is deterministic, so each variant builds each benchmark once. A benchmark no variant can
build is listed and left out; one only the candidate fails to build fails the gate: a policy that
breaks a compile is worse than any size. `check_sizes` is pure, so a verdict can be recomputed from the
sizes it names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from farm.artifacts.verdict import POLICY_SIZE, Check
from farm.errors import FarmError, InputError
from farm.numeric import geomean
from farm.toolchain import Toolchain
from regression import benchmarks, build, measure
from regression.benchmarks import Benchmark

CANDIDATE, IN_FORCE, HEURISTIC = "candidate", "in-force", "heuristic"


@dataclass(frozen=True)
class SizeRow:
    """The binary `.text` (bytes) of one benchmark built with the heuristic, the candidate and the policy in force."""

    benchmark: str
    heuristic: int
    candidate: int
    in_force: int | None = None

    @property
    def ratio(self) -> float:
        return self.candidate / self.heuristic if self.heuristic else 1.0

    @property
    def in_force_ratio(self) -> float | None:
        return None if self.in_force is None or not self.heuristic else self.in_force / self.heuristic

    def line(self) -> str:
        return f"{self.benchmark} {self.ratio:.4f}x ({self.candidate:,} vs {self.heuristic:,} bytes)"


def check_sizes(rows: Sequence[SizeRow], bar: float, cap: float, in_force: str | None,
                broken: Sequence[tuple[str, str]] = (), skipped: Sequence[tuple[str, str]] = ()) -> Check:
    """The `policy_size` check (see the module docstring): the geomean below `bar`, no benchmark above `cap`
    (`[gate]`'s `policy_bar` and `policy_cap`); `broken` are (benchmark, reason) only the candidate failed to
    build, `skipped` those left out (no variant built them, or the candidate trained on them)."""
    left_out = "".join(f"; {b} left out: {why}" for b, why in skipped)
    if broken:
        b, why = broken[0]
        return Check(POLICY_SIZE, False, f"it cannot build {b} ({why}), which the heuristic builds{left_out}")
    if not rows:
        return Check(POLICY_SIZE, False, f"no benchmark it never trained on could be built{left_out}")
    g = geomean([r.ratio for r in rows])
    problems = []
    if not g < bar:
        problems.append(f"not below {bar:.4f}x")
    problems += [f"{r.benchmark} above {cap:.4f}x" for r in rows if r.ratio > cap]
    versus = ""
    if in_force is not None and all(r.in_force is not None for r in rows):
        g_in = geomean([r.in_force_ratio for r in rows])
        versus = f", policy {in_force} {g_in:.4f}x"
        if g > g_in:
            problems.append(f"worse than policy {in_force}")
    head = f".text against the heuristic: {'; '.join(r.line() for r in rows)}; geomean {g:.4f}x{versus}"
    if problems:
        return Check(POLICY_SIZE, False, f"{head}: {', '.join(problems)}{left_out}", value=g)
    return Check(POLICY_SIZE, True, f"{head}: below {bar:.4f}x, none above {cap:.4f}x{left_out}", value=g)


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


def _variant(label: str, p: Policy | None) -> build.Variant:
    if p is None:
        return build.heuristic_variant()
    return dataclasses.replace(build.policy_variant(str(p.model), p.vocab, advisor=p.advisor), name=label)


def measure_sizes(toolchain: Toolchain, benches: Sequence[Benchmark], candidate: Policy, in_force: Policy | None,
                  work: Path, sources: Path, opt_flags: Sequence[str] = ("-Oz",), jobs: int = 2,
                  trained_on: Sequence[str] = ()) -> tuple[list[SizeRow], list[tuple[str, str]],
                                                           list[tuple[str, str]]]:
    """(rows, broken, skipped) for `check_sizes`: every benchmark the candidate never trained on built with the
    heuristic, the candidate and the policy in force (if any), binary `.text` measured."""
    rows, broken, skipped = [], [], []
    for bench in benches:
        if (bench.package or bench.name) in trained_on:
            skipped.append((bench.name, "the candidate trained or validated on it"))
            continue
        try:
            root = benchmarks.fetch(bench, sources)
        except FarmError as e:
            skipped.append((bench.name, str(e)))
            continue
        variants = {HEURISTIC: None, CANDIDATE: candidate, **({IN_FORCE: in_force} if in_force else {})}
        built = {label: build.build_benchmark(toolchain, bench, root, _variant(label, p), work / bench.name / label,
                                              opt_flags, jobs)
                 for label, p in variants.items()}
        if built[HEURISTIC].error:
            skipped.append((bench.name, f"the heuristic cannot build it: {built[HEURISTIC].error}"))
        elif built[CANDIDATE].error:
            broken.append((bench.name, str(built[CANDIDATE].error)))
        elif IN_FORCE in built and built[IN_FORCE].error:
            skipped.append((bench.name, f"policy {in_force.name} cannot build it: {built[IN_FORCE].error}"))
        else:
            sizes = measure.text_sizes(toolchain, [b.binary for b in built.values()])
            rows.append(SizeRow(bench.name, sizes[built[HEURISTIC].binary], sizes[built[CANDIDATE].binary],
                                sizes[built[IN_FORCE].binary] if IN_FORCE in built else None))
    return rows, broken, skipped
