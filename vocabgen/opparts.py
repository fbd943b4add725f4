"""x86 MIR opcode names taken apart: the parts an opcode the corpus never mentions is composed from.

MIR2Vec's `Opcodes` are LLVM's `MIRVocabulary::extractBaseOpcodeName` of every target opcode: the
first run of letters and underscores (trailing `_` trimmed). So in LLVM 22.1.8 `ADD32rr` becomes
`ADD` and `VFMADD231PSZ256m` becomes `VFMADD`, while a name without digits stays whole: `ADDPDrr`,
`VPADDDYrr`, `VPCONFLICTDZrmkz`, `VPADDDZ` (the Z128/Z256 forms, cut at their digits). `split`
takes a name apart by the rules below, all of them data in this module; full opcode names
(`ADD32rr`, `MOVSX32rr8`, `VFMADD231PSZ256m`) are taken apart by the same rules.

From the end of the name:

1. `FAMILIES` prefix before `_` (`G_`, `MMX_`, `LOCK_`, ...)  -> Family
2. `TAGS` suffix after `_` (`_Int`, `_REV`, `_EVEX`, ...)       -> Tag
3. the lower-case tail (`rr`, `rm`, `rmbkz`, `kk`, ...): its r/m/i letters in order -> Form; a `b`
   after them (broadcast from memory, embedded rounding / SAE on registers) -> Embedded; a final
   `k` / `kz` (merge / zero masking, only after r/m/i letters) -> Mask; digits in it (`rr8`) -> SrcWidth
4. vector size at the end of the upper-case stem of a `V` name: `Z128`, `Z256`, `Z` (512, or the
   Z128/Z256 group cut at its digits), `Y` (256)                -> VecSize
5. digits after the mnemonic: 8/16/32/64 -> Width; any other (`231`, operand order) -> Digits
6. packed/scalar floating-point type `PS PD SS SD`, and `PH SH` (AVX512-FP16, `V` names only) -> Type
   (then rule 5 again, for digits before the type: `VFMADD231PS`)
7. the `V` prefix (VEX/EVEX encoded) when the name has a vector size or a type, or the rest starts
   with `P` (packed integer), or the rest is itself a stem of the opcode list     -> Encoding
8. an integer element `B W D Q` at the end when the same stem has a sibling with another element in
   the opcode list (`PADDD` and `PADDB`: `PADD` + D; `PAND` has no `PANB`: stays whole) -> Elem
9. what is left is the mnemonic                                -> Base (every opcode has one)

A part is an entity named `Relation:value` (`Base:ADD`, `Form:rr`); `HAS` prefixes the relation's
name (`HasBase`, `HasForm`). Neither is written into LLVM's vocabulary JSON: the trainer adds them
after the dataset's own entities and relations (vocabgen/training.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: Names before the first `_` that mark a family of opcodes (generic MIR, MMX, prefixes, pseudos).
FAMILIES = frozenset({"G", "MMX", "LOCK", "REP", "SEH", "PATCHABLE", "TLS", "EH", "DBG", "CONVERGENCECTRL",
                      "TCRETURN", "PREALLOCATED", "LIFETIME", "MORESTACK"})
#: Names after the last `_` that qualify an opcode (intrinsic form, reversed operands, EVEX-only, ...).
TAGS = frozenset({"Int", "REV", "EVEX", "alt", "Fp", "F", "NF", "ND", "PREFIX", "FpI", "FI", "VEX", "NOREX"})
#: Vector sizes at the end of a `V` stem, longest first.
VEC_SIZES = ("Z128", "Z256", "Z", "Y")
#: Floating-point types; those in `VEC_ONLY_TYPES` only on `V` names (`PUSH` is not PU + SH).
FP_TYPES = ("PS", "PD", "SS", "SD", "PH", "SH")
VEC_ONLY_TYPES = frozenset({"PH", "SH"})
ELEMS = ("B", "W", "D", "Q")
WIDTHS = frozenset({"8", "16", "32", "64"})
RELATIONS = ("HasBase", "HasFamily", "HasTag", "HasForm", "HasEmbedded", "HasMask", "HasSrcWidth",
             "HasVecSize", "HasWidth", "HasDigits", "HasType", "HasEncoding", "HasElem")

_TAIL = re.compile(r"[a-z][a-z0-9]*$")
_FORM = re.compile(r"^(?P<rmi>[rmi]+)(?P<b>b)?(?P<i>i)?(?P<mask>kz|k)?$")
_DIGITS = re.compile(r"^(?P<stem>.*?[A-Z])(?P<digits>\d+)$")


def _core(name: str) -> tuple[str, list[tuple[str, str]]]:
    """Family and tags off the underscores; returns the core and those parts."""
    parts: list[tuple[str, str]] = []
    pieces = name.split("_")
    if len(pieces) > 1 and pieces[0] in FAMILIES and any(pieces[1:]):
        parts.append(("Family", pieces[0]))
        pieces = pieces[1:]
    while len(pieces) > 1 and pieces[-1] in TAGS:
        parts.append(("Tag", pieces.pop()))
    return "_".join(pieces), parts


def _form(tail: str) -> list[tuple[str, str]]:
    digits = "".join(c for c in tail if c.isdigit())
    letters = "".join(c for c in tail if not c.isdigit())
    out: list[tuple[str, str]] = []
    m = _FORM.match(letters)
    if m:
        out.append(("Form", m["rmi"] + (m["i"] or "")))
        if m["b"]:
            out.append(("Embedded", "b"))
        if m["mask"]:
            out.append(("Mask", m["mask"]))
    else:
        out.append(("Form", letters))
    if digits:
        out.append(("SrcWidth", digits))
    return out


def _pre_elem(name: str, stems: frozenset[str] | None) -> tuple[str, list[tuple[str, str]]]:
    """Rules 1-7: the stem left for the element rule and the mnemonic, and the parts found so far."""
    core, parts = _core(name)
    tail = _TAIL.search(core)
    if tail and tail.start() > 0:
        parts += _form(tail.group())
        core = core[: tail.start()]
    vector = core.startswith("V") and len(core) > 2
    if vector:
        for size in VEC_SIZES:
            if core.endswith(size) and len(core) > len(size) + 2:
                parts.append(("VecSize", size))
                core = core[: -len(size)]
                break
    m = _DIGITS.match(core)
    if m and len(m["stem"]) >= 2:
        parts.append(("Width" if m["digits"] in WIDTHS else "Digits", m["digits"]))
        core = m["stem"]
    typed = False
    for t in FP_TYPES:
        if core.endswith(t) and len(core) - len(t) >= 2 + vector and (t not in VEC_ONLY_TYPES or vector):
            parts.append(("Type", t))
            core = core[: -len(t)]
            typed = True
            break
    m = _DIGITS.match(core) if typed else None
    if m and len(m["stem"]) >= 2:  # digits before the type: VFMADD231PS
        parts.append(("Width" if m["digits"] in WIDTHS else "Digits", m["digits"]))
        core = m["stem"]
    if vector and (typed or any(r == "VecSize" for r, _ in parts) or core[1] == "P"
                   or (stems is not None and core[1:] in stems)):
        parts.append(("Encoding", "V"))
        core = core[1:]
    return core, parts


def split(name: str, stems: frozenset[str] | None = None) -> list[tuple[str, str]]:
    """The parts of one opcode name as (relation suffix, value): `Base` first, then as found.

    `stems` (from `stems_of` over the whole opcode list) enables the sibling rules 7 and 8; without
    it an integer element stays in the mnemonic.
    """
    core, parts = _pre_elem(name, stems)
    if stems is not None and len(core) > 2 and core[-1] in ELEMS and any(
            core[:-1] + e in stems for e in ELEMS if e != core[-1]):
        parts.append(("Elem", core[-1]))
        core = core[:-1]
    return [("Base", core or name), *parts]


def stems_of(names: Iterable[str]) -> frozenset[str]:
    """What is left of each name before the element rule: the opcode list's stems (for `split`)."""
    return frozenset(_pre_elem(n, None)[0] for n in names)


def decompose(names: list[str]) -> dict[str, list[tuple[str, str]]]:
    """Every opcode name of the list with its parts as (relation, part entity): `("HasBase", "Base:ADD")`."""
    stems = stems_of(names)
    return {n: [(f"Has{r}", f"{r}:{v}") for r, v in split(n, stems)] for n in names}
