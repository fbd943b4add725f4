"""IR and MIR triplet datasets from real corpora, checked line by line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from farm.errors import InputError
from farm.toolchain import Toolchain
from tests.conftest import DATA
from tests.workers.conftest import read_table
from workers import corpus, mir, modulerun, triplets


def _direct_unique(tc: Toolchain, corpus_dir: Path, levels: list[str], tmp: Path) -> tuple[set[tuple], int]:
    """What `llvm-ir2vec triplets | sort -u` gives over the same modules: the independent answer."""
    unique, max_rel = set(), -1
    for m in corpus.load(corpus_dir).modules:
        for level in levels:
            ir = m.bitcode
            if level != "O0":
                ir = tmp / "o.bc"
                tc.run("opt", [f"-passes=default<{level}>", m.bitcode, "-o", ir])
            out = tc.run("llvm-ir2vec", ["triplets", ir]).stdout.decode().splitlines()
            max_rel = max(max_rel, int(out[0].split("=")[1]))
            unique |= {tuple(map(int, ln.split("\t"))) for ln in out[1:]}
    return unique, max_rel


_PREDICATES = {"icmp": {"eq", "ne", "ugt", "uge", "ult", "ule", "sgt", "sge", "slt", "sle"},
               "fcmp": {"false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "uno", "ueq", "ugt", "uge", "ult",
                        "ule", "une", "true"}}


def _direct_predicates(tc: Toolchain, corpus_dir: Path, levels: list[str], tmp: Path) -> set[tuple[str, str]]:
    """(opcode entity, predicate entity) of every compare, read off `llvm-dis` word by word: the independent answer."""
    found = set()
    for m in corpus.load(corpus_dir).modules:
        for level in levels:
            ir = m.bitcode
            if level != "O0":
                ir = tmp / "o.bc"
                tc.run("opt", [f"-passes=default<{level}>", m.bitcode, "-o", ir])
            for line in tc.run("llvm-dis", [ir, "-o", "-"]).stdout.decode().splitlines():
                words = line.split()
                if len(words) > 3 and words[1] == "=" and words[2] in _PREDICATES:
                    pred = next(w for w in words[3:] if w in _PREDICATES[words[2]])
                    found.add(({"icmp": "ICmp", "fcmp": "FCmp"}[words[2]], f"{words[2].upper()}_{pred}"))
    return found


def _add_module(corpus_dir: Path, name: str) -> dict:
    """Add module `name` (a copy of sort.c's bitcode) to a corpus; its new description."""
    desc = json.loads((corpus_dir / corpus.DESCRIPTION).read_text())
    shutil.copy(corpus_dir / "sort.c.bc", corpus_dir / f"{name}.bc")
    desc["modules"].append(name)
    (corpus_dir / corpus.DESCRIPTION).write_text(json.dumps(desc))
    return desc


@pytest.fixture(scope="module")
def ir_dataset(tmp_path_factory: pytest.TempPathFactory, csrc_corpus: Path, toolchain: Toolchain) -> Path:
    return triplets.build_dataset(csrc_corpus, tmp_path_factory.mktemp("ds") / "ir", "ir", toolchain)


def test_ir_files_line_by_line(ir_dataset: Path, csrc_corpus: Path, toolchain: Toolchain, tmp_path: Path) -> None:
    count, rows = read_table(ir_dataset / "train2id.txt")
    assert count == len(rows) > 0
    triples = [tuple(int(x) for x in r) for r in rows]
    assert all(len(r) == 3 for r in rows)
    assert triples == sorted(set(triples)), "train2id must be unique and sorted"

    e_count, entities = read_table(ir_dataset / "entity2id.txt")
    assert e_count == len(entities) and [int(i) for _, i in entities] == list(range(e_count))
    names = {n for n, _ in entities}
    assert {"Ret", "Br", "Add", "FCmp", "ICMP_eq", "FCMP_oeq", "PointerTy"} <= names

    r_count, relations = read_table(ir_dataset / "relation2id.txt")
    assert [n for n, _ in relations[:3]] == ["Type", "Next", "Arg0"]
    assert [int(i) for _, i in relations] == list(range(r_count))
    assert all(h < e_count and t < e_count and r < r_count for h, t, r in triples)

    expected, max_rel = _direct_unique(toolchain, csrc_corpus, ["O0", "O2"], tmp_path)
    ids = {n: int(i) for n, i in entities}
    pairs = _direct_predicates(toolchain, csrc_corpus, ["O0", "O2"], tmp_path)
    assert {("ICmp", "ICMP_slt"), ("FCmp", "FCMP_olt")} <= pairs, "the test corpus compares ints and floats"
    predicate = max_rel + 1  # the farm's relation comes after every relation LLVM emitted
    assert set(triples) == expected | {(ids[h], ids[t], predicate) for h, t in pairs}
    assert r_count == max_rel + 2 and relations[-1] == ["Predicate", str(predicate)]

    m = json.loads((ir_dataset / "manifest.json").read_text())
    assert m["triplets"]["unique"] == count < m["triplets"]["raw"], "deduplication must shrink the raw stream"
    assert m["modules_used"] == m["corpus"]["modules"] == 4 and m["skipped"] == []
    assert m["llvm"]["llvm_version"] == toolchain.version
    assert m["id"].startswith("ir-") and m["opt_levels"] == ["O0", "O2"]
    assert m["predicates"]["enabled"] and m["predicates"]["relation"] == predicate
    assert m["predicates"]["triplets"] == len(pairs) and m["predicates"]["compares"] >= len(pairs)
    mentioned = m["entities_mentioned"]
    assert set(mentioned) == {"Opcodes", "Types", "Arguments"}
    assert sum(s["total"] for s in mentioned.values()) == e_count
    used = {names for h, t, _ in triples for names in (entities[h][0], entities[t][0])}
    assert sorted(n for s in mentioned.values() for n in s["entities"]) == sorted(used)
    assert all(s["count"] == len(s["entities"]) for s in mentioned.values())


def test_without_predicates_the_dataset_is_llvms_triplets(csrc_corpus: Path, toolchain: Toolchain,
                                                          tmp_path: Path) -> None:
    out = triplets.build_dataset(csrc_corpus, tmp_path / "plain", "ir", toolchain, opt_levels=["O0"],
                                 predicates=False)
    _, rows = read_table(out / "train2id.txt")
    expected, max_rel = _direct_unique(toolchain, csrc_corpus, ["O0"], tmp_path)
    assert {tuple(int(x) for x in r) for r in rows} == expected
    r_count, relations = read_table(out / "relation2id.txt")
    assert r_count == max_rel + 1 and "Predicate" not in {n for n, _ in relations}
    m = json.loads((out / "manifest.json").read_text())
    assert m["predicates"] is None
    with_them = triplets.build_dataset(csrc_corpus, tmp_path / "with", "ir", toolchain, opt_levels=["O0"])
    assert json.loads((with_them / "manifest.json").read_text())["id"] != m["id"]


def test_same_corpus_same_bytes_whatever_the_parallelism(ir_dataset: Path, csrc_corpus: Path,
                                                         toolchain: Toolchain, tmp_path: Path) -> None:
    again = triplets.build_dataset(csrc_corpus, tmp_path / "again", "ir", toolchain, jobs=1)
    for name in ("train2id.txt", "entity2id.txt", "relation2id.txt", "manifest.json"):
        assert (again / name).read_bytes() == (ir_dataset / name).read_bytes(), name


def test_more_levels_change_the_content_and_id(ir_dataset: Path, csrc_corpus: Path, toolchain: Toolchain,
                                               tmp_path: Path) -> None:
    o0 = triplets.build_dataset(csrc_corpus, tmp_path / "o0", "ir", toolchain, opt_levels=["O0"])
    m0 = json.loads((o0 / "manifest.json").read_text())
    m = json.loads((ir_dataset / "manifest.json").read_text())
    assert m0["id"] != m["id"] and m0["triplets"]["unique"] < m["triplets"]["unique"]


def test_streamed_output_is_reassembled_across_chunks(csrc_corpus: Path, toolchain: Toolchain) -> None:
    """Whatever the chunk boundaries, a streamed run gives what the whole output gives."""
    bc = corpus.load(csrc_corpus).modules[0].bitcode
    whole = toolchain.run("llvm-ir2vec", ["triplets", bc]).stdout
    head, _, body = whole.partition(b"\n")
    expected = set(body.split(b"\n")) - {b""}
    for size in (1, 7, 4096, len(whole)):
        out = modulerun.Output()
        for i in range(0, len(whole), size):
            out.feed(whole[i:i + size])
        out.finish()
        assert out.lines == expected and out.raw == body.count(b"\n")
        assert out.max_relation == int(head.split(b"=")[1])
    streamed = modulerun.triplets_of(toolchain, bc, 60, "m")
    assert streamed.lines == expected


def test_memory_follows_unique_lines_not_raw_output() -> None:
    """50 MiB of raw output with 1,000 distinct lines: the accumulator keeps about what 1,000 lines take."""
    import tracemalloc

    block = b"".join(b"%d\t%d\t%d\n" % (i, i + 1, i % 7) for i in range(1000)) * 80  # ~1 MiB per chunk
    out = modulerun.Output()
    out.feed(b"MAX_RELATION=7\n")
    tracemalloc.start()
    try:
        for _ in range(50):
            out.feed(block)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out.finish()
    assert len(out.lines) == 1000 and out.raw == 50 * 80 * 1000
    assert peak < 20 * len(block), f"peak {peak} bytes for {50 * len(block)} bytes of output"


def test_output_without_max_relation_is_an_error() -> None:
    from farm.errors import ToolError

    with pytest.raises(ToolError, match="does not start with MAX_RELATION"):
        modulerun.Output().feed(b"1\t2\t0\n")
    with pytest.raises(ToolError, match="no MAX_RELATION"):
        modulerun.Output().finish()


def test_sampled_levels_are_seeded() -> None:
    levels = ["O0", "O1", "O2", "O3", "Os", "Oz"]
    a = [triplets.choose_levels(levels, f"m{i}", 7, 2) for i in range(20)]
    b = [triplets.choose_levels(levels, f"m{i}", 7, 2) for i in range(20)]
    c = [triplets.choose_levels(levels, f"m{i}", 8, 2) for i in range(20)]
    assert a == b and a != c and all(len(x) == 2 and set(x) <= set(levels) for x in a)


def test_corrupt_bitcode_is_skipped_and_listed(corpus_copy: Path, toolchain: Toolchain, tmp_path: Path) -> None:
    desc = json.loads((corpus_copy / corpus.DESCRIPTION).read_text())
    shutil.copy(DATA / "bad" / "corrupt.bc", corpus_copy / "corrupt.bc")
    desc["modules"].append("corrupt")
    (corpus_copy / corpus.DESCRIPTION).write_text(json.dumps(desc))
    out = triplets.build_dataset(corpus_copy, tmp_path / "ds", "ir", toolchain, opt_levels=["O0"])
    m = json.loads((out / "manifest.json").read_text())
    assert m["modules_used"] == 4
    assert [s["module"] for s in m["skipped"]] == ["corrupt"]
    assert m["skipped"][0]["stage"] == "triplets"
    assert m["skipped"][0]["reason"].startswith("llvm-ir2vec exited with code 1") and "corrupt" in m["skipped"][0][
        "reason"]


def test_hanging_tool_times_out_and_is_skipped(corpus_copy: Path, wrapped_toolchain: Toolchain,
                                               tmp_path: Path) -> None:
    _add_module(corpus_copy, "HANGME")
    out = triplets.build_dataset(corpus_copy, tmp_path / "ds", "ir", wrapped_toolchain, opt_levels=["O0"],
                                 timeout=2)
    m = json.loads((out / "manifest.json").read_text())
    assert m["skipped"] == [
        {"module": "HANGME", "reason": "llvm-ir2vec timed out after 2s on HANGME", "stage": "triplets"}
    ]
    assert m["modules_used"] == 4


def test_output_that_is_not_triplets_skips_the_module(corpus_copy: Path, wrapped_toolchain: Toolchain,
                                                       tmp_path: Path) -> None:
    desc = _add_module(corpus_copy, "GARBLED")
    out = triplets.build_dataset(corpus_copy, tmp_path / "ds", "ir", wrapped_toolchain, opt_levels=["O0"])
    m = json.loads((out / "manifest.json").read_text())
    assert m["skipped"] == [{"module": "GARBLED", "stage": "triplets",
                             "reason": "llvm-ir2vec printed a line that is not a triplet: b'Warning: not a triplet'"}]
    assert m["modules_used"] == len(desc["modules"]) - 1


def test_module_names_that_flatten_alike_both_run(csrc_corpus: Path, toolchain: Toolchain, tmp_path: Path) -> None:
    c = tmp_path / "c"
    (c / "x").mkdir(parents=True)
    shutil.copy(csrc_corpus / "sort.c.bc", c / "x" / "sort.c.bc")
    shutil.copy(csrc_corpus / "sort.c.bc", c / "x__sort.c.bc")
    (c / corpus.DESCRIPTION).write_text('{"modules": ["x/sort.c", "x__sort.c"]}')
    out = triplets.build_dataset(c, tmp_path / "ds", "ir", toolchain, opt_levels=["O2"])
    m = json.loads((out / "manifest.json").read_text())
    assert m["skipped"] == [] and m["modules_used"] == 2


def test_same_corpus_elsewhere_same_manifest(csrc_corpus: Path, ir_dataset: Path, toolchain: Toolchain,
                                             tmp_path: Path) -> None:
    """The manifest names where the corpus came from, not the path it was read from."""
    moved = tmp_path / "elsewhere" / "corpus"
    shutil.copytree(csrc_corpus, moved)
    again = triplets.build_dataset(moved, tmp_path / "ds", "ir", toolchain)
    for name in ("train2id.txt", "entity2id.txt", "relation2id.txt", "manifest.json"):
        assert (again / name).read_bytes() == (ir_dataset / name).read_bytes(), name
    source = json.loads((again / "manifest.json").read_text())["corpus"]["source"]
    assert source == json.loads((csrc_corpus / corpus.DESCRIPTION).read_text())["source"] and source


def test_unrelated_output_directory_is_refused_before_any_work(csrc_corpus: Path, wrapped_toolchain: Toolchain,
                                                               tmp_path: Path) -> None:
    """A mistyped -o that names a directory of other files: refused at once, the files untouched."""
    target = tmp_path / "notes"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    c = tmp_path / "c"
    shutil.copytree(csrc_corpus, c)
    shutil.copy(c / "sort.c.bc", c / "HANGME.bc")  # would take the whole timeout if modules ran first
    (c / corpus.DESCRIPTION).write_text('{"modules": ["HANGME"]}')
    with pytest.raises(InputError, match=r"without manifest\.json .*refusing to replace it"):
        triplets.build_dataset(c, target, "ir", wrapped_toolchain, timeout=600)
    assert [p.name for p in target.iterdir()] == ["keep.txt"] and (target / "keep.txt").read_text() == "mine"


def test_every_module_failing_is_an_error_with_nothing_left(tmp_path: Path, toolchain: Toolchain) -> None:
    c = tmp_path / "c"
    c.mkdir()
    shutil.copy(DATA / "bad" / "corrupt.bc", c / "only.bc")
    (c / corpus.DESCRIPTION).write_text('{"modules": ["only"]}')
    with pytest.raises(InputError, match=r"^no triplets from any module of .*; first failure: llvm-ir2vec exited"):
        triplets.build_dataset(c, tmp_path / "out" / "ds", "ir", toolchain)
    assert not (tmp_path / "out").exists()


def test_bad_arguments(csrc_corpus: Path, toolchain: Toolchain, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown dataset kind 'asm'"):
        triplets.build_dataset(csrc_corpus, tmp_path / "x", "asm", toolchain)
    with pytest.raises(InputError, match="unknown optimization level 'O9'"):
        triplets.build_dataset(csrc_corpus, tmp_path / "x", "ir", toolchain, opt_levels=["O9"])
    assert not (tmp_path / "x").exists()


def test_mir_dataset_keeps_what_llvm_22_crashes_on(csrc_corpus: Path, toolchain: Toolchain, tmp_path: Path) -> None:
    out = triplets.build_dataset(csrc_corpus, tmp_path / "mir", "mir", toolchain)
    count, rows = read_table(out / "train2id.txt")
    e_count, entities = read_table(out / "entity2id.txt")
    _, relations = read_table(out / "relation2id.txt")
    assert count == len(rows) > 0
    assert relations[0][0] == "Next" and relations[1][0] == "Arg0"
    names = [n for n, _ in entities]
    assert any(n.startswith("PhyReg_") for n in names) and any(n.startswith("VirtReg_") for n in names)
    assert all(int(h) < e_count and int(t) < e_count for h, t, _ in rows)
    m = json.loads((out / "manifest.json").read_text())
    # hash.c and sort.c are integer code with calls.
    assert m["modules_used"] >= 2
    lost = {s["module"] for s in m["skipped"]} | {s["module"] for s in m["partial"]}
    assert "hash.c" not in lost and "sort.c" not in lost
    # stats.c does SSE arithmetic (implicit $mxcsr): LLVM 22.1.8 crashes on it, the farm's MIR reader
    # (workers/mirtriplets.py) does not: no module and no function is lost any more.
    assert "stats.c" not in lost and lost == set()
    assert m["modules_used"] == 4


def test_sanitizer_touches_only_call_operands() -> None:
    text = ("    CALL64pcrel32 @f, csr_64, implicit $rsp, implicit $ssp, implicit $rdi, implicit-def $rsp, "
            "implicit-def $ssp, implicit-def $eax\n"
            "    renamable $xmm0 = nofpexcept ADDSDrr killed renamable $xmm0, renamable $xmm1, implicit $mxcsr\n")
    out = mir.sanitize(text).splitlines()
    assert out[0] == "    CALL64pcrel32 @f, csr_64, implicit $rsp, implicit $rdi, implicit-def $rsp, implicit-def $eax"
    assert out[1].endswith("implicit $mxcsr")


def test_split_functions_keeps_the_module_header() -> None:
    text = "--- |\n  define void @a() { ret void }\n...\n---\nname: a\nbody: |\n  RET 0\n...\n" \
           "---\nname:            'b'\nbody: |\n  RET 0\n...\n"
    parts = mir.split_functions(text)
    assert [n for n, _ in parts] == ["a", "b"]
    assert all(t.startswith("--- |\n  define void @a()") for _, t in parts)
    assert "name: a" in parts[0][1] and "'b'" not in parts[0][1]
