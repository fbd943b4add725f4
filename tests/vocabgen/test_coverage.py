"""Coverage per section (trained / total / filler) in the trained manifest, signed, and as `vocab show` and
`vocab list` print it; the compare predicates trained through the farm's predicate triplets."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from farm.cli import main
from farm.signing import verify
from tests.vocabgen.conftest import TINY
from vocabgen import layout
from vocabgen.build import train_vocabulary
from vocabgen.dataset import load_dataset

NAMES = ["Ret", "Br", "Add", "FloatTy", "IntegerTy", "Function", "Variable", "ICMP_eq", "ICMP_ne"]
VERSION = "20261123-llvm22.1.8-ir-d8-0123456789ab"


def test_fill_unseen_reports_each_section() -> None:
    vectors = np.arange(len(NAMES) * 2, dtype=np.float32).reshape(len(NAMES), 2)
    trained = np.array([0, 2, 4, 6, 7])  # Ret, Add, IntegerTy, Variable, ICMP_eq
    out, coverage = layout.fill_unseen("ir", NAMES, vectors, trained)
    assert coverage == {
        "Opcodes": {"trained": 2, "total": 3, "filler": ["Br"]},
        "Types": {"trained": 1, "total": 2, "filler": ["FloatTy"]},
        "Arguments": {"trained": 2, "total": 4, "filler": ["Function", "ICMP_ne"]},
    }
    assert np.allclose(out[1], vectors[[0, 2]].mean(axis=0))
    assert layout.coverage_line(coverage, "ir") == "IR Opcodes 2/3 trained, Types 1/2, Arguments 2/4"


@pytest.mark.parametrize("old", [None, {}, {"policy": "section-mean", "trained": 40, "unseen_by_section": {}}])
def test_a_manifest_without_coverage_reads_as_unknown(old) -> None:
    assert layout.coverage_line(old, "mir") == "MIR coverage ?"


def test_trained_manifest_has_signed_coverage_and_trains_the_predicates(ir_dataset: Path) -> None:
    ds = load_dataset(ir_dataset)
    data, m = train_vocabulary(ds, TINY, key=b"k" * 32)
    cov = m["coverage"]
    assert list(cov) == ["Opcodes", "Types", "Arguments"]
    assert sum(c["total"] for c in cov.values()) == len(ds.entities)
    assert sum(c["trained"] for c in cov.values()) == len(ds.trained_entities)
    assert all(c["trained"] + len(c["filler"]) == c["total"] for c in cov.values())
    # the test corpus compares ints and floats: with the farm's predicate triplets those predicates are trained
    assert "Predicate" in ds.relations
    assert "ICMP_slt" not in cov["Arguments"]["filler"] and "FCMP_olt" not in cov["Arguments"]["filler"]
    vocab = json.loads(data)
    assert vocab["Arguments"]["ICMP_slt"] != vocab["Arguments"]["FCMP_olt"], "trained, not one filler vector"
    verify(data, m, b"k" * 32)
    forged = {**m, "coverage": {**cov, "Opcodes": {**cov["Opcodes"], "filler": []}}}
    with pytest.raises(Exception, match="signature does not match"):
        verify(data, forged, b"k" * 32)


def _store():
    from farm.objectstore import store_from_settings

    return store_from_settings()


def _manifest(coverage) -> dict:
    return {"kind": "ir", "version": VERSION, "sha256": "0" * 64, "dimension": 8, "coverage": coverage}


def test_show_prints_coverage_and_filler_beside_the_json(capsys: pytest.CaptureFixture) -> None:
    filler = [f"Op{i}" for i in range(45)]
    coverage = {"Opcodes": {"trained": 23, "total": 68, "filler": filler},
                "Types": {"trained": 12, "total": 12, "filler": []}}
    _store().put(f"vocab/ir/{VERSION}/manifest.json", json.dumps(_manifest(coverage)).encode())
    assert main(["vocab", "show", "--kind", "ir", "--version", VERSION]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["coverage"] == coverage, "stdout stays the manifest as JSON"
    lines = err.splitlines()
    assert lines[0] == f"{VERSION}: IR Opcodes 23/68 trained, Types 12/12"
    assert lines[1].startswith("  filler in Opcodes (45, the section's mean vector, never trained): Op0, Op1,")
    assert "Op39" in lines[1] and "Op40" not in lines[1] and "and 5 more (coverage.Opcodes.filler)" in lines[1]
    assert len(lines) == 2, "a section without filler prints no filler line"


def test_show_of_an_old_manifest_says_unknown(capsys: pytest.CaptureFixture) -> None:
    _store().put(f"vocab/ir/{VERSION}/manifest.json", json.dumps(_manifest(None)).encode())
    assert main(["vocab", "show", "--kind", "ir", "--version", VERSION]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"{VERSION}: IR coverage ?" and "made before coverage was recorded" in err[1]


def test_list_shows_coverage_or_a_question_mark(capsys: pytest.CaptureFixture) -> None:
    from farm.artifacts.kinds import VOCAB

    base = {"kind": "ir", "dimension": 8, "dataset_id": "ir-0", "published_at": "2026-11-23T00:00:00Z",
            "sha256": "0" * 64}
    new = {**base, "version": VERSION, "coverage": {"Opcodes": {"trained": 57, "total": 68, "filler": ["X"]},
                                                    "Types": {"trained": 6, "total": 12}}}
    old = {**base, "version": VERSION.replace("0123", "9999")}
    _store().put(VOCAB.index_key, json.dumps({"format": 1, "versions": [new, old]}).encode())
    assert main(["vocab", "list"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert "COVERAGE" in rows[0]
    assert rows[1].split()[1] == VERSION and rows[1].endswith("Opcodes 57/68, Types 6/12")
    assert rows[2].endswith("coverage ?")
