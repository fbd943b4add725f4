"""x86 MIR opcode names taken apart (vocabgen/opparts.py), on the opcode list LLVM 22 itself gives."""

from __future__ import annotations

import pytest

from vocabgen import opparts


@pytest.fixture(scope="module")
def opcodes(mir_entities: list[tuple[str, str]]) -> list[str]:
    """Every MIR2Vec opcode of x86."""
    return [n for n, section in mir_entities if section == "Opcodes"]


def _parts(name: str, stems: frozenset[str] | None = None) -> dict[str, str]:
    return dict(opparts.split(name, stems))


def test_llvm_lists_the_names_the_rules_are_written_for(opcodes: list[str]) -> None:
    assert len(opcodes) > 6000 and len(set(opcodes)) == len(opcodes)
    have = set(opcodes)
    # grouped by extractBaseOpcodeName (digits cut), and the names without digits it keeps whole
    assert {"ADD", "MOV", "VFMADD", "ADDPDrr", "VPADDDYrr", "VPADDDZ", "VPADDDZrr", "PANDrr", "PADDDrr",
            "MMX_PADDBrr", "G_ADD", "VADDSSZrr_Int", "VPCONFLICTDZrmkz", "PUSH"} <= have
    assert not any(c.isdigit() for n in opcodes for c in n)


@pytest.mark.parametrize(("name", "want"), [
    ("ADD", {"Base": "ADD"}),
    ("ADDPDrr", {"Base": "ADD", "Form": "rr", "Type": "PD"}),
    ("VPADDDYrr", {"Base": "PADD", "Form": "rr", "VecSize": "Y", "Encoding": "V", "Elem": "D"}),
    ("VPADDDZ", {"Base": "PADD", "VecSize": "Z", "Encoding": "V", "Elem": "D"}),
    ("VPCONFLICTDZrmkz", {"Base": "PCONFLICT", "Form": "rm", "Mask": "kz", "VecSize": "Z", "Encoding": "V",
                          "Elem": "D"}),
    ("VGETMANTPSZrmbikz", {"Base": "GETMANT", "Form": "rmi", "Embedded": "b", "Mask": "kz", "VecSize": "Z",
                           "Type": "PS", "Encoding": "V"}),
    ("VADDSSZrr_Int", {"Base": "ADD", "Tag": "Int", "Form": "rr", "VecSize": "Z", "Type": "SS", "Encoding": "V"}),
    ("MMX_PADDBrr", {"Base": "PADD", "Family": "MMX", "Form": "rr", "Elem": "B"}),
    ("G_ADD", {"Base": "ADD", "Family": "G"}),
    ("KMOVBkk", {"Base": "KMOV", "Form": "kk", "Elem": "B"}),
    # whole: no sibling with another element (PANB), not a vector name (VERR, VMRUN), SH only on V names
    ("PANDrr", {"Base": "PAND", "Form": "rr"}),
    ("PADDDrr", {"Base": "PADD", "Form": "rr", "Elem": "D"}),
    ("VERRr", {"Base": "VERR", "Form": "r"}),
    ("VMRUN", {"Base": "VMRUN"}),
    ("PUSH", {"Base": "PUSH"}),
])
def test_llvm_names_split_into_parts(opcodes: list[str], name: str, want: dict[str, str]) -> None:
    assert _parts(name, opparts.stems_of(opcodes)) == want


@pytest.mark.parametrize(("name", "want"), [
    ("ADD32rr", {"Base": "ADD", "Width": "32", "Form": "rr"}),
    ("MOVSX32rr8", {"Base": "MOVSX", "Width": "32", "Form": "rr", "SrcWidth": "8"}),
    ("VFMADD231PSZ256m", {"Base": "FMADD", "Digits": "231", "Type": "PS", "VecSize": "Z256", "Form": "m",
                          "Encoding": "V"}),
    ("VPADDDZ128rr", {"Base": "PADDD", "VecSize": "Z128", "Form": "rr", "Encoding": "V"}),
])
def test_full_opcode_names_split_by_the_same_rules(name: str, want: dict[str, str]) -> None:
    """Without the opcode list (no siblings) an element stays in the mnemonic: PADDD."""
    assert _parts(name) == want


def test_every_opcode_has_a_base_and_valid_part_names(opcodes: list[str]) -> None:
    parts = opparts.decompose(opcodes)
    assert set(parts) == set(opcodes)
    for name, ps in parts.items():
        assert ps[0][0] == "HasBase" and ps[0][1].startswith("Base:") and len(ps[0][1]) > len("Base:"), name
        assert all(rel in opparts.RELATIONS and part.split(":", 1)[0] == rel[3:] for rel, part in ps), name
        assert len({rel for rel, _ in ps}) == len(ps), f"{name}: one part per relation"
        assert not any(c.isspace() for _, part in ps for c in part), "entity names go into tab-separated files"
    bases = {ps[0][1] for ps in parts.values()}
    assert len(bases) < len(opcodes) / 3, "parts are shared: far fewer mnemonics than opcodes"
