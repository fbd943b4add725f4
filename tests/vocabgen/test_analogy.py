"""Analogy scoring on hand-made vectors (correct, wrong, untrained), and LLVM's in-tree IR vocabulary."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from farm.toolchain import Toolchain
from farm.vocabfile import ValidationError, check_schema
from vocabgen import layout
from vocabgen.analogy import QUESTIONS, analogy_score, answers
from vocabgen.validate import compile_samples, llvm_entities, llvm_loads, llvm_printed_vocab, validate_vocab

#: opcodes, then types, then operand kinds: the order `llvm-ir2vec entities` lists them in
NAMES = ["Add", "Sub", "FAdd", "FSub", "Mul", "FMul", "IntegerTy", "FloatTy", "VoidTy", "Constant"]
INT, FLOAT, ADD, SUB, MUL, TY, OTHER, ARG = range(8)


def _vectors() -> np.ndarray:
    """Each opcode is (integer or float) + (operation), so the arithmetic analogies hold exactly.

    The type analogy Add : IntegerTy :: FAdd : FloatTy points at `ty + float`, which here is
    VoidTy's vector, not FloatTy's: a wrong answer by construction.
    """
    parts = {"Add": (INT, ADD), "Sub": (INT, SUB), "FAdd": (FLOAT, ADD), "FSub": (FLOAT, SUB), "Mul": (INT, MUL),
             "FMul": (FLOAT, MUL), "IntegerTy": (TY, INT), "FloatTy": (OTHER,), "VoidTy": (TY, FLOAT),
             "Constant": (ARG,)}
    v = np.zeros((len(NAMES), 8))
    for i, name in enumerate(NAMES):
        v[i, list(parts[name])] = 1.0
    return v


def _by_question(results: list[dict]) -> dict[str, dict]:
    return {r["question"]: r for r in results}


def test_correct_wrong_and_unasked_questions() -> None:
    results = _by_question(answers("ir", NAMES, _vectors(), np.arange(len(NAMES))))
    assert results["Add : Sub :: FAdd : FSub"]["outcome"] == "correct"
    assert results["Add : FAdd :: Mul : FMul"] == {"question": "Add : FAdd :: Mul : FMul", "outcome": "correct",
                                                   "answer": "FMul", "why": QUESTIONS["ir"][1].why}
    wrong = results["Add : IntegerTy :: FAdd : FloatTy"]
    assert wrong["outcome"] == "wrong" and wrong["answer"] == "VoidTy", "answered within the Types section"
    assert results["ICMP_slt : ICMP_ult :: ICMP_sgt : ICMP_ugt"]["outcome"] == "untrained"
    score = analogy_score("ir", NAMES, _vectors(), np.arange(len(NAMES)))
    total = len(QUESTIONS["ir"])
    assert score == {"asked": 4, "correct": 3, "score": 0.75, "total": total, "score_all": 3 / total}


def test_an_untrained_entity_counts_as_wrong_in_the_all_questions_score() -> None:
    v = _vectors()
    trained = np.array([i for i, n in enumerate(NAMES) if n != "FSub"])
    v[NAMES.index("FSub")] = v[NAMES.index("FMul")]  # a filler vector: never an answer, never asked about
    results = _by_question(answers("ir", NAMES, v, trained))
    assert results["Add : Sub :: FAdd : FSub"] == {**results["Add : Sub :: FAdd : FSub"], "outcome": "untrained",
                                                   "answer": None}
    assert results["Add : FAdd :: Mul : FMul"]["answer"] == "FMul"
    score = analogy_score("ir", NAMES, v, trained)
    assert (score["asked"], score["correct"], score["score"]) == (2, 1, 0.5)
    assert score["score_all"] == 1 / len(QUESTIONS["ir"]), "the two unasked questions count as wrong"


def test_nothing_trained_scores_none_and_zero() -> None:
    score = analogy_score("ir", NAMES, _vectors(), np.array([], dtype=np.int64))
    assert score["asked"] == 0 and score["score"] is None and score["score_all"] == 0.0


def test_the_ir_suite_is_written_from_ir_semantics() -> None:
    """At least 20 IR questions, each with its reason, none repeated, over LLVM's own entity names."""
    ir = QUESTIONS["ir"]
    assert len(ir) >= 20 and all(q.why for q in ir)
    assert len({q[:4] for q in ir}) == len(ir)
    known = set(llvm_entities("ir", Toolchain.from_settings()))
    assert {x for q in ir for x in q[:4]} <= known


def test_llvm_loads_its_in_tree_vocabulary_and_the_suite_scores_it(tmp_path) -> None:
    """bench/data's copy of LLVM's seedEmbeddingVocab75D.json: LLVM 22 reads every entry as written and
    the 48 entities it lacks as zeros; the farm's validation refuses it for exactly that (a vocabulary
    must cover every entity); in the suite, its missing predicates leave those questions untrained."""
    path = Path(__file__).parents[2] / "bench" / "data" / "seedEmbeddingVocab75D.json"
    vocab = json.loads(path.read_text())
    assert check_schema("ir", vocab) == 75 and sum(map(len, vocab.values())) == 63
    toolchain = Toolchain.from_settings()
    printed = llvm_printed_vocab("ir", path, toolchain, tmp_path)
    names = list(printed)
    assert names == llvm_entities("ir", toolchain) and len(names) == 110
    zero = []
    for (name, vec), (section, key) in zip(printed.items(), layout.placement("ir", names), strict=True):
        mine = vocab[section].get(key)
        if mine is None:
            assert not any(vec), name
            zero.append(name)
        else:
            assert max(abs(a - b) for a, b in zip(mine, vec, strict=True)) <= 0.0051, name
    assert len(zero) == 48 and {n for n in zero if n.startswith(("ICMP_", "FCMP_"))} == {
        n for n in names if n.startswith(("ICMP_", "FCMP_"))}
    assert llvm_loads("ir", path, 75, toolchain, compile_samples("ir", toolchain, tmp_path))[0]["functions"] >= 5
    with pytest.raises(ValidationError, match="16 LLVM entities of Opcodes have no vector"):
        validate_vocab("ir", path, toolchain)
    v = np.array([vocab[s].get(k, [0.0] * 75) for s, k in layout.placement("ir", names)])
    trained = np.flatnonzero(np.abs(v).sum(axis=1) > 0)
    results = answers("ir", names, v, trained)
    assert all(r["outcome"] == "untrained" for r in results if r["question"].startswith(("ICMP_", "FCMP_")))
    assert len(trained) == 62
