"""Warm start: logging the heuristic through the host, cloning it with torch, exporting to ONNX."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from farm.errors import InputError
from farm.toolchain import Toolchain
from policyhost.launcher import run_compile
from policyhost.runnable import OnnxPolicy
from policytrain import warmstart
from tests.policyhost.conftest import CSRC, VOCAB_DIM
from workers import corpus


@pytest.fixture(scope="module")
def training_corpus(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> Path:
    out = tmp_path_factory.mktemp("wscorpus") / "csrc"
    corpus.from_sources(CSRC, out, toolchain, level="Oz")
    return out


@pytest.fixture(scope="module")
def decision_log(training_corpus: Path, toolchain: Toolchain) -> warmstart.DecisionLog:
    return warmstart.collect(training_corpus, toolchain, jobs=2)


def test_log_holds_every_heuristic_decision(decision_log, training_corpus: Path, toolchain: Toolchain,
                                            tmp_path: Path) -> None:
    per_module = {}
    for m in corpus.load(training_corpus).modules:
        out = run_compile(["clang", "-Oz", "-c", str(m.bitcode), "-o", str(tmp_path / "m.o")], "heuristic",
                          toolchain=toolchain, timeout=30)
        assert out.ok, out.error
        per_module[m.name] = out.decisions
    assert len(decision_log.y) == sum(per_module.values()) > 0
    assert decision_log.modules == sorted(n for n, d in per_module.items() if d)
    for i, name in enumerate(decision_log.modules):
        assert int((decision_log.module == i).sum()) == per_module[name]
    assert set(np.unique(decision_log.y)) <= {0, 1}
    names = [n for n, _, _ in decision_log.features]
    assert len(names) == 38 and "inlining_default" not in names and "callee_basic_block_count" in names
    assert decision_log.x.shape == (len(decision_log.y), 38)


def test_vocabulary_adds_embedding_columns(toolchain: Toolchain, ir2vec_vocab: Path) -> None:
    dlog = warmstart.collect(CSRC, toolchain, jobs=2, vocab=str(ir2vec_vocab))
    assert ("callee_embedding", VOCAB_DIM, True) in dlog.features
    assert dlog.x.shape[1] == 38 + 2 * VOCAB_DIM


def test_train_export_and_use(decision_log, toolchain: Toolchain, tmp_path: Path) -> None:
    saved = tmp_path / "log.npz"
    decision_log.save(saved)
    model = tmp_path / "bc.onnx"
    result = warmstart.train_from(saved, model, toolchain, seed=3, epochs=20, holdout=0.3)
    # the ONNX file carries one input per LLVM feature and agrees with the torch model it came from
    pol = OnnxPolicy(model)
    assert list(pol.inputs) == [n for n, _, _ in decision_log.features]
    assert pol.metadata["mlgo.kind"] == "inline-bc" and pol.metadata["mlgo.seed"] == "3"
    n_tr, n_te = result["train_decisions"], result["heldout_decisions"]
    assert n_tr + n_te == len(decision_log.y)
    torch_all = (result["train_agreement"] * n_tr + result["heldout_agreement"] * n_te) / (n_tr + n_te)
    assert result["onnx_agreement_all"] == pytest.approx(torch_all, abs=1.0 / len(decision_log.y))
    assert 0.0 <= result["heldout_agreement"] <= 1.0
    assert (tmp_path / "bc.json").is_file()
    # same seed, same log: the same model
    again = warmstart.train_from(saved, tmp_path / "again.onnx", toolchain, seed=3, epochs=20, holdout=0.3)
    assert again["train_agreement"] == result["train_agreement"]
    assert OnnxPolicy(tmp_path / "again.onnx").metadata["mlgo.log_digest"] == pol.metadata["mlgo.log_digest"]
    # and it is a working policy for a real compile
    out = run_compile(["clang", "-Oz", "-c", str(CSRC / "sort.c"), "-o", str(tmp_path / "s.o")], str(model),
                      toolchain=toolchain, timeout=30)
    assert out.ok, out.error
    assert out.decisions > 0


def test_bad_inputs_are_one_line_errors(tmp_path: Path, toolchain: Toolchain) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="neither a corpus"):
        warmstart.collect(tmp_path / "empty", toolchain)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(InputError, match="is not a decision log"):
        warmstart.DecisionLog.load(junk)
    cli = Path(sys.executable).with_name("mlgo-farm")
    p = subprocess.run([cli, "policy", "train-bc", str(tmp_path / "empty"), "-o", str(tmp_path / "m.onnx")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.startswith("mlgo-farm: error: ") and "neither a corpus" in p.stderr
    assert not (tmp_path / "m.onnx").exists()


@pytest.mark.parametrize("damage", ["truncated", "corrupt member"])
def test_damaged_decision_log_is_one_line(tmp_path: Path, damage: str) -> None:
    """A log cut short (a full disk) or with a damaged member: `train-bc LOG.npz` says so in one line."""
    log = warmstart.DecisionLog([("callee_basic_block_count", 1, False)], np.arange(400.0).reshape(400, 1),
                                np.arange(400) % 2, np.zeros(400, dtype=np.int64), ["m"])
    good = tmp_path / "good.npz"
    log.save(good)
    assert warmstart.DecisionLog.load(good).x.shape == (400, 1)
    data = good.read_bytes()
    bad = tmp_path / "bad.npz"
    if damage == "truncated":
        bad.write_bytes(data[: len(data) // 2])
    else:  # flip bytes inside the first member's compressed data, keeping the zip directory intact
        bad.write_bytes(data[:60] + bytes(b ^ 0xFF for b in data[60:200]) + data[200:])
    cli = Path(sys.executable).with_name("mlgo-farm")
    p = subprocess.run([cli, "policy", "train-bc", str(bad), "-o", str(tmp_path / "m.onnx")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith(f"mlgo-farm: error: {bad} is not a decision log saved by --save-log: ")
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "m.onnx").exists()
