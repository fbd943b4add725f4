"""The worker caches against the real clang-22, ccache and llvm-ir2vec: warm runs are cold runs, only faster.

Counts come from ccache's own statistics and from a log the real tools append to (a wrapper that
notes the call and then runs the real binary), never from mocks.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from farm.config import load_settings
from farm.errors import FarmError
from farm.toolchain import Toolchain
from workers import cache, corpus, mir, tripletcache, triplets
from workers.tripletcache import Entry, TripletCache


@pytest.fixture(autouse=True)
def cache_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """On, as in production (the suite turns it off for everyone else); in this test's own var dir."""
    monkeypatch.setenv(cache.ENABLED_VARIABLE, "true")


def _off(monkeypatch: pytest.MonkeyPatch, off: bool = True) -> None:
    monkeypatch.setenv(cache.ENABLED_VARIABLE, "false" if off else "true")


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --- translation units: ccache -------------------------------------------------------------------

@pytest.fixture
def src(tmp_path: Path) -> Path:
    """Four TUs: two include shared.h, one other.h, one no header of the project."""
    s = tmp_path / "src"
    (s / "include").mkdir(parents=True)
    (s / "include" / "shared.h").write_text("#define SCALE 3\nstatic inline int scale(int x) { return x * SCALE; }\n")
    (s / "include" / "other.h").write_text("#define OFFSET 7\n")
    (s / "one.c").write_text('#include "include/shared.h"\nint one(int x) { return scale(x) + 1; }\n')
    (s / "two.c").write_text('#include "include/shared.h"\nint two(int x) { return scale(x) * 2; }\n')
    (s / "three.c").write_text('#include "include/other.h"\nint three(int x) { return x + OFFSET; }\n')
    (s / "four.c").write_text("int four(int x) { return x - 4; }\n")
    return s


def _counts(tc: Toolchain) -> tuple[int, int]:
    """(hits, misses) so far in this test's ccache."""
    cc = cache.for_compile(tc)
    assert cc is not None, "ccache is required (deploy/setup.sh installs it)"
    s = cc.stats()
    return s["direct_cache_hit"] + s["preprocessed_cache_hit"], s["cache_miss"]


def test_header_change_recompiles_only_its_includers(src: Path, tmp_path: Path, toolchain: Toolchain,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    corpus.from_sources(src, tmp_path / "cold", toolchain)
    assert _counts(toolchain) == (0, 4)
    cold = tree(tmp_path / "cold")

    corpus.from_sources(src, tmp_path / "warm", toolchain)
    assert _counts(toolchain) == (4, 4), "an unchanged tree is all hits"
    assert tree(tmp_path / "warm") == cold

    _off(monkeypatch)
    corpus.from_sources(src, tmp_path / "uncached", toolchain)
    _off(monkeypatch, False)
    assert _counts(toolchain) == (4, 4), "--no-cache neither reads nor writes"
    assert tree(tmp_path / "uncached") == cold

    os.utime(src / "include" / "shared.h")  # a new mtime, the same content
    corpus.from_sources(src, tmp_path / "touched", toolchain)
    assert _counts(toolchain) == (8, 4), "the key is content, not mtime"

    (src / "include" / "shared.h").write_text("#define SCALE 5\nstatic inline int scale(int x) { return x * SCALE; }\n")
    corpus.from_sources(src, tmp_path / "changed", toolchain)
    assert _counts(toolchain) == (10, 6), "exactly the two includers of shared.h compile again"
    changed = tree(tmp_path / "changed")
    for name in ("three.c.bc", "four.c.bc"):
        assert changed[name] == cold[name]
    for name in ("one.c.bc", "two.c.bc"):
        assert changed[name] != cold[name]
    _off(monkeypatch)
    corpus.from_sources(src, tmp_path / "changed-uncached", toolchain)
    assert tree(tmp_path / "changed-uncached") == changed


def test_builds_in_other_directories_share_entries(src: Path, tmp_path: Path, toolchain: Toolchain) -> None:
    """Two build directories (working directory, output) compiling the same sources: the second is all hits."""
    import json

    outs = []
    for b in ("build1", "build2"):
        (tmp_path / b).mkdir()
        db = [{"directory": str(tmp_path / b), "file": str(src / f),
               "arguments": ["cc", "-O2", f"-I{src}", "-c", str(src / f), "-o", f"{f}.o"]}
              for f in ("one.c", "two.c", "three.c", "four.c")]
        (tmp_path / b / "compile_commands.json").write_text(json.dumps(db))
        outs.append(corpus.from_sources(tmp_path / b, tmp_path / f"corpus-{b}", toolchain))
    assert _counts(toolchain) == (4, 4)
    first, second = ({m.name: m.bitcode.read_bytes() for m in c.modules} for c in outs)
    assert first == second and len(first) == 4


def test_without_ccache_or_with_an_unusable_cache_the_corpus_is_the_same(src: Path, tmp_path: Path,
                                                                          toolchain: Toolchain,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    corpus.from_sources(src, tmp_path / "cached", toolchain)
    reference = tree(tmp_path / "cached")
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("MLGO_FARM_CACHE_DIR", str(blocker / "cache"))  # nothing can be made there
    corpus.from_sources(src, tmp_path / "unusable", toolchain)
    assert tree(tmp_path / "unusable") == reference
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "ccache").write_text("")  # ccache itself fails ("ccache: error: ...")
    monkeypatch.setenv("MLGO_FARM_CACHE_DIR", str(tmp_path / "half"))
    corpus.from_sources(src, tmp_path / "ccache-fails", toolchain)
    assert tree(tmp_path / "ccache-fails") == reference
    monkeypatch.delenv("MLGO_FARM_CACHE_DIR")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    assert cache.for_compile(toolchain) is None
    corpus.from_sources(src, tmp_path / "no-ccache", toolchain)
    assert tree(tmp_path / "no-ccache") == reference


def test_a_failing_tu_fails_the_same_through_ccache(tmp_path: Path, toolchain: Toolchain) -> None:
    s = tmp_path / "s"
    s.mkdir()
    (s / "ok.c").write_text("int ok(void) { return 0; }\n")
    (s / "bad.c").write_text("int bad(void) { return ; }\n")
    c = corpus.from_sources(s, tmp_path / "out", toolchain)
    assert [m.name for m in c.modules] == ["ok.c"]
    assert c.skipped[0]["reason"].startswith("clang exited with code 1:") and "\n" not in c.skipped[0]["reason"]
    assert not list((tmp_path / "out").glob(".*.d")), "ccache's dependency files stay out of the corpus"


def test_settings_bound_the_caches(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, toolchain: Toolchain) -> None:
    import subprocess

    assert cache.current().dir == load_settings().var_dir / "cache"
    monkeypatch.setenv("MLGO_FARM_CACHE_DIR", str(tmp_path / "shared"))
    monkeypatch.setenv("MLGO_FARM_CACHE_COMPILE_MAX_MB", "64")
    cc = cache.for_compile(toolchain)
    assert cc.dir == tmp_path / "shared" / "ccache"
    env = cc.env()
    for key, value in (("max_size", f"{64 * 2**20 / 1e6:.1f}M"), ("base_dir", ""), ("sloppiness", ""),
                       ("hard_link", "false"), ("depend_mode", "true"), ("cache_dir", str(cc.dir))):
        got = subprocess.run([cc.ccache, "-k", key], env=env, capture_output=True, text=True, check=True).stdout
        assert got.strip() == value, key
    monkeypatch.setenv("MLGO_FARM_CACHE_TRIPLETS_MAX_MB", "0")
    with pytest.raises(FarmError, match=r"^\[cache\] triplets_max_mb must be greater than 0, got 0$"):
        cache.current()


def test_disable_turns_both_caches_off(toolchain: Toolchain) -> None:
    """What `--no-cache` calls: off for this process and every tool it starts."""
    assert cache.current() is not None and cache.for_triplets(toolchain, "ir") is not None
    cache.disable()
    assert os.environ[cache.ENABLED_VARIABLE] == "false"
    assert cache.current() is None and cache.for_compile(toolchain) is None
    assert cache.for_triplets(toolchain, "ir") is None


# --- modules: the farm's triplet cache --------------------------------------------------------------

@pytest.fixture
def counted(toolchain: Toolchain, tmp_path: Path) -> tuple[Toolchain, Path]:
    """The real tools; llvm-ir2vec and llc also append each call to a log before running."""
    bin_dir, log = tmp_path / "bin", tmp_path / "runs.log"
    bin_dir.mkdir()
    for tool in toolchain.bin_dir.iterdir():
        (bin_dir / tool.name).symlink_to(tool)
    for name in ("llvm-ir2vec", "llc"):
        (bin_dir / name).unlink()
        (bin_dir / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\nexec {toolchain.path(name)} "$@"\n')
        (bin_dir / name).chmod(0o755)
    log.write_text("")
    return Toolchain(bin_dir), log


def runs(log: Path, prefix: str) -> int:
    return sum(1 for ln in log.read_text().splitlines() if ln.startswith(prefix))


def _dataset(c: Path, out: Path, tc: Toolchain, kind: str = "ir") -> dict[str, bytes]:
    return tree(triplets.build_dataset(c, out, kind, tc, jobs=2))


def test_warm_ir_run_is_the_cold_run_without_any_tool_run(corpus_copy: Path, counted, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    tc, log = counted
    cold = _dataset(corpus_copy, tmp_path / "cold", tc)
    assert runs(log, "llvm-ir2vec triplets") == 8  # 4 modules at O0 and O2
    assert _dataset(corpus_copy, tmp_path / "warm", tc) == cold
    assert runs(log, "llvm-ir2vec triplets") == 8, "a warm run runs llvm-ir2vec on no module"
    _off(monkeypatch)
    assert _dataset(corpus_copy, tmp_path / "uncached", tc) == cold
    assert runs(log, "llvm-ir2vec triplets") == 16


def test_changed_module_alone_runs_again(corpus_copy: Path, counted, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    tc, log = counted
    cold = _dataset(corpus_copy, tmp_path / "cold", tc)
    bc = corpus_copy / "sort.c.bc"
    tc.run("opt", ["-passes=default<O1>", bc, "-o", tmp_path / "new.bc"])  # new bitcode, as after a commit
    shutil.move(tmp_path / "new.bc", bc)
    before = dict(tripletcache.STATS)
    warm = _dataset(corpus_copy, tmp_path / "warm", tc)
    assert runs(log, "llvm-ir2vec triplets") == 8 + 2, "only sort.c, at its two levels"
    assert tripletcache.STATS["hits"] - before.get("hits", 0) == 3
    assert warm != cold
    _off(monkeypatch)
    assert _dataset(corpus_copy, tmp_path / "uncached", tc) == warm


def test_corrupted_entry_is_deleted_and_recomputed(corpus_copy: Path, counted, tmp_path: Path) -> None:
    tc, log = counted
    cold = _dataset(corpus_copy, tmp_path / "cold", tc)
    store = cache.for_triplets(tc, "ir")
    entries = sorted(p for _, _, p in store.entries())
    assert len(entries) == 4
    victim = entries[0]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    corrupt = tripletcache.STATS["corrupt"]
    assert _dataset(corpus_copy, tmp_path / "again", tc) == cold
    assert tripletcache.STATS["corrupt"] == corrupt + 1
    assert runs(log, "llvm-ir2vec triplets") == 8 + 2, "the module of the bad entry, at its two levels"
    tripletcache.decode(victim.name, victim.read_bytes())  # stored again, whole


def test_warm_mir_run_is_the_cold_run(csrc_corpus: Path, counted, tmp_path: Path) -> None:
    """The entity map comes from the cached MIR text; the triplets come from the farm's MIR reader
    (workers/mirtriplets.py), which loses none of the functions LLVM 22's llvm-ir2vec crashes on."""
    tc, log = counted
    cold = _dataset(csrc_corpus, tmp_path / "cold", tc, "mir")
    llc, ir2vec = runs(log, "llc"), runs(log, "llvm-ir2vec triplets")
    assert llc == 4 * len(mir.STAGES) and ir2vec == 0  # one llc per module and stage
    assert b'"skipped": []' in cold["manifest.json"] and b'"partial": []' in cold["manifest.json"]
    assert _dataset(csrc_corpus, tmp_path / "warm", tc, "mir") == cold
    assert (runs(log, "llc"), runs(log, "llvm-ir2vec triplets")) == (llc, ir2vec)


# --- the entry store itself ------------------------------------------------------------------------

def _entry(i: int, width: int = 40) -> Entry:
    return Entry({f"{i}\t{j}\t{j % 3}".encode() for j in range(width)}, width * 2, 2)


def test_eviction_keeps_the_recently_used(tmp_path: Path) -> None:
    one = len(tripletcache.encode("0" * 64, _entry(0)))
    store = TripletCache(tmp_path / "t", max_bytes=int(5.5 * one), identity="x")
    keys = [f"{i:064x}" for i in range(5)]
    for i, k in enumerate(keys):
        store.put(k, _entry(i))
        os.utime(store.path(k), ns=(10**18 + i, 10**18 + i))  # oldest first, no waiting
    assert len(store.entries()) == 5, "under the bound nothing goes"
    assert store.get(keys[0], "m") == _entry(0)  # used: now the most recent
    for i in range(5, 8):
        store.put(f"{i:064x}", _entry(i))
    assert store.size() <= store.max_bytes
    assert store.get(keys[0], "m") == _entry(0), "the recently used entry survives"
    assert store.get(keys[1], "m") is None, "the least recently used went first"


def test_torn_and_foreign_entries_are_misses(tmp_path: Path) -> None:
    store = TripletCache(tmp_path / "t", 1 << 20, "x")
    k = "a" * 64
    store.put(k, _entry(1))
    data = store.path(k).read_bytes()
    store.path(k).write_bytes(data[: len(data) - 5])  # what a writer dying mid-write would leave without rename
    assert store.get(k, "m") is None and not store.path(k).exists()
    store.path(k).write_bytes(tripletcache.encode("b" * 64, _entry(1)))  # an entry under the wrong name
    assert store.get(k, "m") is None and not store.path(k).exists()


def test_only_repeatable_failures_are_kept_and_only_for_their_module(tmp_path: Path) -> None:
    store = TripletCache(tmp_path / "t", 1 << 20, "x")
    store.put_failure("1" * 64, "m.c", "llvm-ir2vec timed out after 2s on m.c", ())
    store.put_failure("2" * 64, "m.c", f"llvm-ir2vec exited with code 1: {tmp_path}/scratch/3/O2.mir", (tmp_path,))
    assert store.entries() == []
    store.put_failure("3" * 64, "m.c", "llvm-ir2vec crashed with SIGSEGV on m.c", ())
    assert store.get("3" * 64, "m.c").failure == "llvm-ir2vec crashed with SIGSEGV on m.c"
    assert store.get("3" * 64, "copy-of-m.c") is None, "its reason names another module"


def test_concurrent_writers_and_readers_never_see_a_torn_entry(tmp_path: Path) -> None:
    store = TripletCache(tmp_path / "t", 1 << 30, "x")
    keys = [f"{i:064x}" for i in range(4)]
    corrupt, bad = tripletcache.STATS["corrupt"], []

    def work(n: int) -> None:
        for r in range(40):
            i = (n + r) % 4
            store.put(keys[i], _entry(i, 400))
            got = store.get(keys[(i + 1) % 4], "m")
            if got is not None and got != _entry((i + 1) % 4, 400):
                bad.append(got)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == [] and tripletcache.STATS["corrupt"] == corrupt
    assert sorted(p.name for _, _, p in store.entries()) == keys, "no temporary left behind"


def test_stats_and_clear(src: Path, tmp_path: Path, toolchain: Toolchain, capsys: pytest.CaptureFixture) -> None:
    corpus.from_sources(src, tmp_path / "c", toolchain)
    assert cache.main(["stats"]) == 0
    assert "compile: " in capsys.readouterr().out
    assert cache.main(["clear"]) == 0
    hits, misses = _counts(toolchain)
    corpus.from_sources(src, tmp_path / "again", toolchain)
    assert _counts(toolchain) == (hits, misses + 4), "nothing left to hit after clear"
