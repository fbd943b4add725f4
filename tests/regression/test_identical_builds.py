"""Noise: rows of byte-identical builds are "no change" without measuring them twice (LNT's binary hash check)."""

from __future__ import annotations

from regression import compare, measure, rules
from regression.compare import RunRequest, run_comparison
from regression.rules import DEFAULT_RULES, HEURISTIC_BASELINE, PREVIOUS_BASELINE
from tests.regression.alerts.test_delivery import BENCH


def test_identical_digests_are_unchanged_whatever_the_numbers_say() -> None:
    key, kinds = ("zlib/run", "wall_time"), {("zlib/run", "wall_time"): "workload"}
    fast, slow = (0.1, (0.10, 0.11, 0.10, 0.11, 0.10)), (0.5, (0.50, 0.51, 0.50, 0.52, 0.50))
    [differ] = rules.compare_values(DEFAULT_RULES, HEURISTIC_BASELINE, {key: (*fast, "a" * 64)},
                                    {key: (*slow, "b" * 64)}, kinds)
    assert differ.verdict == rules.REGRESSED
    [same] = rules.compare_values(DEFAULT_RULES, HEURISTIC_BASELINE, {key: (*fast, "a" * 64)},
                                  {key: (*slow, "a" * 64)}, kinds)
    assert same.verdict == rules.UNCHANGED and same.p_value is None and same.delta_pct > 300  # reported, not judged
    [unknown] = rules.compare_values(DEFAULT_RULES, HEURISTIC_BASELINE, {key: (*fast, None)}, {key: (*slow, None)},
                                     kinds)
    assert unknown.verdict == rules.REGRESSED  # no digests (an older run's rows): judged as ever


def test_a_policy_build_identical_to_the_heuristic_is_measured_once_and_unchanged(monkeypatch) -> None:
    measured: list[int] = []
    real = measure.text_sizes

    def counting(toolchain, files, chunk=200):
        measured.append(len(files))
        return real(toolchain, files, chunk)

    monkeypatch.setattr(measure, "text_sizes", counting)
    req = RunRequest(builder="control", run_id="c1", benchmarks=(BENCH,), policy="heuristic", repeats=3,
                     callgrind=False, jobs=2, publish=False)
    result = run_comparison(req)
    history = compare.open_history()
    rows = history.measurements(result.run)
    by = {(m.subject, m.metric, m.policy): m for m in rows}
    sized = [m for m in rows if m.metric == "text_size" and m.policy == "heuristic"]
    assert sized and all(m.sha256 and len(m.sha256) == 64 for m in rows if m.metric == "text_size")
    for m in sized:  # the launcher with LLVM's own heuristic builds the same bytes
        assert by[(m.subject, m.metric, "policy")].sha256 == m.sha256
    # each distinct object and binary measured once: half of what the two builds produced
    assert sum(measured) == len({m.sha256 for m in sized if m.kind in ("module", "binary")})
    walls = [c for c in result.comparisons if c.metric == "wall_time" and c.baseline == HEURISTIC_BASELINE]
    assert walls and all(c.verdict == rules.UNCHANGED and c.p_value is None for c in walls)

    again = run_comparison(RunRequest(**{**req.__dict__, "run_id": "c2"}))
    previous = [c for c in again.comparisons if c.baseline == PREVIOUS_BASELINE and c.metric == "text_size"]
    assert previous and all(c.verdict == rules.UNCHANGED and c.delta_pct == 0 for c in previous)
