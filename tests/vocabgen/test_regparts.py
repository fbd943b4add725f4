"""x86 register class names taken apart (vocabgen/regparts.py), on the register entities LLVM 22 itself gives."""

from __future__ import annotations

import pytest

from vocabgen import regparts

REGISTER_SECTIONS = ("PhysicalRegisters", "VirtualRegisters")


@pytest.fixture(scope="module")
def registers(mir_entities: list[tuple[str, str]]) -> list[str]:
    """Every MIR2Vec register entity of x86."""
    return [n for n, section in mir_entities if section in set(REGISTER_SECTIONS)]


@pytest.mark.parametrize(("name", "want"), [
    ("PhyReg_GR32", [("RegClass", "GR32"), ("RegFile", "GR"), ("RegWidth", "32")]),
    ("VirtReg_VR128X", [("RegClass", "VR128X"), ("RegFile", "VR"), ("RegWidth", "128"), ("RegSuffix", "X")]),
    ("VirtReg_GR64_NOREX_NOSP", [("RegClass", "GR64_NOREX_NOSP"), ("RegFile", "GR"), ("RegWidth", "64"),
                                 ("RegQual", "NOREX"), ("RegQual", "NOSP")]),
    ("PhyReg_GR32_ABCD_and_GR32_TC", [("RegClass", "GR32_ABCD_and_GR32_TC"), ("RegFile", "GR"), ("RegWidth", "32"),
                                      ("RegQual", "ABCD"), ("RegQual", "TC")]),
    ("PhyReg_GR64_with_sub_32bit_in_GR32_BPSP", [("RegClass", "GR64_with_sub_32bit_in_GR32_BPSP"),
                                                 ("RegSub", "32bit"), ("RegQual", "BPSP"), ("RegFile", "GR"),
                                                 ("RegWidth", "64")]),
    ("VirtReg_TILE", [("RegClass", "TILE"), ("RegFile", "TILE")]),
    ("PhyReg_DEBUG_REG", [("RegClass", "DEBUG_REG"), ("RegFile", "DEBUG"), ("RegQual", "REG")]),
])
def test_class_names_split_into_parts(name: str, want: list[tuple[str, str]]) -> None:
    assert regparts.split(name) == want


def test_every_register_entity_has_its_class_and_a_file(registers: list[str]) -> None:
    parts = regparts.decompose(registers)
    assert len(registers) > 200 and set(parts) == set(registers)
    for name, ps in parts.items():
        assert ps[0] == ("HasRegClass", f"RegClass:{name.split('_', 1)[1]}"), name
        assert any(rel == "HasRegFile" for rel, _ in ps), name
        assert all(rel in regparts.RELATIONS and part.split(":", 1)[0] == rel[3:] for rel, part in ps), name
        assert len(set(ps)) == len(ps), f"{name}: no part twice"
        assert not any(c.isspace() for _, part in ps for c in part), "entity names go into tab-separated files"
    # a physical and a virtual register of one class share every part: either section's training composes the other
    phys = {n[len("PhyReg_"):]: ps for n, ps in parts.items() if n.startswith("PhyReg_")}
    virt = {n[len("VirtReg_"):]: ps for n, ps in parts.items() if n.startswith("VirtReg_")}
    assert phys.keys() == virt.keys() and all(phys[c] == virt[c] for c in phys)
    files = {p for ps in parts.values() for r, p in ps if r == "HasRegFile"}
    assert len(files) < len(phys) / 4, "parts are shared: far fewer register files than classes"
