"""The size gate's verdict, pure: beat the heuristic on code never trained on, grow nothing, do not step back."""

from __future__ import annotations

from regression.policygate import SizeRow, check_sizes


def _rows(*ratios: float, in_force: float | None = None) -> list[SizeRow]:
    return [SizeRow(f"b{i}", 100_000, round(100_000 * r), None if in_force is None else round(100_000 * in_force))
            for i, r in enumerate(ratios)]


def test_a_first_policy_must_beat_the_heuristic_nothing_in_force_is_no_pass() -> None:
    assert check_sizes(_rows(0.98, 0.99), 0.995, 1.005, None).ok
    lost = check_sizes(_rows(1.0, 1.0), 0.995, 1.005, None)
    assert not lost.ok and "geomean 1.0000x: not below 0.9950x" in lost.detail


def test_no_benchmark_may_grow_beyond_the_tolerance_whatever_the_geomean() -> None:
    check = check_sizes(_rows(0.90, 1.006), 0.995, 1.005, None)
    assert not check.ok and "b1 above 1.0050x" in check.detail and "b1 1.0060x (100,600 vs 100,000 bytes)" in \
        check.detail
    assert check_sizes(_rows(0.90, 1.004), 0.995, 1.005, None).ok


def test_not_worse_than_the_policy_in_force() -> None:
    worse = check_sizes(_rows(0.98, 0.98, in_force=0.97), 0.995, 1.005, "P1")
    assert not worse.ok and "policy P1 0.9700x" in worse.detail and "worse than policy P1" in worse.detail
    assert check_sizes(_rows(0.97, 0.97, in_force=0.98), 0.995, 1.005, "P1").ok


def test_broken_and_left_out_benchmarks_are_named() -> None:
    broken = check_sizes(_rows(0.9), 0.995, 1.005, None, broken=[("lua", "clang exited with code 1")])
    assert not broken.ok and broken.detail.startswith("it cannot build lua (clang exited with code 1)")
    none = check_sizes([], 0.995, 1.005, None, skipped=[("lua", "the candidate trained or validated on it")])
    assert not none.ok and "lua left out: the candidate trained or validated on it" in none.detail


def test_a_benchmark_the_candidate_trained_on_is_left_out_before_anything_builds(tmp_path) -> None:
    from pathlib import Path

    from farm.toolchain import Toolchain
    from regression import benchmarks
    from regression.policygate import Policy, measure_sizes

    csrc = Path(__file__).resolve().parents[1] / "data" / "csrc"
    bench = benchmarks.local_benchmark(csrc)
    tc = Toolchain(Path("/usr/lib/llvm-22/bin"))
    never = Policy("P", tmp_path / "missing.onnx", None, "inline")
    rows, broken, skipped = measure_sizes(tc, [bench], never, None, tmp_path / "w", tmp_path / "s", trained_on=["csrc"])
    assert (rows, broken) == ([], []) and skipped == [("csrc", "the candidate trained or validated on it")]
    assert not (tmp_path / "w").exists()
