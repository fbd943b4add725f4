"""Compile time compares like with like: the policy build's (through the launcher) against the previous good run's
policy build, never against the heuristic's plain clang (the difference is mostly the channel's cost)."""

from __future__ import annotations

from regression import benchmarks, compare
from regression.compare import RunRequest, run_comparison
from regression.rules import HEURISTIC_BASELINE, PREVIOUS_BASELINE
from tests.conftest import DATA

BENCH = benchmarks.local_benchmark(DATA / "csrc", ("20000",))


def _run(run_id: str):
    return run_comparison(RunRequest(builder="ct", run_id=run_id, benchmarks=(BENCH,), policy="heuristic",
                                     repeats=0, callgrind=False, jobs=2))


def test_compile_time_is_judged_against_the_previous_policy_build_only() -> None:
    first, second = _run("c1"), _run("c2")
    h = compare.open_history()
    assert {m.policy for m in h.measurements(first.run) if m.metric == "compile_time"} == {"heuristic", "policy"}
    for result in (first, second):
        timed = [c for c in result.comparisons if c.metric == "compile_time"]
        assert all(c.baseline != HEURISTIC_BASELINE for c in timed), timed
    (against_previous,) = [c for c in second.comparisons if c.metric == "compile_time"]
    assert against_previous.baseline == PREVIOUS_BASELINE and not against_previous.gating
    assert against_previous.base_value == next(m.value for m in h.measurements(first.run, "policy")
                                               if m.metric == "compile_time")
    # the other metrics still compare the two builds of the same run
    assert any(c.baseline == HEURISTIC_BASELINE and c.metric == "text_size" for c in second.comparisons)
