"""Validation with the real llvm-ir2vec: good vocabularies pass, each kind of bad one fails."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from farm.vocabfile import MAX_ABS, ValidationError, sha256
from tests.vocabgen.conftest import TINY
from vocabgen.build import train_vocabulary
from vocabgen.dataset import load_dataset
from vocabgen.validate import check_finite, parse_embeddings, validate_vocab


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
    unknown = json.loads(json.dumps(vocab))
    unknown["Opcodes"]["Frobnicate"] = unknown["Opcodes"]["Ret"]
    yield unknown, "1 entities of Opcodes are unknown to LLVM: Frobnicate"
    no_section = {k: v for k, v in vocab.items() if k != "Types"}
    yield no_section, "missing Types"
    zeros = {s: {k: [0.0] * 8 for k in keys} for s, keys in vocab.items()}
    yield zeros, "LLVM gave zero embeddings"
    wrong_section = json.loads(json.dumps(vocab))
    wrong_section["Types"]["Ret"] = wrong_section["Opcodes"].pop("Ret")
    yield wrong_section, "have no vector: Ret"
    yield "{not json", "invalid JSON"


def test_each_defect_fails_validation(ir_vocab: dict, toolchain: Toolchain, tmp_path: Path) -> None:
    for bad, message in _mutations(ir_vocab):
        with pytest.raises(ValidationError, match=message):
            validate_vocab("ir", _write(tmp_path, bad), toolchain)


def _scaled(vocab: dict, value: float) -> dict:
    """Every entity LLVM knows, every component `value`: valid JSON, finite, complete."""
    return {s: {k: [value] * len(v) for k, v in entries.items()} for s, entries in vocab.items()}


@pytest.mark.parametrize("value", [1e308, -1e308])
def test_a_vocabulary_llvm_embeds_as_infinite_fails(ir_vocab: dict, toolchain: Toolchain, tmp_path: Path,
                                                     value: float) -> None:
    """Each value is finite, but LLVM's sums over a function's instructions are not."""
    path = _write(tmp_path, _scaled(ir_vocab, value))
    with pytest.raises(ValidationError, match=r"^LLVM gives infinite embeddings with this vocabulary \(\w+") as e:
        validate_vocab("ir", path, toolchain)
    assert "\n" not in str(e.value)


def test_magnitudes_no_trainer_gives_fail(ir_vocab: dict, toolchain: Toolchain, tmp_path: Path) -> None:
    """1e30 everywhere is finite for LLVM's doubles, and still no vocabulary any trainer makes."""
    with pytest.raises(ValidationError, match=r"holds a value of magnitude 1e\+30, beyond 10: no trainer gives such "
                                              r"values \(TransE's are at most 1\)$"):
        validate_vocab("ir", _write(tmp_path, _scaled(ir_vocab, 1e30)), toolchain)
    one = json.loads(json.dumps(ir_vocab))
    one["Arguments"]["Constant"][0] = -(MAX_ABS + 0.5)
    with pytest.raises(ValidationError, match=rf"Arguments\.Constant holds a value of magnitude {MAX_ABS + 0.5:g}"):
        validate_vocab("ir", _write(tmp_path, one), toolchain)
    one["Arguments"]["Constant"][0] = -MAX_ABS
    assert validate_vocab("ir", _write(tmp_path, one), toolchain)["ok"], "the bound itself is allowed"


def test_trained_values_are_within_the_transe_bound(ir_vocab: dict) -> None:
    """The reason for MAX_ABS: TransE's entity vectors (and section means of them) have components of at most 1."""
    values = [abs(x) for entries in ir_vocab.values() for vec in entries.values() for x in vec]
    assert 0 < max(values) <= 1.0 + 1e-6 < MAX_ABS


def test_llvm_output_with_inf_and_nan_is_read_as_such() -> None:
    text = "Function: f\n [ 1.00  inf  -2.50 ]\nFunction: g\n [ -inf  0.00  0.00 ]\nFunction: h\n [ nan  -nan  1.00 ]\n"
    vectors = parse_embeddings(text)
    assert vectors["f"][:2] == [1.0, math.inf] and vectors["g"][0] == -math.inf
    assert all(math.isnan(x) for x in vectors["h"][:2])
    with pytest.raises(ValidationError, match=r"^LLVM gives infinite embeddings with this vocabulary \(f, g in m\.bc"):
        check_finite(vectors, "m.bc")
    with pytest.raises(ValidationError, match=r"^LLVM gives NaN embeddings with this vocabulary \(h in m\.bc\)"):
        check_finite({"h": vectors["h"]}, "m.bc")
    with pytest.raises(ValidationError, match=r"^unreadable vector in llvm-ir2vec embeddings output for f: \[1\.0 x"):
        parse_embeddings("Function: f\n [ 1.0 x ]\n")
