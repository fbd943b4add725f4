"""The compare predicates read off bitcode (workers/cmpscan.c) are what `llvm-dis` shows, and the dataset
is byte for byte the one the `llvm-dis` path made, without disassembling a single module."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from farm.errors import ToolError
from farm.toolchain import Toolchain
from tests.conftest import CSRC, DATA
from workers import corpus, predicates, triplets

#: Every predicate LLVM has, with the record shapes that move the predicate operand: a forward
#: reference (the left operand's type is written too), flags after it (samesign, fast-math),
#: vectors, quoted names, and an unreachable block (`llvm-ir2vec` sees it, so it counts).
MODULE = """
define i1 @every(i32 %a, i32 %b, double %x, double %y, <2 x float> %v) {
entry:
""" + "".join(f"  %i{p} = icmp {p} i32 %a, %b\n" for p in predicates.ICMP) + "".join(
    f"  %f{p} = fcmp {p} double %x, %y\n" for p in predicates.FCMP) + """
  %vec = fcmp nnan olt <2 x float> %v, zeroinitializer
  %"odd name" = icmp samesign ult i32 %a, 7
  br label %def
use:
  %fw1 = icmp sgt i32 %later, %a
  %fw2 = fcmp fast une double %dlater, %x
  %fw3 = icmp samesign uge i32 %later, %b
  ret i1 %fw1
def:
  %later = add i32 %a, 1
  %dlater = fadd double %x, 1.0
  br label %use
dead:
  %d1 = icmp eq i32 %a, 0
  %d2 = fcmp ord double %x, %y
  ret i1 %d1
}

define i32 @none(i32 %a) {
  ret i32 %a
}

declare i1 @declared(i32)
"""


def _llvm_dis_reading(tc: Toolchain, bc: Path) -> Counter[tuple[str, str]]:
    """The previous implementation, kept here as the reference: disassemble, read the text."""
    return predicates.read_text(tc.run("llvm-dis", [bc, "-o", "-"]).stdout)


def _scan(tc: Toolchain, bc: Path) -> tuple[str, Counter[tuple[str, str]]]:
    return predicates.read_scan(tc.run(str(predicates.scanner(tc)), [bc]).stdout)


def test_scanner_counts_what_llvm_dis_shows(toolchain: Toolchain, csrc_corpus: Path, tmp_path: Path) -> None:
    ll = tmp_path / "every.ll"
    ll.write_text(MODULE)
    bc = tmp_path / "every.bc"
    toolchain.run("opt", ["-passes=verify", ll, "-o", bc])
    producer, counts = _scan(toolchain, bc)
    assert producer == f"LLVM{toolchain.version}", "the fast path must be the one tested"
    expected = Counter({("ICmp", f"ICMP_{p}"): 1 for p in predicates.ICMP}
                       | {("FCmp", f"FCMP_{p}"): 1 for p in predicates.FCMP})
    expected.update([("FCmp", "FCMP_olt"), ("ICmp", "ICMP_ult"), ("ICmp", "ICMP_sgt"), ("FCmp", "FCMP_une"),
                     ("ICmp", "ICMP_uge"), ("ICmp", "ICMP_eq"), ("FCmp", "FCMP_ord")])
    assert counts == expected == _llvm_dis_reading(toolchain, bc)
    assert predicates.predicates_of(toolchain, bc, 60, "every") == expected

    checked = 0
    for m in corpus.load(csrc_corpus).modules:
        for level in ("O0", "O2", "Oz"):
            ir = m.bitcode if level == "O0" else tmp_path / f"{m.bitcode.stem}.{level}.bc"
            if level != "O0":
                toolchain.run("opt", [f"-passes=default<{level}>", m.bitcode, "-o", ir])
            producer, counts = _scan(toolchain, ir)
            assert producer == f"LLVM{toolchain.version}"
            assert counts == _llvm_dis_reading(toolchain, ir), (m.name, level)
            checked += sum(counts.values())
    assert checked > 50, "the test corpus has compares to count"


def _logging_llvm_dis(toolchain: Toolchain, tmp_path: Path) -> tuple[Toolchain, Path]:
    """The real tools, with `llvm-dis` writing each of its inputs to a log before it runs."""
    bin_dir, log = tmp_path / "bin", tmp_path / "llvm-dis.log"
    bin_dir.mkdir()
    for tool in toolchain.bin_dir.iterdir():
        (bin_dir / tool.name).symlink_to(tool)
    (bin_dir / "llvm-dis").unlink()
    (bin_dir / "llvm-dis").write_text(f'#!/bin/sh\necho "$1" >> {log}\nexec {toolchain.path("llvm-dis")} "$@"\n')
    (bin_dir / "llvm-dis").chmod(0o755)
    log.touch()
    return Toolchain(bin_dir), log


def test_dataset_is_the_llvm_dis_paths_byte_for_byte_without_disassembling(
        csrc_corpus: Path, toolchain: Toolchain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tc, log = _logging_llvm_dis(toolchain, tmp_path)
    levels = ["O0", "O2", "Oz"]
    new = triplets.build_dataset(csrc_corpus, tmp_path / "new", "ir", tc, opt_levels=levels)
    assert log.read_text() == "", "no module is disassembled to read its predicates"

    def by_llvm_dis(tc_: Toolchain, file: Path, timeout: float, name: str) -> Counter[tuple[str, str]]:
        return _llvm_dis_reading(tc_, file)

    monkeypatch.setattr(predicates, "predicates_of", by_llvm_dis)
    old = triplets.build_dataset(csrc_corpus, tmp_path / "old", "ir", tc, opt_levels=levels)
    assert len(log.read_text().splitlines()) == 4 * len(levels)
    for name in ("train2id.txt", "entity2id.txt", "relation2id.txt", "manifest.json"):
        assert (new / name).read_bytes() == (old / name).read_bytes(), name
    assert "Predicate\t" in (new / "relation2id.txt").read_text()


def test_bitcode_another_llvm_wrote_is_read_as_this_llvm_prints_it(csrc_corpus: Path, toolchain: Toolchain,
                                                                   tmp_path: Path) -> None:
    """The reader may upgrade older bitcode into compares its bitstream does not hold (LLVM 19 removed
    compare constant expressions): a module whose producer is not this LLVM goes through `llvm-dis`."""
    tc, log = _logging_llvm_dis(toolchain, tmp_path)
    bc = csrc_corpus / "stats.c.bc"
    mine = predicates.predicates_of(tc, bc, 60, "stats")
    assert log.read_text() == ""
    tc.__dict__["version"] = "0.0.1"  # as if this bitcode came from another LLVM than the one reading it
    assert predicates.predicates_of(tc, bc, 60, "stats") == mine
    assert log.read_text() == f"{bc}\n"


def test_what_is_not_bitcode_is_one_line_tool_error(toolchain: Toolchain, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="not LLVM bitcode"):
        predicates.predicates_of(toolchain, CSRC / "stats.c", 60, "source")
    with pytest.raises(ToolError, match=r"cmpscan-\w+ exited with code 1: error: .*corrupt\.bc"):
        predicates.predicates_of(toolchain, DATA / "bad" / "corrupt.bc", 60, "corrupt")
    whole = CSRC / "stats.c"
    bc = tmp_path / "whole.bc"
    toolchain.run("clang", ["-c", "-emit-llvm", whole, "-o", bc])
    cut = tmp_path / "cut.bc"
    cut.write_bytes(bc.read_bytes()[: bc.stat().st_size // 2])
    with pytest.raises(ToolError, match=r"cmpscan.*(ends|runs past)") as e:
        predicates.predicates_of(toolchain, cut, 60, "cut")
    assert "\n" not in str(e.value)
