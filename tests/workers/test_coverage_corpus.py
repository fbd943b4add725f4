"""The farm's coverage corpus (workers/data/coverage): its flags, adding it to a corpus (whole and sharded),
and the IR entities it reaches with the real clang-22 and llvm-ir2vec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.cli import main
from farm.toolchain import Toolchain
from tests.conftest import CSRC
from workers import corpus, coverage, triplets
from workers.shards import Shard

#: What no module can give IR2Vec's triplets in LLVM 22, and why (the README of the corpus says more).
#: FCMP_false, FCMP_true and PtrToAddr, which no C/C++ source gives, come from the corpus's ir_only.ll.
UNREACHABLE = {
    "UserOp1", "UserOp2",  # opcodes internal to passes, never in a module
    "LabelTy", "MetadataTy", "FunctionTy",  # the Type relation is an instruction's result type: never these
}


def test_flags_line_and_module_names(tmp_path: Path) -> None:
    (tmp_path / "a.c").write_text("// mlgo-farm-flags: --target=bpf -DX='a b'\nint x;\n")
    (tmp_path / "b.cpp").write_text("// no flags here\nint y;\n")
    (tmp_path / "c.ll").write_text("; mlgo-farm-flags: -DUNUSED\ndefine void @f() {\n  ret void\n}\n")
    (tmp_path / "notes.txt").write_text("not a source\n")
    jobs = coverage.jobs(tmp_path)
    assert [j.name for j in jobs] == ["_coverage/a.c", "_coverage/b.cpp", "_coverage/c.ll"]
    assert jobs[0].args == (*corpus.DEFAULT_FLAGS, "--target=bpf", "-DX=a b")
    assert jobs[1].args == corpus.DEFAULT_FLAGS
    assert jobs[2].args == (*corpus.DEFAULT_FLAGS, "-DUNUSED")
    assert coverage.digest(tmp_path) != coverage.digest(coverage.DATA)


def test_every_source_says_why_it_exists() -> None:
    for f in coverage.sources():
        lines = f.read_text().splitlines()
        mark = ";" if f.suffix == coverage.IR_SUFFIX else "//"
        comment = [ln for ln in lines[:4] if ln.startswith(mark) and "mlgo-farm-flags:" not in ln]
        assert comment, f"{f.name} has no comment saying what it is for"
    readme = (coverage.DATA / "README.md").read_text()
    assert all(f.name in readme for f in coverage.sources())


def test_with_coverage_adds_the_modules_and_keeps_the_others(tmp_path: Path, toolchain: Toolchain,
                                                            capsys: pytest.CaptureFixture) -> None:
    plain, both = tmp_path / "plain", tmp_path / "both"
    assert main(["corpus", "sources", str(CSRC), "-o", str(plain)]) == 0
    assert main(["corpus", "sources", str(CSRC), "-o", str(both), "--with-coverage"]) == 0
    assert "farm coverage corpus" in capsys.readouterr().out
    p, b = corpus.load(plain), corpus.load(both)
    cov = [m.name for m in b.modules if m.name.startswith(coverage.PREFIX)]
    assert sorted(cov) == [f"_coverage/{f.name}" for f in coverage.sources()]
    assert {m.name for m in b.modules} - set(cov) == {m.name for m in p.modules} and b.skipped == []
    for m in p.modules:
        assert (both / f"{m.name}.bc").read_bytes() == m.bitcode.read_bytes()
    assert b.lineage is None, "a plain directory has no lineage; its source names the coverage corpus"
    assert b.origin.endswith("+ farm coverage corpus")
    cmd = (both / "_coverage/eh_windows.cpp.cmd").read_bytes().split(b"\0")
    assert b"--target=x86_64-pc-windows-msvc" in cmd
    # the same again gives the same bytes (a corpus digest is a dataset's input)
    assert main(["corpus", "sources", str(CSRC), "-o", str(tmp_path / "again"), "--with-coverage"]) == 0
    assert corpus.load(tmp_path / "again").digest == b.digest


def test_a_shard_gets_only_its_coverage_modules(tmp_path: Path, toolchain: Toolchain) -> None:
    names = set()
    for i in (1, 2):
        out = tmp_path / f"s{i}"
        assert main(["corpus", "sources", str(CSRC), "-o", str(out), "--with-coverage", "--shard", f"{i}/2"]) == 0
        mods = {m.name for m in corpus.load(out).modules if m.name.startswith(coverage.PREFIX)}
        assert all(Shard(i, 2).owns(n) for n in mods)
        names |= mods
    assert names == {f"_coverage/{f.name}" for f in coverage.sources()}


def test_a_source_that_fails_is_listed_not_fatal(tmp_path: Path, toolchain: Toolchain) -> None:
    root = tmp_path / "cov"
    root.mkdir()
    (root / "good.c").write_text("int good(int x) { return -x; }\n")
    (root / "bad.c").write_text("// mlgo-farm-flags: --target=no-such-arch\nint bad;\n")
    base = tmp_path / "c"
    corpus.from_sources(CSRC, base, toolchain)
    c = coverage.add_to(base, toolchain, root=root)
    assert "_coverage/good.c" in {m.name for m in c.modules}
    assert [s["module"] for s in c.skipped] == ["_coverage/bad.c"]
    (root / "good.c").unlink()
    again = tmp_path / "d"
    corpus.from_sources(CSRC, again, toolchain)
    c = coverage.add_to(again, toolchain, root=root)  # every coverage source fails: still a corpus
    assert [s["module"] for s in c.skipped] == ["_coverage/bad.c"] and len(c.modules) == len(list(CSRC.glob("*.c")))


def test_the_coverage_corpus_reaches_every_reachable_ir_entity(tmp_path: Path, toolchain: Toolchain) -> None:
    assert main(["corpus", "coverage", "-o", str(tmp_path / "c"), "-j", "2"]) == 0
    c = corpus.load(tmp_path / "c")
    assert c.skipped == [] and len(c.modules) == len(coverage.sources()) and c.origin == coverage.SOURCE
    ds = triplets.build_dataset(tmp_path / "c", tmp_path / "ir", "ir", toolchain, jobs=2,
                                opt_levels=["O0", "O2", "O3"])
    m = json.loads((ds / "manifest.json").read_text())
    mentioned = {n for s in m["entities_mentioned"].values() for n in s["entities"]}
    everything = {ln.split("\t")[0] for ln in (ds / "entity2id.txt").read_text().splitlines()[1:]}
    assert everything - mentioned == UNREACHABLE
    assert len(mentioned) == len(everything) - len(UNREACHABLE) == 105


def test_a_known_lineage_records_the_coverage_sources(tmp_path: Path) -> None:
    (tmp_path / "a.c").write_text("int a;\n")
    debian = {"kind": "debian", "package": "zlib", "version": "1:1.2.13"}
    assert coverage._lineage(debian, tmp_path) == {**debian, "coverage_corpus": {"files": 1,
                                                                                  "sha256": coverage.digest(tmp_path)}}
    assert coverage._lineage(None, tmp_path) is None
