"""Analogies (a : b :: c : d) written from IR and MIR semantics, as a quality check of the vectors.

A question is answered correctly when `d` is the nearest trained entity of its own section
(cosine) to `b - a + c`, leaving out a, b and c. Each question holds one relation that the
instruction set itself defines (integer vs float, signed vs unsigned, extend vs truncate, a
predicate and its negation, ...), with the reason beside it.

Two scores, because an entity the triplets never mention says nothing about training:
* `score`: over the questions whose four entities are all trained (`asked` of them), which is
  how training progress is read;
* `score_all`: over *all* questions (`total`), an untrained or zero entity counting as a wrong
  answer, which is how two vocabularies are compared: one cannot win by leaving entities out
  (LLVM's in-tree vocabulary has no predicates, so every predicate question counts against it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from vocabgen.layout import placement

if TYPE_CHECKING:
    import numpy as np


class Question(NamedTuple):
    a: str
    b: str
    c: str
    d: str
    why: str


def _q(a: str, b: str, c: str, d: str, why: str) -> Question:
    return Question(a, b, c, d, why)


QUESTIONS: dict[str, list[Question]] = {
    "ir": [
        # integer vs float arithmetic
        _q("Add", "Sub", "FAdd", "FSub", "addition to subtraction, on integers and on floats"),
        _q("Add", "FAdd", "Mul", "FMul", "the float form of an integer operation: addition, multiplication"),
        _q("Sub", "FSub", "Mul", "FMul", "the float form of an integer operation: subtraction, multiplication"),
        _q("Mul", "FMul", "SDiv", "FDiv", "the float form of signed division"),
        _q("SDiv", "FDiv", "SRem", "FRem", "the float form of signed division and of its remainder"),
        _q("Add", "IntegerTy", "FAdd", "FloatTy", "an arithmetic opcode's result type (the Type relation)"),
        _q("ICmp", "FCmp", "Add", "FAdd", "the float form of an integer instruction: compare, add"),
        # signed vs unsigned
        _q("UDiv", "SDiv", "URem", "SRem", "unsigned to signed: division, remainder"),
        _q("SDiv", "SRem", "UDiv", "URem", "division to its remainder, signed and unsigned"),
        _q("LShr", "AShr", "UDiv", "SDiv", "unsigned to signed: a logical shift right divides unsigned"),
        _q("ZExt", "SExt", "LShr", "AShr", "zero to sign fill: widening, shifting right"),
        _q("ZExt", "SExt", "UIToFP", "SIToFP", "unsigned to signed: extension, integer to float"),
        _q("FPToUI", "FPToSI", "UIToFP", "SIToFP", "unsigned to signed conversion, from and to floats"),
        # extend vs truncate, int <-> float, pointer <-> int
        _q("Trunc", "ZExt", "FPTrunc", "FPExt", "narrowing to widening, integers and floats"),
        _q("SExt", "Trunc", "FPExt", "FPTrunc", "widening to narrowing, integers and floats"),
        _q("SIToFP", "FPToSI", "UIToFP", "FPToUI", "into floats to out of floats, signed and unsigned"),
        _q("PtrToInt", "IntToPtr", "FPToUI", "UIToFP", "to integers and back: from pointers, from floats"),
        # element and memory access
        _q("ExtractElement", "InsertElement", "ExtractValue", "InsertValue", "read to write one element: "
           "vectors, aggregates"),
        _q("Load", "Store", "ExtractValue", "InsertValue", "read to write: memory, an aggregate's field"),
        _q("Load", "Store", "ExtractElement", "InsertElement", "read to write: memory, a vector's lane"),
        # compare predicates (LLVM's CmpInst::Predicate)
        _q("ICMP_slt", "ICMP_ult", "ICMP_sgt", "ICMP_ugt", "signed to unsigned, less and greater"),
        _q("ICMP_sle", "ICMP_ule", "ICMP_sge", "ICMP_uge", "signed to unsigned, at most and at least"),
        _q("ICMP_slt", "ICMP_sle", "ICMP_ult", "ICMP_ule", "strict to non-strict, signed and unsigned"),
        _q("ICMP_sgt", "ICMP_sge", "ICMP_ugt", "ICMP_uge", "strict to non-strict greater, signed and unsigned"),
        _q("ICMP_slt", "ICMP_sge", "ICMP_ult", "ICMP_uge", "a predicate to its negation, signed and unsigned"),
        _q("ICMP_slt", "ICMP_sgt", "FCMP_olt", "FCMP_ogt", "operands swapped, integer and ordered float"),
        _q("ICMP_eq", "ICMP_ne", "FCMP_oeq", "FCMP_one", "equal to unequal, integer and ordered float"),
        _q("FCMP_olt", "FCMP_ult", "FCMP_ogt", "FCMP_ugt", "ordered to unordered (true on NaN), less and greater"),
        _q("FCMP_oeq", "FCMP_ueq", "FCMP_one", "FCMP_une", "ordered to unordered, equal and unequal"),
        _q("FCMP_oeq", "FCMP_une", "FCMP_olt", "FCMP_uge", "a float predicate to its negation: ordered "
           "becomes unordered"),
        _q("FCMP_ord", "FCMP_uno", "FCMP_oeq", "FCMP_une", "a float predicate to its negation: neither NaN, "
           "equal"),
    ],
    "mir": [
        _q("ADD", "SUB", "ADDSDrr", "SUBSDrr", "add to subtract, integer and scalar double"),
        _q("ADDSDrr", "ADDSSrr", "MULSDrr", "MULSSrr", "double to single precision, add and multiply"),
        _q("ADD", "SUB", "INC", "DEC", "add to subtract, general and by one"),
        _q("AND", "OR", "ANDPDrr", "ORPDrr", "and to or, integer and packed double"),
        _q("SHL", "SHR", "ROL", "ROR", "left to right, shift and rotate"),
        _q("SHR", "SAR", "DIV", "IDIV", "unsigned to signed, shift right and divide"),
        _q("MOVZX", "MOVSX", "DIV", "IDIV", "unsigned to signed, extending move and divide"),
        _q("CMP", "TEST", "SUB", "AND", "the flag-only form of subtract and of and"),
    ],
}

CORRECT, WRONG, UNTRAINED = "correct", "wrong", "untrained"


def answers(kind: str, names: list[str], vectors: np.ndarray, trained: np.ndarray) -> list[dict]:
    """Per question: its entities, `outcome` (correct, wrong, untrained) and the entity answered."""
    import numpy as np

    sections = [s for s, _ in placement(kind, names)]
    index = {n: i for i, n in enumerate(names)}
    is_trained = np.zeros(len(names), dtype=bool)
    is_trained[np.asarray(trained, dtype=np.int64)] = True
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    out = []
    for q in QUESTIONS[kind]:
        row = {"question": f"{q.a} : {q.b} :: {q.c} : {q.d}", "why": q.why, "outcome": UNTRAINED, "answer": None}
        ids = [index.get(x) for x in q[:4]]
        if any(i is None or not is_trained[i] for i in ids):
            out.append(row)
            continue
        ia, ib, ic, id_ = ids
        candidates = [i for i, s in enumerate(sections) if s == sections[id_] and is_trained[i] and i not in ids[:3]]
        target = unit[ib] - unit[ia] + unit[ic]
        best = max(candidates, key=lambda i: float(unit[i] @ target))
        out.append({**row, "outcome": CORRECT if best == id_ else WRONG, "answer": names[best]})
    return out


def analogy_score(kind: str, names: list[str], vectors: np.ndarray, trained: np.ndarray) -> dict:
    """{"asked", "correct", "score", "total", "score_all"}: see the module's docstring (score None if none asked)."""
    results = answers(kind, names, vectors, trained)
    asked = sum(r["outcome"] != UNTRAINED for r in results)
    correct = sum(r["outcome"] == CORRECT for r in results)
    return {"asked": asked, "correct": correct, "score": correct / asked if asked else None,
            "total": len(results), "score_all": correct / len(results) if results else None}
