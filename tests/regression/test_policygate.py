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


# --- what the size check's task settles on the IR vocabulary the policy was trained with (regression/tasks.py) ---

def _publish_waiting(shelf, files: dict, manifest: dict, when: float) -> str:
    from farm.artifacts.verdict import POLICY_SIZE, Check, Verdict

    def waits(_record, current):
        return Verdict((Check(POLICY_SIZE, False, "waiting", pending=True),), shelf.kind.in_force(current))

    return shelf.publish(_store(), files, manifest, when=when, judge=waits)["version"]


def _store():
    from farm.objectstore import store_from_settings

    return store_from_settings()


def _vocab(salt: int, when: float) -> str:
    import hashlib
    import json

    from farm.artifacts import VOCABULARIES

    data = json.dumps({"Opcodes": {"Ret": [salt, 0.5]}}).encode()
    return _publish_waiting(VOCABULARIES, {"vocab.json": data}, {
        "kind": "ir", "sha256": hashlib.sha256(data).hexdigest(), "dimension": 2,
        "lineage": {"dataset_id": "ir-0", "llvm_version": "22.1.8"}}, when)


def _policy(vocab: str, when: float, **heldout: float) -> str:
    import hashlib

    from farm.artifacts import POLICIES

    data = f"onnx model {vocab}".encode()
    rows = [{"package": p, "ratio": r, "shipped": None} for p, r in heldout.items()]
    return _publish_waiting(POLICIES, {"model.onnx": data}, {
        "advisor": "inline", "sha256": hashlib.sha256(data).hexdigest(), "vocab_version": vocab,
        "llvm": {"llvm_version": "22.1.8"}, "metrics": {"heldout": rows}}, when)


def test_the_size_check_settles_the_vocabulary_on_its_policy_against_the_in_force_vocabularys(
        tmp_path, monkeypatch) -> None:
    """Every policy here loses to the heuristic (its own check fails: it stays a candidate); the vocabularies are
    judged on their policies' held-out numbers against the one trained with the vocabulary in force."""
    from farm.artifacts import POLICIES, VOCABULARIES
    from farm.artifacts.verdict import POLICY_SIZE, Check
    from regression import tasks

    monkeypatch.setenv("MLGO_FARM_STORE_URL", f"file://{tmp_path / 'store'}")
    monkeypatch.setenv("MLGO_FARM_GATE_POLICY_SIZE", "true")
    lost = Check(POLICY_SIZE, False, ".text against the heuristic: zlib 1.0000x; geomean 1.0000x: not below 0.9950x")
    monkeypatch.setattr(tasks, "_measured", lambda *_a: lost)
    day, t0 = 86400, 1_790_000_000.0

    def check(policy: str) -> dict:
        out = tasks.size_check({"advisor": "inline", "version": policy, "created": True})
        assert out["state"] == "candidate" and out["size_check"]["ok"] is False, "the policy's own gate, unchanged"
        return out

    def vocab_gate(version: str) -> dict:
        return next(v for v in VOCABULARIES.read_index(_store()) if v["version"] == version)["gate"]

    # nothing in force: the vocabulary's own checks decide, its policy losing to the heuristic does not matter
    v1 = _vocab(1, t0)
    p1 = _policy(v1, t0 + 1, zlib=1.0, bzip2=1.0)
    assert check(p1)["vocab_state"] == "latest"
    assert vocab_gate(v1)["checks"][0]["detail"] == "no IR vocabulary in force: its own checks decide"
    assert POLICIES.read_latest(_store(), "inline") is None
    # not worse than the policy trained with the vocabulary in force (a candidate itself): promoted
    v2 = _vocab(2, t0 + day)
    p2 = _policy(v2, t0 + day + 1, zlib=1.0, bzip2=1.0021)
    assert check(p2)["vocab_state"] == "latest" and VOCABULARIES.read_latest(_store(), "ir")["version"] == v2
    assert f"vs 1.0000x for policy {p1} trained with {v1}" in vocab_gate(v2)["checks"][0]["detail"]
    # worse by more than the tolerance: held back, `latest` stays
    v3 = _vocab(3, t0 + 2 * day)
    p3 = _policy(v3, t0 + 2 * day + 1, zlib=1.03, bzip2=1.02)
    assert check(p3)["vocab_state"] == "candidate" and VOCABULARIES.read_latest(_store(), "ir")["version"] == v2
    assert vocab_gate(v3)["reasons"] == [f"policy_size: policy {p3} trained with {v3}: held-out geomean 1.0250x vs "
                                         f"1.0010x for policy {p2} trained with {v2} (bzip2 1.0200x vs 1.0021x, zlib "
                                         "1.0300x vs 1.0000x); worse than it by the tolerance 0.5%"]


def test_the_check_records_its_geomean_and_a_list_reads_it_back() -> None:
    """`policy list`'s SIZE_CHECK column is the size check's own figure, not one computed like it elsewhere."""
    from farm.artifacts.verdict import POLICY_SIZE, Check, Verdict, check_value, settled

    check = check_sizes(_rows(0.98, 0.99), 0.995, 1.005, None)
    assert check.value is not None and abs(check.value - (0.98 * 0.99) ** 0.5) < 1e-12
    assert f"geomean {check.value:.4f}x" in check.detail
    waiting = Verdict((Check(POLICY_SIZE, False, "waiting", pending=True),), None).to_dict()
    assert check_value(waiting, POLICY_SIZE) is None, "a pending check has no figure yet"
    record = settled(waiting, check)
    assert check_value(record, POLICY_SIZE) == check.value and check_value(record, "mrr") is None
    assert check_sizes([], 0.995, 1.005, None).value is None, "no figure when nothing was measured"


def test_the_size_checks_line_says_when_a_version_it_did_not_create_was_published() -> None:
    """On a fresh store the vocabulary chain's retrain publishes first and a policy builder reproduces the model:
    its line says when the version was published instead of a bare "already published"."""
    from farm.artifacts.verdict import Check
    from regression.tasks import summary

    check = Check("policy_size", False, "zlib 1.0000x")
    made = summary("inline", "V", True, check, None, "IR", "latest", "2026-11-29T02:37:39Z")
    again = summary("inline", "V", False, check, None, "IR", "latest", "2026-11-29T02:37:39Z")
    assert made.startswith("policy inline V (published, size check FAILED: zlib 1.0000x; latest stays at none")
    assert again == made.replace("(published,", "(already published at 2026-11-29 02:37:39 UTC,")
