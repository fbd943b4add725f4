"""Opcode analogies (a : b :: c : d) as a quality check of the learned vectors.

A question counts as answered when `d` is the nearest entity of its section (cosine) to
`b - a + c`, leaving out a, b and c. Only questions whose four entities occur in the triplets
are asked: an entity that was never trained says nothing about the training.
"""

from __future__ import annotations

import numpy as np

from vocabgen.layout import placement

QUESTIONS = {
    "ir": [
        ("Add", "Sub", "FAdd", "FSub"),
        ("Add", "FAdd", "Mul", "FMul"),
        ("Sub", "FSub", "Mul", "FMul"),
        ("Mul", "FMul", "SDiv", "FDiv"),
        ("UDiv", "SDiv", "URem", "SRem"),
        ("SDiv", "SRem", "UDiv", "URem"),
        ("LShr", "AShr", "UDiv", "SDiv"),
        ("ZExt", "SExt", "UIToFP", "SIToFP"),
        ("FPToUI", "FPToSI", "UIToFP", "SIToFP"),
        ("Trunc", "ZExt", "FPTrunc", "FPExt"),
        ("ICmp", "FCmp", "Add", "FAdd"),
        ("ICMP_slt", "ICMP_ult", "ICMP_sgt", "ICMP_ugt"),
        ("ICMP_sle", "ICMP_ule", "ICMP_sge", "ICMP_uge"),
        ("ICMP_eq", "ICMP_ne", "FCMP_oeq", "FCMP_one"),
        ("ExtractElement", "InsertElement", "ExtractValue", "InsertValue"),
        ("Load", "Store", "ExtractValue", "InsertValue"),
    ],
    "mir": [
        ("ADD", "SUB", "ADDSDrr", "SUBSDrr"),
        ("ADDSDrr", "ADDSSrr", "MULSDrr", "MULSSrr"),
        ("ADD", "SUB", "INC", "DEC"),
        ("AND", "OR", "ANDPDrr", "ORPDrr"),
        ("SHL", "SHR", "ROL", "ROR"),
        ("SHR", "SAR", "DIV", "IDIV"),
        ("MOVZX", "MOVSX", "DIV", "IDIV"),
        ("CMP", "TEST", "SUB", "AND"),
    ],
}


def analogy_score(kind: str, names: list[str], vectors: np.ndarray, trained: np.ndarray) -> dict:
    """{"asked", "correct", "score"} over the applicable questions (score None if none apply)."""
    sections = [s for s, _ in placement(kind, names)]
    index = {n: i for i, n in enumerate(names)}
    is_trained = np.zeros(len(names), dtype=bool)
    is_trained[trained] = True
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    asked = correct = 0
    for a, b, c, d in QUESTIONS[kind]:
        ids = [index.get(x) for x in (a, b, c, d)]
        if any(i is None or not is_trained[i] for i in ids):
            continue
        ia, ib, ic, id_ = ids
        candidates = [i for i, s in enumerate(sections) if s == sections[id_] and is_trained[i] and i not in ids[:3]]
        target = unit[ib] - unit[ia] + unit[ic]
        best = max(candidates, key=lambda i: float(unit[i] @ target))
        asked += 1
        correct += int(best == id_)
    return {"asked": asked, "correct": correct, "score": correct / asked if asked else None}
