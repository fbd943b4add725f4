"""The kinds of embedding the farm builds, declared once: IR2Vec (LLVM IR) and MIR2Vec (machine IR).

Not the artifact kinds (vocabulary, policy, dataset: farm/artifacts/kinds.py): an embedding kind is
the group a vocabulary or a dataset is filed under (`vocab/ir/...`, `datasets/mir/...`).

A kind names a triplet dataset, a vocabulary and everything keyed by them (store prefixes,
builders, Celery schedules); a new kind is a line here and the code that makes its triplets.

Each kind's vocabulary sections and where each LLVM entity goes in them (`placement`) are here too:
datasets (workers/) count coverage by section and vocabularies (vocabgen/layout.py) are written by them.
IR2Vec (llvm/lib/Analysis/IR2Vec.cpp) reads `Opcodes`, `Types` and `Arguments`; MIR2Vec
(llvm/lib/CodeGen/MIR2Vec.cpp) reads `Opcodes`, `CommonOperands`, `PhysicalRegisters` and
`VirtualRegisters`, whose entities are prefixed `PhyReg_`/`VirtReg_` in the entity list.
"""

from __future__ import annotations

from farm.errors import InputError

KINDS = ("ir", "mir")


def check_kind(kind: str, what: str = "kind") -> str:
    """`kind` if the farm knows it, else a one-line InputError."""
    if kind not in KINDS:
        raise InputError(f"unknown {what} {kind!r}: use one of {', '.join(KINDS)}")
    return kind


SECTIONS = {
    "ir": ("Opcodes", "Types", "Arguments"),
    "mir": ("Opcodes", "CommonOperands", "PhysicalRegisters", "VirtualRegisters"),
}
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
