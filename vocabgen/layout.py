"""Where each LLVM entity goes in the vocabulary JSON that LLVM loads.

IR2Vec (llvm/lib/Analysis/IR2Vec.cpp) reads three sections: `Opcodes`, `Types` and
`Arguments` (operand kinds followed by the FCMP_/ICMP_ predicates). `llvm-ir2vec entities`
lists them in that order: opcodes, then the `...Ty` types, then the rest.

MIR2Vec (llvm/lib/CodeGen/MIR2Vec.cpp) reads `Opcodes` (base opcode names, emitted as a sorted
set), `CommonOperands`, `PhysicalRegisters` and `VirtualRegisters`; the entity list prefixes
register classes with `PhyReg_`/`VirtReg_`, the JSON keys are the plain class names.

Entities that never occur in the triplets get the mean of the trained vectors of their own
section (of all trained vectors if the section has none): LLVM then sees an unseen opcode as
"an average opcode" instead of a random direction or nothing. A MIR opcode is first composed from its parts
where it can be (vocabgen/compose.py: opcode and register class parts): the mean is only what is left.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from farm.embeddings import SECTIONS, placement  # declared with the kinds: workers/ counts coverage by section too

if TYPE_CHECKING:  # numpy is imported where vectors are handled: every `mlgo-farm` verb imports this module
    import numpy as np

DEFAULT_DIM = {"ir": 75, "mir": 100}
UNSEEN_POLICY = "section-mean"


def fill_unseen(kind: str, names: list[str], vectors: np.ndarray, trained: np.ndarray) -> tuple[np.ndarray, dict]:
    """Replace the vectors of entities absent from the triplets by their section's mean.

    Returns the vectors and the coverage every manifest records, per section in LLVM's order:
    `{section: {"trained": n, "total": m, "filler": [JSON keys]}}`. The filler keys are listed
    by name so that nobody mistakes a filler vector for a trained one (`vocab show` prints them,
    the promotion gate reads the counts).
    """
    import numpy as np

    placed = placement(kind, names)
    sections = [s for s, _ in placed]
    out = vectors.copy()
    is_trained = np.zeros(len(names), dtype=bool)
    is_trained[trained] = True
    overall = vectors[is_trained].mean(axis=0)
    coverage: dict[str, dict] = {}
    for section in SECTIONS[kind]:
        members = np.array([i for i, s in enumerate(sections) if s == section], dtype=np.int64)
        if members.size == 0:
            continue
        seen = members[is_trained[members]]
        missing = members[~is_trained[members]]
        out[missing] = vectors[seen].mean(axis=0) if seen.size else overall
        coverage[section] = {"trained": int(seen.size), "total": int(members.size),
                             "filler": [placed[i][1] for i in missing]}
    return out, coverage


def coverage_line(coverage: dict | None, kind: str | None = None) -> str:
    """`IR Opcodes 57/68 trained, Types 6/12, Arguments 8/30` (`?` for a manifest made before coverage was recorded)."""
    label = f"{kind.upper()} " if kind else ""
    if not isinstance(coverage, dict) or not coverage or not all(
            isinstance(c, dict) and "trained" in c and "total" in c for c in coverage.values()):
        return f"{label}coverage ?"
    parts = [f"{section} {c['trained']}/{c['total']}" for section, c in coverage.items()]
    parts[0] += " trained"
    return label + ", ".join(parts)


def build_vocab(kind: str, names: list[str], vectors: np.ndarray, decimals: int = 6) -> dict[str, dict[str, list]]:
    """The JSON object LLVM loads, sections in LLVM's order and keys in entity-id order."""
    import numpy as np

    vocab: dict[str, dict[str, list]] = {s: {} for s in SECTIONS[kind]}
    rounded = np.round(vectors.astype(np.float64), decimals)
    for (section, key), vec in zip(placement(kind, names), rounded, strict=True):
        vocab[section][key] = [float(x) for x in vec]
    return vocab


def entity_keys(kind: str, names: list[str]) -> dict[str, set[str]]:
    """The keys every section must contain for these LLVM entities."""
    out: dict[str, set[str]] = {s: set() for s in SECTIONS[kind]}
    for section, key in placement(kind, names):
        out[section].add(key)
    return out
