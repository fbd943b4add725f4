"""Sharded runs: parts made per shard, handed over through a store, merged into the unsharded dataset's bytes;
and every way a set of parts can be wrong (missing, another run or split, corrupt) refused in one line."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from farm.cli import main
from farm.errors import InputError
from farm.objectstore import FileStore
from farm.toolchain import Toolchain
from tests.conftest import CSRC, DATA
from workers import corpus, dataset, shards, triplets
from workers.shards import Shard

FILES = (*dataset.FILES, dataset.MANIFEST)


def _add_corrupt_module(corpus_dir: Path) -> None:
    """A module whose bitcode llvm-ir2vec refuses: a triplets-stage skip."""
    desc = json.loads((corpus_dir / corpus.DESCRIPTION).read_text())
    shutil.copy(DATA / "bad" / "corrupt.bc", corpus_dir / "corrupt.bc")
    desc["modules"].append("corrupt")
    (corpus_dir / corpus.DESCRIPTION).write_text(json.dumps(desc))


def _same_bytes(a: Path, b: Path) -> None:
    for name in FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test C files plus one that does not compile (a corpus-stage skip)."""
    src = tmp_path_factory.mktemp("src")
    for f in [*CSRC.glob("*.c"), DATA / "bad" / "syntax_error.c"]:
        shutil.copy(f, src / f.name)
    return src


@pytest.fixture(scope="module")
def whole(sources: Path, tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> Path:
    """The unsharded corpus: 4 modules, one source that failed, one corrupt module."""
    out = tmp_path_factory.mktemp("whole") / "corpus"
    corpus.from_sources(sources, out, toolchain, jobs=2)
    _add_corrupt_module(out)
    return out


@pytest.fixture(scope="module")
def unsharded_ir(whole: Path, tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> Path:
    return triplets.build_dataset(whole, tmp_path_factory.mktemp("one") / "ir", "ir", toolchain, jobs=2)


@pytest.fixture(scope="module")
def parts_of_two(whole: Path, tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> list[Path]:
    """The whole corpus run as 2 shards (the cut by name at the triplets step)."""
    root = tmp_path_factory.mktemp("parts")
    return [triplets.build_dataset(whole, root / f"p{i}", "ir", toolchain, jobs=2, shard=Shard(i, 2))
            for i in (1, 2)]


def _stored(parts: list[Path], tmp_path: Path, run: str = "run-1") -> FileStore:
    st = FileStore(tmp_path / "store")
    for p in parts:
        shards.put_part(p, st, run)
    return st


def test_membership_is_a_stable_partition_by_name() -> None:
    names = [f"lib/Transforms/Scalar/Pass{i}.cpp" for i in range(2000)]
    for n in (1, 2, 3, 4, 7):
        owners = [[i for i in range(1, n + 1) if Shard(i, n).owns(name)] for name in names]
        assert all(len(o) == 1 for o in owners), "every module in exactly one shard"
        counts = Counter(o[0] for o in owners)
        assert len(counts) == n and min(counts.values()) > 0.8 * len(names) / n, counts
    # the rule is sha256 of the name: fixed values, so a change of rule is a visible change
    assert [shards.shard_of(m, 2) for m in ("bench_main.c", "hash.c", "sort.c", "stats.c")] == [2, 1, 2, 2]
    assert shards.shard_of("syntax_error.c", 3) == 1
    assert Shard.parse("2/4") == Shard(2, 4) and str(Shard(2, 4)) == "2/4" and Shard(2, 4).key == "2-of-4"
    for bad in ("0/2", "3/2", "1/0", "a/b", "1/2/3", "-1/2", "1/2000", " 1/2"):
        with pytest.raises(InputError, match="use I/N"):
            Shard.parse(bad)


def test_whole_corpus_cut_at_the_triplets_step_merges_to_the_same_bytes(
        parts_of_two: list[Path], unsharded_ir: Path, tmp_path: Path) -> None:
    st = _stored(parts_of_two, tmp_path)
    assert st.list("datasets/shards/run-1/") == sorted(
        f"datasets/shards/run-1/{i}-of-2/{n}" for i in (1, 2) for n in ("entity2id.txt", "shard.json", "triplets.txt"))
    merged = triplets.merge_dataset(st, "run-1", 2, tmp_path / "merged")
    _same_bytes(merged, unsharded_ir)
    m = dataset.read_manifest(merged)
    assert [(s["module"], s["stage"]) for s in m["skipped"]] == [("corrupt", "triplets"), ("syntax_error.c", "corpus")]
    assert m["corpus"]["modules"] == 5 and m["modules_used"] == 4
    # each part holds only its own modules; the raw counts add up
    p1, p2 = (json.loads((p / shards.PART_MANIFEST).read_text()) for p in parts_of_two)
    assert [n for n, _ in p1["modules"]] == ["hash.c"]
    assert [n for n, _ in p2["modules"]] == ["bench_main.c", "corrupt", "sort.c", "stats.c"]
    assert p1["raw"] + p2["raw"] == m["triplets"]["raw"]
    assert shards.drop_run(st, "run-1") == 6 and st.list("datasets/shards/") == []


def test_shards_that_compile_only_their_sources_merge_to_the_same_bytes(
        sources: Path, tmp_path: Path, toolchain: Toolchain, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three shards from the sources, each in a directory of its own as in a Buildbot build (relative paths:
    a skip's reason quotes the tool, which names the file). Shard 1/3 compiles only syntax_error.c, which
    fails, so its corpus is empty."""
    def run(where: Path, shard: Shard | None) -> Path:
        where.mkdir()
        monkeypatch.chdir(where)
        c = corpus.from_sources(sources, Path("corpus"), toolchain, jobs=2, shard=shard)
        assert shard is None or all(shard.owns(m.name) for m in c.modules)
        if shard is None or shard.owns("corrupt"):
            _add_corrupt_module(Path("corpus"))  # its TU's bitcode came out corrupt
        return where / triplets.build_dataset(Path("corpus"), Path("out"), "ir", toolchain, jobs=2, shard=shard)

    one = run(tmp_path / "one", None)
    parts = [run(tmp_path / f"s{i}", Shard(i, 3)) for i in (1, 2, 3)]
    assert corpus.load(tmp_path / "s1" / "corpus").modules == [] and json.loads(
        (tmp_path / "s1" / "corpus" / corpus.SKIPPED).read_text())[0]["module"] == "syntax_error.c"
    st = _stored(parts, tmp_path, run="triplets-ir-b7-0a1b2c3d")
    _same_bytes(triplets.merge_dataset(st, "triplets-ir-b7-0a1b2c3d", 3, tmp_path / "merged"), one)
    assert "corpus/corrupt.bc" in (one / dataset.MANIFEST).read_text()

    # a shard's corpus is only ever that shard's
    c2 = tmp_path / "s2" / "corpus"
    with pytest.raises(InputError, match=r"is shard 2/3 of a split corpus: run the triplets with --shard 2/3"):
        triplets.build_dataset(c2, tmp_path / "x", "ir", toolchain)
    with pytest.raises(InputError, match=r"corpus .*s2/corpus is shard 2/3, not 1/3"):
        triplets.build_dataset(c2, tmp_path / "x", "ir", toolchain, shard=Shard(1, 3))
    assert not (tmp_path / "x").exists()


def test_mir_shards_merge_to_the_same_bytes(whole: Path, tmp_path: Path, toolchain: Toolchain) -> None:
    """MIR's entity map comes from the first module by name that LLVM parsed, in one run and in a merge."""
    one = triplets.build_dataset(whole, tmp_path / "one", "mir", toolchain, jobs=2)
    parts = [triplets.build_dataset(whole, tmp_path / f"p{i}", "mir", toolchain, jobs=2, shard=Shard(i, 2))
             for i in (1, 2)]
    froms = [json.loads((p / shards.PART_MANIFEST).read_text())["entities_from"] for p in parts]
    # Every module is read now (workers/mirtriplets.py; LLVM 22's llvm-ir2vec crashed on bench_main.c): the
    # merge takes the map of the first module by name, shard 2's, as the one run does.
    assert froms == ["hash.c", "bench_main.c"], froms
    _same_bytes(triplets.merge_dataset(_stored(parts, tmp_path), "run-1", 2, tmp_path / "merged"), one)


def _one_line(e: pytest.ExceptionInfo) -> str:
    assert "\n" not in str(e.value)
    return str(e.value)


def test_a_missing_shard_is_named_and_nothing_is_written(parts_of_two: list[Path], tmp_path: Path, capsys) -> None:
    st = _stored(parts_of_two[:1], tmp_path)
    with pytest.raises(InputError) as e:
        triplets.merge_dataset(st, "run-1", 2, tmp_path / "merged")
    assert "run run-1: shard 2/2 missing (no datasets/shards/run-1/2-of-2/shard.json)" in _one_line(e)
    assert not (tmp_path / "merged").exists()

    # a shard whose worker died mid-upload: data files there, manifest (written last) not
    st.put("datasets/shards/run-1/2-of-2/triplets.txt", (parts_of_two[1] / "triplets.txt").read_bytes())
    with pytest.raises(InputError, match="shard 2/2 missing"):
        triplets.merge_dataset(st, "run-1", 2, tmp_path / "merged")

    # the same through the verb: one line on stderr, exit 2, nothing published
    assert main(["dataset", "merge", "--run", "run-1", "--shards", "3", "-o", str(tmp_path / "merged")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "run run-1: shard 1/3, 2/3, 3/3 missing" in err[0], err
    assert not (tmp_path / "merged").exists()


def test_parts_of_another_split_or_run_never_mix(parts_of_two: list[Path], whole: Path, tmp_path: Path,
                                                 toolchain: Toolchain) -> None:
    st = _stored(parts_of_two, tmp_path)
    # a third shard of a 3-way split under the same run: refused, whatever N the merge is asked for
    third = triplets.build_dataset(whole, tmp_path / "p3", "ir", toolchain, jobs=2, shard=Shard(3, 3))
    shards.put_part(third, st, "run-1")
    for n in (2, 3):
        with pytest.raises(InputError) as e:
            triplets.merge_dataset(st, "run-1", n, tmp_path / "merged")
        assert "refusing to mix them; nothing merged" in _one_line(e)
    # a part copied over from another run: its manifest names that run
    other = _stored(parts_of_two, tmp_path / "o", run="run-2")
    st2 = _stored(parts_of_two[:1], tmp_path / "s2")
    for name in ("triplets.txt", "entity2id.txt", "shard.json"):
        st2.put(f"datasets/shards/run-1/2-of-2/{name}", other.get(f"datasets/shards/run-2/2-of-2/{name}"))
    with pytest.raises(InputError) as e:
        triplets.merge_dataset(st2, "run-1", 2, tmp_path / "merged")
    assert "says run 'run-2', shard '2/2': not shard 2/2 of run run-1" in _one_line(e)
    assert not (tmp_path / "merged").exists()


def test_corrupt_parts_are_detected(parts_of_two: list[Path], tmp_path: Path) -> None:
    st = _stored(parts_of_two, tmp_path)
    key = "datasets/shards/run-1/2-of-2/triplets.txt"
    good = st.get(key)
    st.put(key, good.replace(b"\n", b"\n1\t2\t0\n", 1))
    with pytest.raises(InputError) as e:
        triplets.merge_dataset(st, "run-1", 2, tmp_path / "merged")
    assert f"{key} does not match its checksum in shard.json: a corrupt shard" in _one_line(e)
    st.put(key, good)
    st.put("datasets/shards/run-1/1-of-2/shard.json", b'{"format": 1, "files": {"triplets.txt": ')
    with pytest.raises(InputError, match=r"1-of-2/shard.json is not valid JSON .*: a corrupt shard"):
        triplets.merge_dataset(st, "run-1", 2, tmp_path / "merged")
    assert not (tmp_path / "merged").exists()

    # a part edited on the worker is not uploaded
    copy = tmp_path / "copy"
    shutil.copytree(parts_of_two[0], copy)
    with (copy / "triplets.txt").open("ab") as f:
        f.write(b"1\t2\t0\n")
    with pytest.raises(InputError, match=r"triplets\.txt does not match its checksum in shard\.json: not uploaded"):
        shards.put_part(copy, FileStore(tmp_path / "s3"), "run-1")


def test_parts_that_disagree_are_not_one_run(parts_of_two: list[Path], tmp_path: Path) -> None:
    edited = tmp_path / "edited"
    shutil.copytree(parts_of_two[1], edited)
    m = json.loads((edited / shards.PART_MANIFEST).read_text())
    m["plan"]["seed"] = 7
    (edited / shards.PART_MANIFEST).write_text(json.dumps(m))
    st = _stored([parts_of_two[0], edited], tmp_path)
    with pytest.raises(InputError) as e:
        triplets.merge_dataset(st, "run-1", 2, tmp_path / "merged")
    assert "shard 2/2 differs from shard 1/2 in plan" in _one_line(e)


def test_bad_shard_arguments_are_usage_errors(whole: Path, tmp_path: Path, capsys) -> None:
    for argv in (["triplets", "ir", str(whole), "-o", str(tmp_path / "d"), "--shard", "3/2"],
                 ["corpus", "sources", str(CSRC), "-o", str(tmp_path / "c"), "--shard", "0/2"],
                 ["dataset", "merge", "--run", "a/b", "--shards", "2", "-o", str(tmp_path / "d")]):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's usage error
            code = e.code
        assert code == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and ("use I/N" in err[0] or "run id 'a/b'" in err[0]), err
    assert not (tmp_path / "d").exists() and not (tmp_path / "c").exists()
