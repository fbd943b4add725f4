"""The promotion gate: each rule on hand-made manifests, its settings, and what publishing does with it (promote
and settle, the store's side of the states, are tests/farm/artifacts/test_versions_gate.py's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.artifacts import VOCABULARIES
from farm.artifacts.verdict import Check, awaits_only, settled
from farm.config import load_settings
from farm.errors import FarmError, InputError
from farm.objectstore import FileStore
from farm.signing import farm_key, sign
from tests.vocabgen.conftest import GATE, WAITS, assert_consistent, handmade_manifest, handmade_vocab
from tests.vocabgen.conftest import publish_handmade as _publish
from vocabgen import publish as pub
from vocabgen.gate import OPEN, gate_from_settings
from vocabgen.gate import promotion_verdict as judge

DAY = 86400
T0 = 1_790_000_000.0


def _manifest(version: str = "v", mrr: float = 0.6, hits: float = 0.9, analogy: float | None = 0.5,
              coverage: dict | None = None, kind: str = "ir") -> dict:
    """A manifest as training and validation write it, with only what the gate reads."""
    cover = {"Opcodes": (50, 68), "Types": (6, 12), "Arguments": (25, 30)} if coverage is None else coverage
    metrics: dict = {"holdout": {"mrr": mrr, "hits_at_10": hits}}
    if analogy is not None:
        metrics["analogy"] = {"score_all": analogy}
    return {"kind": kind, "version": version, "sha256": "ab" * 32, "metrics": metrics,
            "validation": {"ok": True, "sha256": "ab" * 32, "llvm_version": "22.1.8"},
            "coverage": {s: {"trained": t, "total": n, "filler": [f"x{i}" for i in range(n - t)]}
                         for s, (t, n) in cover.items()}}


def _failed(verdict) -> set[str]:
    return {c.rule for c in verdict.checks if not c.ok}


def test_a_good_version_passes_with_and_without_a_latest() -> None:
    first = judge(_manifest(), None, GATE)
    assert first.passed and first.reasons == [] and first.against is None
    assert all("no latest to compare with" in c.detail for c in first.checks if c.rule in ("mrr", "analogy"))
    better = judge(_manifest("new", mrr=0.7, analogy=0.6), _manifest("old"), GATE)
    assert better.passed and better.against == "old"
    within = judge(_manifest("new", mrr=0.56, hits=0.86, analogy=0.46), _manifest("old"), GATE)
    assert within.passed, within.reasons


def test_validation_rule() -> None:
    m = _manifest()
    assert _failed(judge({**m, "validation": {"ok": False}}, None, GATE)) == {"validation"}
    assert _failed(judge({k: v for k, v in m.items() if k != "validation"}, None, GATE)) == {"validation"}
    other = {**m, "validation": {**m["validation"], "sha256": "cd" * 32}}
    assert judge(other, None, GATE).reasons == ["validation: the validation record is for other bytes"]


def test_coverage_floor_per_section() -> None:
    low = judge(_manifest(coverage={"Opcodes": (30, 68), "Types": (6, 12), "Arguments": (25, 30)}), None, GATE)
    assert not low.passed and low.reasons == ["coverage: Opcodes 30/68 trained (44.1%) below the floor 50.0%"]
    exact = judge(_manifest(coverage={"Opcodes": (34, 68), "Types": (3, 12), "Arguments": (9, 30)}), None, GATE)
    assert exact.passed, "a share equal to the floor passes"
    mir = _manifest(kind="mir", coverage={"Opcodes": (76, 6868), "CommonOperands": (8, 20)})
    assert judge(mir, None, GATE).passed, "only the kind's own floors apply"
    thin = {**mir, "coverage": {"Opcodes": {"trained": 60, "total": 6868, "filler": []}}}
    assert judge(thin, None, GATE).reasons == ["coverage: Opcodes 60/6868 trained (0.9%) below the floor 1.0%"]


def test_a_manifest_without_coverage_fails_with_a_clear_reason() -> None:
    m = {k: v for k, v in _manifest().items() if k != "coverage"}
    verdict = judge(m, None, GATE)
    assert verdict.reasons == ["coverage: the manifest records no per-section coverage (trained/total), so its "
                               "filler cannot be told from its training"]
    missing_section = {**_manifest(), "coverage": {"Opcodes": {"trained": 60, "total": 68, "filler": []}}}
    assert judge(missing_section, None, GATE).reasons == ["coverage: Types: no trained/total counts in the manifest",
                                                          "coverage: Arguments: no trained/total counts in the "
                                                          "manifest"]
    assert not judge(m, None, OPEN).passed, "even the open gate wants to see coverage"


@pytest.mark.parametrize(("rule", "worse"), [("mrr", {"mrr": 0.418}), ("hits_at_10", {"hits": 0.8}),
                                             ("analogy", {"analogy": 0.4})])
def test_metrics_not_worse_than_latest_beyond_the_tolerance(rule: str, worse: dict) -> None:
    latest = _manifest("old", mrr=0.619)
    verdict = judge(_manifest("new", **worse), latest, GATE)
    assert _failed(verdict) == {rule}
    assert verdict.reasons[0].startswith(f"{rule}: ") and "worse than the tolerance 0.05" in verdict.reasons[0]
    assert judge(_manifest("new", **worse), latest, OPEN).passed


def test_a_missing_metric_fails_only_when_latest_has_it() -> None:
    assert judge(_manifest("new", analogy=None), _manifest("old"), GATE).reasons == [
        "analogy: none recorded, latest old has 0.500"]
    verdict = judge(_manifest("new"), _manifest("old", analogy=None), GATE)
    assert verdict.passed and any("latest old has no analogy recorded" in c.detail for c in verdict.checks)


def test_settings_declare_the_gate_with_environment_overrides(tmp_path: Path) -> None:
    gate = gate_from_settings(load_settings(env={}))
    assert gate.floors[("ir", "Opcodes")] == 0.4 and gate.floors[("mir", "VirtualRegisters")] == 0.0
    assert gate.tolerances == {"mrr": 0.05, "hits_at_10": 0.05, "analogy": 0.05}
    env = {"MLGO_FARM_GATE_MIN_IR_TYPES": "0.75", "MLGO_FARM_GATE_ANALOGY_TOLERANCE": "0"}
    gate = gate_from_settings(load_settings(env=env))
    assert gate.floors[("ir", "Types")] == 0.75 and gate.tolerances["analogy"] == 0.0
    toml = tmp_path / "farm.toml"
    toml.write_text("[gate]\nmin_mir_opcodes = 0.02\nmrr_tolerance = 0.1\n")
    gate = gate_from_settings(load_settings(toml, env={}))
    assert gate.floors[("mir", "Opcodes")] == 0.02 and gate.tolerances["mrr"] == 0.1
    for bad, message in ((("MLGO_FARM_GATE_MIN_IR_TYPES", "1.5"), "a fraction is 0..1, got 1.5"),
                         (("MLGO_FARM_GATE_MRR_TOLERANCE", "-0.1"), "must not be negative"),
                         (("MLGO_FARM_GATE_MIN_IR_OPCODES", "half"), "expected a number")):
        with pytest.raises(FarmError, match=message):
            load_settings(env=dict([bad]))
    assert gate_from_settings(load_settings(env={})).policy_size, "IR waits for its policy's size check by default"
    assert not gate_from_settings(load_settings(env={"MLGO_FARM_GATE_POLICY_SIZE": "false"})).policy_size
    toml.write_text("[gate]\nmin_ir_types = \"high\"\n")
    with pytest.raises(FarmError, match=r"\[gate\] min_ir_types: expected float"):
        load_settings(toml, env={})


# --- publish and promote with the gate, on the embedded store ---------------------------------------------------


def _low_coverage(salt: int) -> tuple[bytes, dict]:
    data = handmade_vocab(salt=salt)
    m = handmade_manifest(data, farm_key())
    m["coverage"] = {**m["coverage"], "Opcodes": {"trained": 1, "total": 68, "filler": ["Switch"]}}
    return data, {**sign(data, {k: v for k, v in m.items() if k != "validation"}, farm_key()),
                  "validation": m["validation"]}


def test_a_failing_version_is_listed_as_a_candidate_and_latest_stays(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store")
    first = _publish(store, 1, T0)
    assert first["state"] == "latest" and first["latest"] == first["version"]
    pointer = store.get("vocab/ir/latest.json")
    worse = _publish(store, 2, T0 + DAY, mrr=0.2)
    assert worse["created"] and worse["state"] == "candidate" and worse["latest"] == first["version"]
    assert worse["gate"]["reasons"] == ["mrr: 0.200 vs latest 0.500 (worse than the tolerance 0.05)"]
    assert worse["gate"]["against"] == first["version"]
    data, m = _low_coverage(3)
    thin = pub.publish(store, data, m, when=T0 + 2 * DAY, gate=GATE)
    assert thin["state"] == "candidate" and thin["gate"]["reasons"] == [
        "coverage: Opcodes 1/68 trained (1.5%) below the floor 50.0%"]
    assert store.get("vocab/ir/latest.json") == pointer, "latest did not move"
    assert assert_consistent(store) == [first["version"], worse["version"], thin["version"]]
    index = {v["version"]: v for v in VOCABULARIES.read_index(store)}
    assert [index[v]["state"] for v in (first["version"], worse["version"], thin["version"])] == [
        "latest", "candidate", "candidate"]
    assert index[thin["version"]]["coverage"]["Opcodes"] == {"trained": 1, "total": 68}, "counts; names in manifest"
    assert index[worse["version"]]["gate"]["reasons"] == worse["gate"]["reasons"]
    assert pub.summary(worse) == (f"ir {worse['version']} (published as a candidate, latest stays at "
                                  f"{first['version']}: mrr: 0.200 vs latest 0.500 (worse than the tolerance 0.05))")
    again = _publish(store, 2, T0 + 3 * DAY, mrr=0.2)
    assert again == {**worse, "created": False}, "republishing a candidate keeps its verdict and latest"
    better = _publish(store, 4, T0 + 4 * DAY, mrr=0.55)
    assert better["state"] == "latest" and better["gate"]["against"] == first["version"]
    assert {v["version"]: v["state"] for v in VOCABULARIES.read_index(store)}[first["version"]] == "superseded"


def test_no_latest_at_all_while_only_candidates_are_published(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store")
    data, m = _low_coverage(1)
    result = pub.publish(store, data, m, when=T0, gate=GATE)
    assert result["state"] == "candidate" and result["latest"] is None
    assert VOCABULARIES.read_latest(store, "ir") is None
    assert "latest stays at none" in pub.summary(result)
    # nothing is latest, and the one line says which candidate waits, why, and how to make it latest anyway
    with pytest.raises(InputError, match=rf"no ir vocabulary is latest in file://.*; the newest candidate "
                                         rf"{result['version']} was held back \(coverage: .*vocab promote ir"):
        VOCABULARIES.resolve(store, "ir", "latest")


def test_cli_promote_and_the_gate_in_publish_output(capsys: pytest.CaptureFixture,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from farm.cli import main
    from farm.objectstore import store_from_settings

    monkeypatch.setenv("MLGO_FARM_GATE_POLICY_SIZE", "false")  # about the metric rules and promote

    store = store_from_settings()
    first = _publish(store, 1, T0, gate=gate_from_settings())
    worse = _publish(store, 2, T0 + DAY, gate=gate_from_settings(), mrr=0.3)
    assert worse["state"] == "candidate"
    assert main(["vocab", "promote", "ir", worse["version"], "--reason", "the new corpus is the right one"]) == 0
    assert capsys.readouterr().out.strip() == f"ir {worse['version']} is latest (was {first['version']})"
    assert VOCABULARIES.resolve(store, "ir", "latest") == worse["version"]
    entry = next(v for v in VOCABULARIES.read_index(store) if v["version"] == worse["version"])
    assert entry["promoted"]["reason"] == "the new corpus is the right one" and entry["promoted"]["by"]
    assert main(["vocab", "promote", "ir", "20260101-x-ir-d4-000000000000", "--reason", "r"]) == 2
    assert capsys.readouterr().err == (f"mlgo-farm: error: no ir vocabulary version 20260101-x-ir-d4-000000000000 "
                                       f"is listed in {store.url}\n")
    with pytest.raises(SystemExit) as e:
        main(["vocab", "promote", "ir", first["version"]])
    assert e.value.code == 2, "--reason is required"


def test_the_nightly_retrain_does_not_train_a_candidates_dataset_again() -> None:
    """The beat task sees the newest dataset already gave a candidate: no chain is started (no broker is
    running here, so starting one would fail the call)."""
    from farm.objectstore import store_from_settings
    from pipeline import scheduled_retrain

    store = store_from_settings()
    _publish(store, 1, T0, dataset="ir-00000000000000aa")
    worse = _publish(store, 2, T0 + DAY, dataset="ir-00000000000000bb", mrr=0.1)
    assert worse["state"] == "candidate"
    store.put("datasets/ir/latest.json", json.dumps({"id": "ir-00000000000000bb"}).encode())
    assert scheduled_retrain("ir") == {"kind": "ir", "status": "candidate", "dataset_id": "ir-00000000000000bb",
                                       "versions": [worse["version"]]}
    store.put("datasets/ir/latest.json", json.dumps({"id": "ir-00000000000000aa"}).encode())
    assert scheduled_retrain("ir")["status"] == "unchanged"


# --- the policy_size rule: pending at publish, settled by the policy's size check ---------------------------------

def test_policy_size_is_pending_for_ir_only_and_settles_purely() -> None:
    verdict = judge(_manifest(), None, WAITS)
    assert not verdict.passed and verdict.pending == ["policy_size"]
    assert verdict.reasons == ["policy_size: waiting for the size check of the policy retrained with it"]
    assert judge(_manifest(kind="mir", coverage={"Opcodes": (50, 68)}), None, WAITS).pending == []
    record = verdict.to_dict()
    assert awaits_only(record, "policy_size") and not awaits_only(record, "mrr") and not awaits_only(None, "x")
    thin = judge(_manifest(coverage={"Opcodes": (1, 68), "Types": (6, 12), "Arguments": (25, 30)}), None, WAITS)
    assert not awaits_only(thin.to_dict(), "policy_size"), "failing a rule of its own: not merely waiting"
    ok = settled(record, Check("policy_size", True, "zlib .text -0.10%"))
    assert ok["passed"] and ok["pending"] == [] and ok["reasons"] == []
    bad = settled(record, Check("policy_size", False, "zlib .text +0.40%"))
    assert not bad["passed"] and bad["reasons"] == ["policy_size: zlib .text +0.40%"] and bad["pending"] == []
    assert record["pending"] == ["policy_size"], "pure: the record given is unchanged"
    with pytest.raises(KeyError):
        settled(ok, Check("policy_size", True, "again"))




# --- the policy_size rule settled: the new vocabulary's policy against the in-force vocabulary's policy -----------

def _policy(version: str, vocab: str, **ratios: float) -> dict:
    """A policy manifest with what the rule reads: its held-out table (policyhost/release.py), a row a package."""
    return {"version": version, "vocab_version": vocab,
            "metrics": {"heldout": [{"package": p, "ratio": 1.5, "shipped": {"ratio": r}} for p, r in ratios.items()]}}


def test_a_vocabulary_whose_policy_is_not_worse_passes_although_neither_beats_the_heuristic() -> None:
    from vocabgen.gate import policy_not_worse

    # the demo's numbers: neither policy beats the heuristic, the new one is within the tolerance of the old
    new, old = _policy("P2", "V2", zlib=1.0, bzip2=1.0021), _policy("P1", "V1", zlib=1.0, bzip2=1.0)
    check = policy_not_worse("V2", new, "V1", old, 0.5)
    assert check.ok and check.rule == "policy_size" and not check.pending
    assert "held-out geomean 1.0010x vs 1.0000x for policy P1 trained with V1" in check.detail
    assert "bzip2 1.0021x vs 1.0000x" in check.detail and "not worse than it by the tolerance 0.5%" in check.detail
    record = settled(judge(_manifest(), _manifest("V1"), WAITS).to_dict(), check)
    assert record["passed"] and record["reasons"] == [], "its own rules held: it may become latest"


def test_a_vocabulary_whose_policy_is_worse_than_the_in_force_ones_is_held_back() -> None:
    from vocabgen.gate import policy_not_worse

    new, old = _policy("P2", "V2", zlib=1.02, bzip2=1.0), _policy("P1", "V1", zlib=0.99, bzip2=0.99)
    check = policy_not_worse("V2", new, "V1", old, 0.5)
    assert not check.ok and "held-out geomean 1.0100x vs 0.9900x" in check.detail and "worse than it" in check.detail
    record = settled(judge(_manifest(), _manifest("V1"), WAITS).to_dict(), check)
    assert not record["passed"] and record["reasons"] == [f"policy_size: {check.detail}"]
    # compared on the packages both recorded only; a package without a ratio (failed compiles) is left out
    old["metrics"]["heldout"].append({"package": "lz4", "ratio": 0.5, "shipped": {"ratio": 0.5}})
    new["metrics"]["heldout"].append({"package": "cjson", "ratio": None, "shipped": {"ratio": None}})
    assert policy_not_worse("V2", new, "V1", old, 0.5).detail == check.detail
    assert not policy_not_worse("V2", _policy("P2", "V2"), "V1", old, 0.5).ok, "no table, the in-force one has one"


def test_with_nothing_in_force_the_vocabularys_own_checks_decide() -> None:
    from vocabgen.gate import policy_not_worse

    lost = _policy("P2", "V2", zlib=1.05)  # loses to the heuristic: the policy's own gate, not the vocabulary's
    for check in (policy_not_worse("V2", lost, None, None, 0.5), policy_not_worse("V2", lost, "V1", None, 0.5),
                  policy_not_worse("V2", lost, "V1", _policy("P1", "V1"), 0.5),
                  policy_not_worse("V2", lost, "V1", _policy("P1", "V1", bzip2=0.9), 0.5)):
        assert check.ok and "its own checks decide" in check.detail, check
    assert policy_not_worse("V2", lost, None, None, 0.5).detail == "no IR vocabulary in force: its own checks decide"
    # so the verdict is the vocabulary's own: it passes with them, and fails with one of its own failing
    assert settled(judge(_manifest(), None, WAITS).to_dict(), policy_not_worse("V2", lost, None, None, 0.5))["passed"]
    thin = judge(_manifest(coverage={"Opcodes": (1, 68), "Types": (6, 12), "Arguments": (25, 30)}), None, WAITS)
    assert not settled(thin.to_dict(), policy_not_worse("V2", lost, None, None, 0.5))["passed"]


def test_no_policy_trained_holds_back_only_when_another_vocabulary_is_in_force() -> None:
    """A retrain that failed (time limit, bad input) is no evidence either way: the vocabulary in force stays."""
    from vocabgen.gate import no_policy_trained

    why = "the training passed its time limit"
    held = no_policy_trained("V2", "V1", why)
    assert not held.ok and held.detail == f"no policy could be trained with it: {why}; V1 stays in force"
    for in_force in (None, "V2"):  # nothing in force, or it was promoted by hand meanwhile
        free = no_policy_trained("V2", in_force, why)
        assert free.ok and why in free.detail and "its own checks decide" in free.detail
    assert settled(judge(_manifest(), None, WAITS).to_dict(), no_policy_trained("V2", None, why))["passed"]
    assert not settled(judge(_manifest(), None, WAITS).to_dict(), held)["passed"]


def test_the_policy_tolerance_is_the_gates_size_tolerance() -> None:
    assert gate_from_settings(load_settings(env={})).policy_tolerance == 0.5
    env = {"MLGO_FARM_GATE_POLICY_SIZE_TOLERANCE": "1.5"}
    assert gate_from_settings(load_settings(env=env)).policy_tolerance == 1.5
