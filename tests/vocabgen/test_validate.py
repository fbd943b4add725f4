"""Validation with the real llvm-ir2vec: good vocabularies pass, each kind of bad one fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from tests.vocabgen.conftest import TINY
from vocabgen.build import train_vocabulary
from vocabgen.dataset import load_dataset
from vocabgen.validate import validate_vocab
from vocabgen.vocabfile import ValidationError, sha256


@pytest.fixture(scope="module")
def ir_vocab(ir_dataset: Path) -> dict:
    data, _ = train_vocabulary(load_dataset(ir_dataset), TINY)
    return json.loads(data)


def _write(tmp_path: Path, vocab: dict | str) -> Path:
    p = tmp_path / "vocab.json"
    p.write_text(vocab if isinstance(vocab, str) else json.dumps(vocab))
    return p


def test_trained_ir_vocabulary_passes(ir_vocab: dict, toolchain: Toolchain, tmp_path: Path) -> None:
    path = _write(tmp_path, ir_vocab)
    report = validate_vocab("ir", path, toolchain)
    assert report["ok"] and report["dimension"] == 8
    assert report["sha256"] == sha256(path.read_bytes()), "the report names the exact bytes it validated"
    assert report["llvm_read_back"] == report["llvm_entities"] == sum(len(s) for s in ir_vocab.values())
    assert report["samples"][0]["functions"] >= 5


def test_trained_mir_vocabulary_passes(mir_dataset: Path, toolchain: Toolchain, tmp_path: Path) -> None:
    data, _ = train_vocabulary(load_dataset(mir_dataset), TINY)
    report = validate_vocab("mir", _write(tmp_path, data.decode()), toolchain)
    assert report["ok"] and report["llvm_entities"] > 1000
    sample = report["samples"][0]
    # LLVM 22.1 crashes on functions using $mxcsr; those are listed, the rest must embed.
    assert sample["functions"] >= 1 and set(sample["llvm_crashed"]) <= {"norm2", "average"}


def _mutations(vocab: dict):
    nan = json.dumps(vocab).replace(json.dumps(vocab["Opcodes"]["Ret"]), "[NaN" + ", 0.0" * 7 + "]", 1)
    yield nan, "NaN/Inf"
    short = json.loads(json.dumps(vocab))
    short["Types"]["IntegerTy"] = short["Types"]["IntegerTy"][:3]
    yield short, "dimension 3, expected 8"
    missing = json.loads(json.dumps(vocab))
    del missing["Arguments"]["ICMP_eq"]
    yield missing, "1 LLVM entities of Arguments have no vector: ICMP_eq"
    no_section = {k: v for k, v in vocab.items() if k != "Types"}
    yield no_section, "missing Types"
    zeros = {s: {k: [0.0] * 8 for k in keys} for s, keys in vocab.items()}
    yield zeros, "LLVM gave zero embeddings"
    wrong_section = json.loads(json.dumps(vocab))
    wrong_section["Types"]["Ret"] = wrong_section["Opcodes"].pop("Ret")
    yield wrong_section, "have no vector: Ret"
    yield "{not json", "not valid JSON"


def test_each_defect_fails_validation(ir_vocab: dict, toolchain: Toolchain, tmp_path: Path) -> None:
    for bad, message in _mutations(ir_vocab):
        with pytest.raises(ValidationError, match=message):
            validate_vocab("ir", _write(tmp_path, bad), toolchain)
