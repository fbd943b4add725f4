"""x86 register class names taken apart: the parts a register class the corpus never mentions is composed from.

MIR2Vec has one entity per register class in each of two sections, `PhysicalRegisters` (`PhyReg_GR32`: a physical
register whose minimal class is GR32) and `VirtualRegisters` (`VirtReg_GR32`). Most of LLVM's 135 x86 classes are
subclasses the allocator's constraints make (`GR64_NOREX_NOSP`, `GR32_ABCD_and_GR32_TC`,
`GR64_with_sub_32bit_in_GR32_BPSP`) and ordinary code reaches only some of them. Their names say what they are, by
TableGen's own naming, and `split` reads it. All rules are data in this module:

1. `_and_` joins classes intersected (`GR32_ABCD_and_GR32_TC`): each side's parts, once each;
2. `_with_sub_<N>bit` (a class of registers that have that sub-register) -> RegSub, and `_in_<class>` after it
   (whose sub-register is in that class) -> that class's qualifiers (its file and width are the sub-register's,
   which RegSub already says);
3. the first piece: register file letters, width digits, suffix letters (`GR64PLTSafe`, `VR128X`, `VK16WM`,
   `RFP80`, `LOW32`) -> RegFile, RegWidth, RegSuffix (a piece with no digits is the file: `TILE`, `DEBUG`);
4. every later piece (`NOREX`, `NOSP`, `ABCD`, `TC`, `ADDR`, ...) -> RegQual;
5. the class itself -> RegClass, the one part a physical and a virtual register of the same class share: a class
   the allocated MIR never names on a physical register but the pre-allocation MIR names on a virtual one (or the
   other way round) is composed from its twin.

A part is an entity named `Relation:value` (`RegFile:GR`); `Has` prefixes the relation (`HasRegFile`), as in
vocabgen/opparts.py. Register parts are their own relations and entities, not opcode parts: a register's width
and an opcode's operand width do not mean the same thing to the model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

RELATIONS = ("HasRegClass", "HasRegFile", "HasRegWidth", "HasRegSuffix", "HasRegQual", "HasRegSub")
#: The parts that identify a class by more than what every class of its section has: a class is composed only when
#: one of these is trained (vocabgen/compose.py); a qualifier alone (`NOSP`) says too little.
IDENTIFYING = frozenset({"RegClass", "RegFile"})
#: The entity-name prefixes of the two register sections (vocabgen/layout.py strips them for the JSON keys).
PREFIXES = ("PhyReg_", "VirtReg_")

_HEAD = re.compile(r"^(?P<file>[A-Z]+?)(?P<width>\d+)?(?P<suffix>[A-Za-z]*)$")
_SUB = re.compile(r"_with_sub_(?P<bits>\d+bit)(?:_in_(?P<cls>.+))?$")


def _one(name: str) -> list[tuple[str, str]]:
    """Rules 2-4 for one class name (no `_and_`)."""
    parts: list[tuple[str, str]] = []
    m = _SUB.search(name)
    if m:
        parts.append(("RegSub", m["bits"]))
        if m["cls"]:
            parts += [p for p in _one(m["cls"]) if p[0] == "RegQual"]
        name = name[: m.start()]
    head, *rest = name.split("_")
    h = _HEAD.match(head)
    if h and (h["width"] or not h["suffix"]):
        parts.append(("RegFile", h["file"]))
        if h["width"]:
            parts.append(("RegWidth", h["width"]))
        if h["suffix"]:
            parts.append(("RegSuffix", h["suffix"]))
    else:
        parts.append(("RegFile", head))
    parts += [("RegQual", q) for q in rest if q]
    return parts


def split(entity: str) -> list[tuple[str, str]]:
    """The parts of one register entity (`PhyReg_GR32_NOSP`, or the bare class name) as (relation suffix, value):
    `RegClass` first, then the rest once each, as found."""
    name = next((entity[len(p):] for p in PREFIXES if entity.startswith(p)), entity)
    out = [("RegClass", name)]
    for side in name.split("_and_"):
        for part in _one(side):
            if part not in out:
                out.append(part)
    return out


def decompose(names: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
    """Every register entity of the list with its parts as (relation, part entity): `("HasRegFile", "RegFile:GR")`."""
    return {n: [(f"Has{r}", f"{r}:{v}") for r, v in split(n)] for n in names}
