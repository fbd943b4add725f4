"""MIR entities the triplets never mention, composed from their parts (vocabgen/compose.py); IR untouched."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from farm.vocabfile import dumps
from tests.vocabgen.conftest import TINY
from vocabgen import layout
from vocabgen.build import train_vocabulary
from vocabgen.cli import _composed
from vocabgen.compose import NO_TRAINED_CLASS, NO_TRAINED_PART, NOT_AN_OPCODE, compose, unreachable, with_parts
from vocabgen.dataset import load_dataset
from vocabgen.training import train_all


def test_compose_is_the_normalised_median_or_mean_of_part_minus_relation() -> None:
    vectors = np.array([[0, 0, 0], [1, 0, 0], [0, 2, 0], [3, 3, 1]], dtype=np.float32)
    relations = np.array([[0, 0, 1], [1, 1, 0]], dtype=np.float32)
    parts = [(0, 1), (1, 2), (0, 3)]  # p - r: (1, 0, -1), (-1, 1, 0), (3, 3, 0)
    median = np.array([1, 1, 0]) / np.sqrt(2)
    mean = np.array([1, 4 / 3, -1 / 3]) / np.linalg.norm([1, 4 / 3, -1 / 3])
    assert np.allclose(compose(vectors, relations, parts, norm=1), median, atol=1e-6)
    assert np.allclose(compose(vectors, relations, parts, norm=2), mean, atol=1e-6)
    one = compose(vectors, relations, [(1, 3)], norm=1)
    assert np.allclose(one, np.array([2, 2, 1]) / 3, atol=1e-6), "one part: its p - r on the unit sphere"


def test_part_triplets_come_after_the_dataset_for_mentioned_opcodes_only(mir_dataset: Path) -> None:
    ds = load_dataset(mir_dataset)
    ext = with_parts(ds)
    n, nr = len(ds.entities), len(ds.relations)
    assert ext.ds.entities[:n] == ds.entities and ext.ds.relations[:nr] == ds.relations
    assert np.array_equal(ext.ds.triples[: len(ds.triples)], ds.triples)
    added = ext.ds.triples[len(ds.triples):]
    assert len(added) == ext.part_triples > 0
    assert (added[:, 2] >= nr).all() and (added[:, 1] >= n).all(), "new relations, part entities after LLVM's"
    assert set(added[:, 0].tolist()) <= set(ds.trained_entities.tolist())
    assert all(name.split(":", 1)[0] in {r[3:] for r in ext.ds.relations[nr:]} for name in ext.ds.entities[n:])
    assert set(np.unique(added[:, 1]).tolist()) == set(range(n, len(ext.ds.entities))), "every part is trained"


def test_unseen_opcodes_are_composed_and_the_counts_add_up(mir_dataset: Path) -> None:
    ds = load_dataset(mir_dataset)
    data, m = train_vocabulary(ds, TINY, key=b"k" * 32)
    vocab = json.loads(data)
    cov, comp = m["coverage"], m["composition"]
    assert list(cov) == list(layout.SECTIONS["mir"])
    for section, c in cov.items():
        assert c["trained"] + c["composed"] + len(c["filler"]) == c["total"] == len(vocab[section])
        reasons = comp["filler_reasons"].get(section, {})
        assert sorted(k for names in reasons.values() for k in names) == sorted(c["filler"])
        if section == "CommonOperands":  # no parts: filler, with the reason of unreachable.toml where it has one
            assert c["composed"] == 0 and set(reasons) <= {NOT_AN_OPCODE, *unreachable()[section].values()}
        elif section != "Opcodes":
            assert c["composed"] > 0 and set(reasons) <= {NO_TRAINED_CLASS, *unreachable()[section].values()}, section
    assert set(comp["filler_reasons"]["Opcodes"]) == {NO_TRAINED_PART}
    # a register class trained in one register section is composed in the other, from the class they share
    phys, virt = (set(vocab[s]) - set(cov[s]["filler"]) - set(cov[s]["composed_keys"])
                  for s in ("PhysicalRegisters", "VirtualRegisters"))
    assert phys - virt and (phys - virt) <= set(cov["VirtualRegisters"]["composed_keys"])
    assert virt - phys and (virt - phys) <= set(cov["PhysicalRegisters"]["composed_keys"])
    assert cov["Opcodes"]["composed"] > 0
    assert sum(c["trained"] for c in cov.values()) == len(ds.trained_entities)
    assert not any(k.split(":")[0] in {"Base", "Form", "Type"} for s in vocab.values() for k in s), \
        "parts are not written into LLVM's sections"

    # an opcode no triple mentions, sharing a part with one that is: its vector is the formula's
    ext = with_parts(ds)
    trained = set(ds.trained_entities.tolist())
    opcodes = {i for i, (section, _) in enumerate(layout.placement("mir", ds.entities)) if section == "Opcodes"}
    unseen = next(i for i, ps in ext.parts.items() if i not in trained and ps and i in opcodes)
    key = ds.entities[unseen]
    assert key not in cov["Opcodes"]["filler"]
    res = train_all(ext.ds, TINY.resolved("mir"))  # one thread, same seed: the same training
    want = compose(res.vectors, res.relations, ext.parts[unseen], TINY.norm)
    assert np.allclose(vocab["Opcodes"][key], want, atol=2e-6)
    assert abs(np.linalg.norm(vocab["Opcodes"][key]) - 1) < 1e-4, "on the unit sphere like trained vectors"
    mean = np.mean([vocab["Opcodes"][ds.entities[i]] for i in trained if i in opcodes], axis=0)
    assert not np.allclose(vocab["Opcodes"][key], mean, atol=1e-3), "not the section mean"
    assert m["filler_policy"] != layout.UNSEEN_POLICY and comp["parts"] == len(ext.ds.entities) - len(ds.entities)


def test_ir_vocabulary_is_unchanged(ir_dataset: Path) -> None:
    """IR has no parts: the bytes are those of training the dataset alone, section means for the rest."""
    ds = load_dataset(ir_dataset)
    data, m = train_vocabulary(ds, TINY, key=b"k" * 32)
    p = TINY.resolved("ir")
    vectors, coverage = layout.fill_unseen("ir", ds.entities, train_all(ds, p).vectors, ds.trained_entities)
    assert data == dumps(layout.build_vocab("ir", ds.entities, vectors))
    assert m["coverage"] == coverage and "composition" not in m and m["filler_policy"] == layout.UNSEEN_POLICY


@pytest.mark.parametrize(("coverage", "shown"), [
    (None, "-"),
    ({"Opcodes": {"trained": 5, "total": 9}}, "-"),
    ({"Opcodes": {"trained": 5, "composed": 3, "total": 9}, "CommonOperands": {"trained": 2, "composed": 0,
                                                                                 "total": 4}}, "Opcodes 3"),
    ({"Opcodes": {"trained": 9, "composed": 0, "total": 9}}, "0"),
])
def test_vocab_list_composed_column(coverage, shown: str) -> None:
    assert _composed(coverage) == shown


def test_version_page_shows_composed_counts_and_filler_reasons(tmp_path: Path) -> None:
    from farm.config import load_settings
    from farm.objectstore import FileStore
    from master.dashboard.app import create_app
    from tests.master.test_dashboard import V2, populate

    populate(tmp_path / "store")
    key = tmp_path / "store" / "vocab" / "ir" / V2 / "manifest.json"
    m = json.loads(key.read_text())
    m["coverage"] = {"Opcodes": {"trained": 5, "composed": 40, "total": 50, "filler": ["AAA", "CPUID"]},
                     "Types": {"trained": 3, "total": 4, "filler": ["X"]}}
    m["composition"] = {"formula": "normalize(median_k(part_k - HasX_k))", "parts": 12,
                        "relations": ["HasBase", "HasForm"], "filler_reasons": {"Opcodes": {NO_TRAINED_PART: [
                            "AAA", "CPUID"]}, "Types": {NOT_AN_OPCODE: ["X"]}}}
    key.write_text(json.dumps(m))
    c = create_app(load_settings(), store=FileStore(tmp_path / "store"), history=tmp_path / "h.sqlite").test_client()
    page = c.get(f"/vocab/ir/{V2}/").get_data(as_text=True)
    assert '<td class="num composed">40</td>' in page and '<td class="num composed">-</td>' in page
    assert f"2: {NO_TRAINED_PART}" in page and 'id="composition"' in page and "HasBase, HasForm" in page


def test_a_warm_start_covers_llvm_rows_and_leaves_parts_random(mir_dataset: Path) -> None:
    import dataclasses

    from vocabgen.warm import WarmStart

    ds = load_dataset(mir_dataset)
    p = dataclasses.replace(TINY, warm_epochs=2)
    known = np.zeros(len(ds.entities), bool)
    known[ds.trained_entities[:5]] = True
    warm = WarmStart(np.full((len(ds.entities), 8), 0.25, np.float32), known, {"from": "v", "entities": 5})
    ext = with_parts(ds).warm(warm)
    assert ext.vectors.shape[0] == len(with_parts(ds).ds.entities) and ext.known.sum() == 5
    _, m = train_vocabulary(ds, p, key=b"k" * 32, warm=warm)
    assert m["warm_start"] == warm.record and m["coverage"]["Opcodes"]["composed"] > 0


def test_the_unreachable_table_is_checked_and_names_the_bad_key(tmp_path: Path) -> None:
    from farm.errors import InputError

    table = unreachable()
    assert set(table) <= set(layout.SECTIONS["mir"]) and "TargetIndex" in table["CommonOperands"]
    bad = tmp_path / "bad.toml"
    bad.write_text('[CommonOperands]\nTargetIndex = ""\n')
    with pytest.raises(InputError, match=r"bad.toml: \[CommonOperands\] TargetIndex must be a non-empty reason"):
        unreachable(bad)
    bad.write_text('[Operands]\nTargetIndex = "x"\n')
    with pytest.raises(InputError, match=r"\[Operands\] is not a MIR section"):
        unreachable(bad)
    bad.write_text('CommonOperands = "x"\n')
    with pytest.raises(InputError, match=r"\[CommonOperands\] must be a table"):
        unreachable(bad)


@pytest.mark.parametrize(("text", "said"), [
    (b'[CommonOperands]\nTargetIndex = "\xff"\n', r"not UTF-8 text \(invalid start byte at byte 32\)"),
    (b"[CommonOperands]\nTargetIndex = " + b"[" * 5000 + b"]" * 5000 + b"\n", r"nested too deeply"),
    (b"[CommonOperands]\nTargetIndex = " + b"9" * 5000 + b"\n", r"integer string conversion: value has 5000 digits"),
    (b"[CommonOperands]\nTargetIndex = 99999999999999999999\n", r"TargetIndex: .*beyond TOML's 64 bits"),
    (b"[CommonOperands]\nTargetIndex = 3\n", r"\[CommonOperands\] TargetIndex must be a non-empty reason"),
])
def test_hostile_unreachable_table_is_one_line_naming_the_key(tmp_path: Path, text: bytes, said: str) -> None:
    """It was read with tomllib directly: bytes that are not UTF-8, deep arrays and huge integers were tracebacks
    (UnicodeDecodeError, RecursionError, ValueError); now the farm's one TOML reader (farm/datafile.py)."""
    from farm.errors import InputError

    bad = tmp_path / "hostile.toml"
    bad.write_bytes(text)
    with pytest.raises(InputError) as e:
        unreachable(bad)
    [line] = str(e.value).splitlines()
    assert line.startswith(f"unreachable table {bad}: ") and re.search(said, line), line
