"""Loading triplet datasets made by the triplet step, and every kind of malformed input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from farm.errors import InputError
from farm.objectstore import FileStore
from farm.toolchain import Toolchain
from vocabgen.dataset import check_kind, load_dataset, resolve_dataset


def _train_lines(ds: Path) -> list[str]:
    return ds.joinpath("train2id.txt").read_text().splitlines()


def test_loads_the_triplet_steps_dataset(ir_dataset: Path, toolchain: Toolchain) -> None:
    ds = load_dataset(ir_dataset, "ir")
    lines = _train_lines(ir_dataset)
    assert ds.triples.shape == (int(lines[0]), 3)
    assert ds.triples[0].tolist() == [int(x) for x in lines[1].split("\t")]
    llvm = toolchain.run("llvm-ir2vec", ["entities"]).stdout.decode().splitlines()
    assert ds.entities == [ln.split("\t")[0] for ln in llvm[1:]]
    assert ds.relations[:2] == ["Type", "Next"]
    assert ds.id == json.loads(ir_dataset.joinpath("manifest.json").read_text())["id"]


def _rewrite_train(ds: Path, edit) -> None:
    lines = _train_lines(ds)
    ds.joinpath("train2id.txt").write_text("\n".join(edit(lines)) + "\n")
    manifest = json.loads(ds.joinpath("manifest.json").read_text())
    manifest.pop("files", None)  # corrupt content on purpose, not a checksum test
    ds.joinpath("manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda ls: [ls[0], ls[1] + "\t4", *ls[2:]], r"train2id.txt:2: expected 3 columns"),
        (lambda ls: [ls[0], ls[1], "1\tx\t0", *ls[3:]], r"train2id.txt:3: non-numeric id"),
        (lambda ls: [ls[0], "0\t100000\t1", *ls[2:]], r"train2id.txt:2: tail id 100000 out of range"),
        (lambda ls: [ls[0], "-1\t3\t1", *ls[2:]], r"train2id.txt:2: head id -1 out of range"),
        (lambda ls: [ls[0], "0\t3\t999", *ls[2:]], r"train2id.txt:2: relation id 999 out of range"),
        (lambda ls: [str(int(ls[0]) + 1), *ls[1:]], r"count line says \d+ but the file has \d+ entries"),
        (lambda ls: ["many", *ls[1:]], r"train2id.txt:1: count line 'many' is not a number"),
        (lambda ls: ["0"], r"empty dataset \(no triplets\)"),
        (lambda ls: [], r"train2id.txt: empty file"),
    ],
)
def test_malformed_train2id_is_a_clear_error(ir_copy: Path, edit, message: str) -> None:
    _rewrite_train(ir_copy, edit)
    with pytest.raises(InputError, match=message):
        load_dataset(ir_copy)


def test_checksum_and_kind_mismatches(ir_copy: Path) -> None:
    with pytest.raises(InputError, match="is a ir dataset, not mir"):
        load_dataset(ir_copy, "mir")
    with ir_copy.joinpath("entity2id.txt").open("a") as f:
        f.write("\n")  # content changed behind the manifest's back
    with pytest.raises(InputError, match=r"entity2id\.txt does not match the checksum"):
        load_dataset(ir_copy)
    m = json.loads(ir_copy.joinpath("manifest.json").read_text())
    m["kind"] = "llvm"
    ir_copy.joinpath("manifest.json").write_text(json.dumps(m))
    with pytest.raises(InputError, match="unknown vocabulary kind 'llvm'"):
        load_dataset(ir_copy)
    with pytest.raises(InputError, match="unknown vocabulary kind"):
        check_kind("x86")


def test_dataset_from_the_store_by_latest(ir_dataset: Path, tmp_path: Path) -> None:
    from workers.dataset import publish as publish_dataset

    store = FileStore(tmp_path / "store")
    dataset_id = publish_dataset(ir_dataset, store)
    ds = resolve_dataset("latest", "ir", store, tmp_path / "cache")
    assert ds.id == dataset_id
    assert np.array_equal(ds.triples, load_dataset(ir_dataset).triples)
    with pytest.raises(InputError, match="is not in"):
        resolve_dataset("ir-0000000000000000", "ir", store, tmp_path / "cache")
    with pytest.raises(InputError, match="is not a directory, nor a valid dataset id"):
        resolve_dataset("../mlgo-farm-no-such-dataset", "ir", store, tmp_path / "cache")
    with pytest.raises(InputError, match=r"invalid dataset id '\.\.etc'"):
        resolve_dataset("..etc", "ir", store, tmp_path / "cache")
    with pytest.raises(InputError, match="no mir dataset has been published"):
        resolve_dataset("latest", "mir", store, tmp_path / "cache")


def test_a_file_the_manifest_lists_but_the_directory_lacks(ir_copy: Path) -> None:
    ir_copy.joinpath("train2id.txt").unlink()
    message = r"is not a complete dataset: train2id\.txt, listed in its manifest, is missing"
    with pytest.raises(InputError, match=message):
        load_dataset(ir_copy)


def _edit_manifest(ds: Path, **fields) -> None:
    m = json.loads(ds.joinpath("manifest.json").read_text())
    m.update(fields)
    ds.joinpath("manifest.json").write_text(json.dumps(m))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"files": ["train2id.txt"]}, r'"files" must be an object of file name -> sha256 string'),
        ({"files": {"train2id.txt": 7}}, r'"files" must be an object'),
        ({"llvm": "22"}, r'"llvm" must be an object, got str'),
        ({"llvm": {"llvm_version": 22}}, r'"llvm.llvm_version" must be a string or null, got int'),
        ({"llvm": {"llvm_commit": ["abc"]}}, r'"llvm.llvm_commit" must be a string or null, got list'),
        ({"kind": ["ir"]}, r'"kind" must be a string'),
        ({"id": 12}, r"missing or invalid dataset id 12"),
    ],
)
def test_wrong_typed_manifest_fields_fail_before_training(ir_copy: Path, fields: dict, message: str) -> None:
    _edit_manifest(ir_copy, **fields)
    with pytest.raises(InputError, match=message) as e:
        load_dataset(ir_copy)
    assert "\n" not in str(e.value)


def test_train_refuses_a_wrong_typed_manifest_in_one_line(ir_copy: Path, tmp_path: Path, capsys) -> None:
    """`"llvm": "22"` used to crash only after the whole training."""
    from farm.cli import main

    _edit_manifest(ir_copy, llvm="22")
    assert main(["vocab", "train", str(ir_copy), "-o", str(tmp_path / "out"), "--epochs", "100000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f'mlgo-farm: error: {ir_copy}/manifest.json: "llvm" must be an object, got str']
    assert not (tmp_path / "out").exists()
