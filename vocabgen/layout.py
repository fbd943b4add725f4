"""Where each LLVM entity goes in the vocabulary JSON that LLVM loads.

IR2Vec (llvm/lib/Analysis/IR2Vec.cpp) reads three sections: `Opcodes`, `Types` and
`Arguments` (operand kinds followed by the FCMP_/ICMP_ predicates). `llvm-ir2vec entities`
lists them in that order: opcodes, then the `...Ty` types, then the rest.

MIR2Vec (llvm/lib/CodeGen/MIR2Vec.cpp) reads `Opcodes` (base opcode names, emitted as a sorted
set), `CommonOperands`, `PhysicalRegisters` and `VirtualRegisters`; the entity list prefixes
register classes with `PhyReg_`/`VirtReg_`, the JSON keys are the plain class names.

Entities that never occur in the triplets get the mean of the trained vectors of their own
section (of all trained vectors if the section has none): LLVM then sees an unseen opcode as
"an average opcode" instead of a random direction or nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from farm.errors import InputError

if TYPE_CHECKING:  # numpy is imported where vectors are handled: every `mlgo-farm` verb imports this module
    import numpy as np

SECTIONS = {
    "ir": ("Opcodes", "Types", "Arguments"),
    "mir": ("Opcodes", "CommonOperands", "PhysicalRegisters", "VirtualRegisters"),
}
DEFAULT_DIM = {"ir": 75, "mir": 100}
UNSEEN_POLICY = "section-mean"
_REG_PREFIX = {"PhyReg_": "PhysicalRegisters", "VirtReg_": "VirtualRegisters"}


def _ir_sections(names: list[str]) -> list[str]:
    first_type = next((i for i, n in enumerate(names) if n.endswith("Ty")), None)
    if not first_type:
        raise InputError("IR entity list has no opcodes followed by types (…Ty)")
    first_arg = next((i for i in range(first_type, len(names)) if not names[i].endswith("Ty")), len(names))
    if first_arg == len(names):
        raise InputError("IR entity list has no operand kinds after the types")
    return ["Opcodes"] * first_type + ["Types"] * (first_arg - first_type) + ["Arguments"] * (len(names) - first_arg)


def _mir_sections(names: list[str]) -> list[str]:
    plain = [n for n in names if not n.startswith(tuple(_REG_PREFIX))]
    if names[: len(plain)] != plain:
        raise InputError("MIR entity list: register classes must come after opcodes and common operands")
    # Opcodes come from a sorted set; the common operands start where the order breaks.
    split = next((i for i in range(1, len(plain)) if plain[i] <= plain[i - 1]), None)
    if split is None or "Immediate" not in plain[split:]:
        raise InputError("MIR entity list: cannot find the common operands (Immediate, MBB, ...) after the opcodes")
    regs = [_REG_PREFIX[p] for n in names[len(plain):] for p in _REG_PREFIX if n.startswith(p)]
    if not regs:
        raise InputError("MIR entity list has no PhyReg_/VirtReg_ register classes")
    return ["Opcodes"] * split + ["CommonOperands"] * (len(plain) - split) + regs


def placement(kind: str, names: list[str]) -> list[tuple[str, str]]:
    """(section, JSON key) for each entity id."""
    sections = _ir_sections(names) if kind == "ir" else _mir_sections(names)
    keys = []
    for name, section in zip(names, sections, strict=True):
        prefix = next((p for p, s in _REG_PREFIX.items() if s == section), "")
        keys.append((section, name[len(prefix):]))
    seen: set[tuple[str, str]] = set()
    for sk in keys:
        if sk in seen:
            raise InputError(f"entity {sk[1]!r} appears twice in section {sk[0]}")
        seen.add(sk)
    return keys


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
