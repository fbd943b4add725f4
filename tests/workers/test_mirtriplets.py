"""The farm's MIR triplet reader (workers/mirtriplets.py) against `llvm-ir2vec triplets --mode=mir`, byte for byte."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from farm.errors import ToolError
from farm.toolchain import Toolchain
from tests.conftest import CSRC
from tests.workers.conftest import read_table
from workers import mir, mirtriplets, triplets
from workers.modulerun import ModuleTriplets
from workers.tripletcache import TripletCache

#: Integer code that exercises other operand kinds: a jump table, globals, external symbols, inline asm,
#: a tail call, 8/16-bit registers, shifts (implicit $cl) and division (implicit $rdx:$rax).
GENERATED = r"""
int table[64];
const char *names[] = {"a", "b", "c"};
extern int ext(int);
int jump(int x) {
  switch (x) { case 0: return 11; case 1: return 7; case 2: return 99; case 3: return -4;
               case 4: return 123; case 5: return 5; default: return 0; }
}
long mix(long a, long b, unsigned char c) { return (a << (c & 31)) / (b | 1) + (short)a % 7; }
int sum(int n) { int s = 0; for (int i = 0; i < n && i < 64; i++) s += table[i] ^ i; return s; }
int tail(int x) { return ext(x + 1); }
unsigned asm_add(unsigned a, unsigned b) { __asm__("addl %1, %0" : "+r"(a) : "r"(b)); return a; }
void copy(char *d, const char *s, unsigned long n) { __builtin_memcpy(d, s, n); }
const char *name(int i) { return names[i % 3]; }
"""
#: Scalar and vector SSE arithmetic: every instruction reads $mxcsr, which LLVM 22.1.8 crashes on.
SSE = r"""
double dot(const double *a, const double *b, int n) {
  double s = 0; for (int i = 0; i < n; i++) s += a[i] * b[i]; return s;
}
float scale(float x) { return x * 1.5f + 2.0f; }
"""


@pytest.fixture(scope="module")
def vocab(toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> mirtriplets.Vocabulary:
    mirtriplets._vocab_cache.clear()
    any_mir = _compile(toolchain, CSRC / "sort.c", tmp_path_factory.mktemp("vocab"), "prologepilog")
    return mirtriplets.vocabulary(toolchain, any_mir)


def _compile(tc: Toolchain, src: Path, out: Path, stop: str, extra: tuple[str, ...] = ()) -> Path:
    ll = out / f"{src.stem}.ll"
    tc.run("clang", ["-O2", "-S", "-emit-llvm", *extra, src, "-o", ll])
    mir_file = out / f"{src.stem}.{stop}.mir"
    tc.run("llc", ["-O2", f"-stop-after={stop}", ll, "-o", mir_file])
    return mir_file


def _llvm(tc: Toolchain, mir_text: str, path: Path) -> bytes | None:
    """What llvm-ir2vec prints for a MIR text, or None where LLVM 22.1.8 crashes."""
    path.write_text(mir_text)
    try:
        return tc.run("llvm-ir2vec", ["triplets", "--mode=mir", path]).stdout
    except ToolError:
        return None


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("src")
    (d / "generated.c").write_text(GENERATED)
    (d / "sse.c").write_text(SSE)
    return [*sorted(CSRC.glob("*.c")), d / "generated.c", d / "sse.c"]


def test_byte_for_byte_where_llvm_22_reads_it(toolchain: Toolchain, vocab: mirtriplets.Vocabulary,
                                              sources: list[Path], tmp_path: Path) -> None:
    """Every function of every file, after register allocation and after prologue insertion: wherever
    LLVM 22.1.8 does not crash, the farm's output is its output, byte for byte (MAX_RELATION line included)."""
    compared, crashed = 0, []
    for src in sources:
        for stop in ("virtregrewriter", "prologepilog"):
            text = _compile(toolchain, src, tmp_path, stop).read_text()
            ours = mirtriplets.extract(vocab, text)
            assert ours.failed == []
            # LLVM reads the module only without the class-less call operands, and only one function at a time.
            for name, ftext in mir.split_functions(mir.sanitize(text)):
                expected = _llvm(toolchain, ftext, tmp_path / "f.mir")
                if expected is None:
                    crashed.append(name)
                    continue
                assert mirtriplets.extract(vocab, ftext).text() == expected, (src.name, stop, name)
                compared += 1
    assert compared >= 20, compared
    assert {"mean", "dot", "scale"} <= set(crashed), "the SSE functions are what LLVM 22.1.8 crashes on"


def test_sse_function_is_kept_with_mxcsr_as_tip_of_tree_maps_it(toolchain: Toolchain, vocab: mirtriplets.Vocabulary,
                                                               tmp_path: Path) -> None:
    text = _compile(toolchain, CSRC / "stats.c", tmp_path, "prologepilog").read_text()
    assert _llvm(toolchain, text, tmp_path / "whole.mir") is None, "LLVM 22.1.8 crashes on this module"
    found = mirtriplets.extract(vocab, text)
    assert found.failed == [] and "mean" in [f.name for f in found.functions]
    mean = next(f for f in found.functions if f.name == "mean")
    # SSE arithmetic such as `$xmm0 = nofpexcept ADDSDrm ..., implicit $mxcsr` reads $mxcsr (no register class),
    # which is the first virtual register entity, tip of tree's shared fallback, at its operand position.
    adds = {i for n, i in vocab.opcodes.items() if n.startswith("ADDSD")}
    assert any(h in adds and t == vocab.fallback for h, t, r in mean.triplets if r > 0)
    names = {n: i for i, n in enumerate(_entities(toolchain, tmp_path, text))}
    assert vocab.fallback == names["VirtReg_GR8"] == min(i for n, i in names.items() if n.startswith("VirtReg_"))
    assert vocab.phys["mxcsr"] == vocab.phys["ssp"] == vocab.fallback
    phys = {i for n, i in names.items() if n.startswith("PhyReg_")}
    assert vocab.phys["xmm0"] in phys and vocab.phys["eax"] in phys


def _entities(tc: Toolchain, tmp: Path, text: str) -> list[str]:
    (tmp / "e.mir").write_text(text)
    out = tc.run("llvm-ir2vec", ["entities", "--mode=mir", tmp / "e.mir"]).stdout.decode().splitlines()
    return [ln.rsplit("\t", 1)[0] for ln in out[1:]]


def test_pre_allocation_mir_is_read(toolchain: Toolchain, vocab: mirtriplets.Vocabulary, tmp_path: Path) -> None:
    """Virtual registers take the VirtReg_<class> entity of their class (`registers:` list or `%N:class`);
    LLVM 22.1.8 cannot read such MIR at all."""
    text = _compile(toolchain, CSRC / "sort.c", tmp_path, "finalize-isel").read_text()
    assert re.search(r"(?m)^\s+%\d+:gr64 = COPY \$rdi", text), "pre-allocation MIR has classed virtual registers"
    assert _llvm(toolchain, mir.sanitize(text), tmp_path / "pre.mir") is None
    found = mirtriplets.extract(vocab, text)
    assert found.failed == [] and len(found.functions) == text.count("\nname:")
    names = {n: i for i, n in enumerate(_entities(toolchain, tmp_path, text))}
    mentioned = {t for f in found.functions for _, t, r in f.triplets if r > 0}
    assert {names["VirtReg_GR64"], names["VirtReg_GR32"]} <= mentioned
    # `%N:gr64 = COPY $rdi`: Arg0 of a COPY is the virtual register's class, Arg1 the physical one.
    f = found.functions[0]
    copy = vocab.opcodes["COPY"]
    assert (copy, names["VirtReg_GR64"], 1) in f.triplets


def test_virtual_register_class_from_the_registers_list_and_fallbacks(vocab: mirtriplets.Vocabulary) -> None:
    text = ("---\nname: f\nregisters:\n  - { id: 0, class: gr32, preferred-register: '' }\n"
            "  - { id: 1, class: _, preferred-register: '' }\nbody: |\n  bb.0:\n"
            "    %0 = COPY $edi\n    %1 = COPY %0\n    %2:gpr(s32) = COPY %0\n    $eax = COPY %0, implicit $noreg\n"
            "    RET64 implicit $eax\n...\n")
    (f,) = mirtriplets.extract(vocab, text).functions
    copy = vocab.opcodes["COPY"]
    assert f.triplets[0] == (copy, vocab.virt["gr32"], 1)  # %0: class from the registers list
    assert f.triplets[3] == (copy, vocab.fallback, 1)  # %1: no class
    assert f.triplets[6] == (copy, vocab.fallback, 1)  # %2: a register bank, not a class
    assert f.triplets[11] == (copy, vocab.fallback, 3)  # $noreg
    assert f.max_relation == 3


def test_malformed_function_is_left_out_and_the_rest_kept(toolchain: Toolchain, vocab: mirtriplets.Vocabulary,
                                                          tmp_path: Path) -> None:
    text = _compile(toolchain, CSRC / "sort.c", tmp_path, "prologepilog").read_text()
    whole = mirtriplets.extract(vocab, text)
    victim = whole.functions[1].name
    docs = text.split("\n---\n")
    i = next(k for k, d in enumerate(docs) if re.match(rf"name:\s+{victim}\n", d))
    docs[i] = re.sub(r"(?m)^(\s+)RET\w*", r"\1FROBNICATE64", docs[i], count=1)
    broken = mirtriplets.extract(vocab, "\n---\n".join(docs))
    assert [n for n, _ in broken.failed] == [victim] and "unknown opcode FROBNICATE64" in broken.failed[0][1]
    assert [f.name for f in broken.functions] == [f.name for f in whole.functions if f.name != victim]
    kept = [f for f in whole.functions if f.name != victim]
    assert [f.triplets for f in broken.functions] == [f.triplets for f in kept]
    # The dataset lists the module as partial, in one line naming the function and why.
    merged = triplets.Merge()
    merged.add("sort.c", ModuleTriplets(lines={b"1\t2\t0"}, raw=1, max_relation=0,
                                        lost_functions=[f"{n} [allocated] ({why})" for n, why in broken.failed]))
    (entry,) = merged.partial
    assert entry["module"] == "sort.c" and "\n" not in entry["reason"]
    assert entry["functions"] == 1 and entry["by_stage"] == {"allocated": 1}
    assert entry["reason"].startswith(f"MIR function(s) left out (at the [stage]): {victim} [allocated] (body line ")


#: Generic MIR operands no other stage has: an intrinsic, a compare predicate, a shuffle mask, i1 and FP constants.
GENERIC = r"""
typedef float v4 __attribute__((vector_size(16)));
v4 swap(v4 a) { return __builtin_shufflevector(a, a, 1, 0, 3, 2); }
int lt(int a, int b) { return a < b; }
float fmax_(float a, float b) { return __builtin_fmaxf(a, b) * 0.25f; }
int pop(unsigned x) { return __builtin_popcount(x); }
long scaled(long a) { return a * 77; }
unsigned long long ticks(void) { return __builtin_ia32_rdtsc(); }
"""


def _stage(tc: Toolchain, src: Path, out: Path, stage: mir.Stage) -> str:
    bc = out / f"{src.stem}.bc"
    tc.run("clang", ["-O2", "-c", "-emit-llvm", src, "-o", bc])
    mir_file = out / f"{src.stem}.{stage.name}.mir"
    tc.run("llc", ["-O2", *stage.flags, bc, "-o", mir_file])
    return mir_file.read_text()


def test_generic_mir_gives_what_no_other_stage_has(toolchain: Toolchain, vocab: mirtriplets.Vocabulary,
                                                   tmp_path: Path) -> None:
    src = tmp_path / "generic.c"
    src.write_text(GENERIC)
    stages = {s.name: s for s in mir.STAGES}
    names = {i: n for n, i in [*vocab.common.items(), *vocab.opcodes.items()]}
    seen = {}
    for name, stage in stages.items():
        found = mirtriplets.extract(vocab, _stage(toolchain, src, tmp_path, stage))
        assert found.failed == [] and len(found.functions) == 6, (name, found.failed)
        seen[name] = {e for f in found.functions for h, t, _ in f.triplets for e in (h, t)}
    only_generic = seen["generic"] - seen["isel"] - seen["allocated"]
    assert only_generic, "generic MIR adds entities"
    words = {names[e] for e in only_generic if e in names}
    assert {"IntrinsicID", "Predicate", "ShuffleMask", "CImmediate"} <= words, words
    assert any(w.startswith("G_") for w in words)
    # before allocation: virtual registers of a class, which allocated MIR never has
    assert seen["isel"] - seen["allocated"]


def test_a_function_instruction_selection_gave_up_on_is_left_out_not_cut(vocab: mirtriplets.Vocabulary,
                                                                         toolchain: Toolchain,
                                                                         tmp_path: Path) -> None:
    stage = next(s for s in mir.STAGES if s.name == "generic")
    text = _stage(toolchain, CSRC / "sort.c", tmp_path, stage)
    whole = mirtriplets.extract(vocab, text)
    victim = whole.functions[0].name
    docs = text.split("\n---\n")
    i = next(k for k, d in enumerate(docs) if re.match(rf"name:\s+{victim}\n", d))
    docs[i] = re.sub(r"(?m)^failedISel:\s+false$", "failedISel: true", docs[i], count=1)
    cut = "\n---\n".join(docs)
    found = mirtriplets.extract(vocab, cut)
    assert found.failed == [(victim, mir.UNTRANSLATED)]
    assert [f.name for f in found.functions] == [f.name for f in whole.functions[1:]]


def test_mir_dataset_loses_no_function(csrc_corpus: Path, toolchain: Toolchain, tmp_path: Path) -> None:
    """`triplets mir` over the test corpus: stats.c (SSE) is kept, nothing is partial or skipped, and the lines
    are what the reader makes of the MIR the farm compiles."""
    out = triplets.build_dataset(csrc_corpus, tmp_path / "mir", "mir", toolchain)
    m = json.loads((out / "manifest.json").read_text())
    assert m["skipped"] == [] and m["partial"] == [] and m["modules_used"] == 4
    _, rows = read_table(out / "train2id.txt")
    _, entities = read_table(out / "entity2id.txt")
    ids = {n: int(i) for n, i in entities}
    adds = {i for n, i in ids.items() if n.startswith("ADDSD")}
    assert any(int(h) in adds and int(t) == ids["VirtReg_GR8"] for h, t, _ in rows), "SSE code with $mxcsr"
    # every stage of workers/mir.py STAGES is read: generic opcodes, and virtual registers of their own class
    mentioned = {int(e) for h, t, _ in rows for e in (h, t)}
    named = {n for n, i in ids.items() if i in mentioned}
    assert any(n.startswith("G_") for n in named) and "VirtReg_GR64" in named and "VirtReg_GR32" in named


def test_cache_key_follows_the_extractor_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bc = tmp_path / "m.bc"
    bc.write_bytes(b"BC")
    store = TripletCache(tmp_path / "c", 1 << 20, "id")
    before = store.key(bc, "mir", ["O2"], 300)
    ir_before = store.key(bc, "ir", ["O2"], 300)
    monkeypatch.setattr(mirtriplets, "VERSION", mirtriplets.VERSION + 1)
    assert store.key(bc, "mir", ["O2"], 300) != before
    assert store.key(bc, "ir", ["O2"], 300) == ir_before


def test_register_table_matches_this_llvm(vocab: mirtriplets.Vocabulary, toolchain: Toolchain, tmp_path: Path) -> None:
    """Every register the table gives a class is mapped as LLVM 22.1.8 maps it: one `KILL` per register."""
    regs, _ = mirtriplets._register_table()
    classed = sorted(r for r, c in regs.items() if c is not None)
    body = "".join(f"    KILL ${r}\n" for r in classed)
    text = f"---\nname: probe\nbody: |\n  bb.0:\n{body}    RET64\n...\n"
    expected = _llvm(toolchain, text, tmp_path / "probe.mir")
    assert expected is not None
    assert mirtriplets.extract(vocab, text).text() == expected


def test_a_module_defining_no_function_is_skipped_saying_so(toolchain: Toolchain, tmp_path: Path) -> None:
    """A module of data only (a table) has no machine function: skipped in one line that says so, whichever module
    the process reads first (LLVM's entity map cannot be made from such a file), and the others are kept."""
    from workers import corpus

    mirtriplets._vocab_cache.clear()  # the data-only module may be the first to ask for the entity map
    src = tmp_path / "src"
    src.mkdir()
    (src / "a_table.c").write_text("const int table[4] = {1, 2, 3, 4};\n")
    (src / "code.c").write_text("int twice(int x) { return 2 * x; }\n")
    corpus.from_sources(src, tmp_path / "corpus", toolchain)
    out = triplets.build_dataset(tmp_path / "corpus", tmp_path / "mir", "mir", toolchain, jobs=1)
    m = json.loads((out / "manifest.json").read_text())
    assert m["modules_used"] == 1 and [s["module"] for s in m["skipped"]] == ["a_table.c"]
    assert m["skipped"][0]["reason"].endswith("could be read: the module defines none"), m["skipped"]
