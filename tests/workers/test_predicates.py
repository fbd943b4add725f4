"""Compare-predicate triplets (the farm's extension): read from hand-made text, from real modules through
llvm-dis, through the triplet cache (switching them changes the key) and through a sharded merge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.cli import main
from farm.errors import InputError, ToolError
from farm.objectstore import FileStore
from farm.toolchain import Toolchain
from tests.workers.conftest import read_table
from workers import cache, predicates, shards, triplets
from workers.dataset import DatasetSummary, write_dataset
from workers.shards import Shard
from workers.tripletcache import TripletCache

TEXT = b"""; ModuleID = 'x'
@s = constant [20 x i8] c"  %a = icmp eq i32 \\00"
define i1 @f(i32 %a, i32 %b, double %x, <4 x i32> %v) {
  %c1 = icmp slt i32 %a, %b
  %"odd name" = icmp samesign ult i32 %a, %b
  %c3 = fcmp fast olt double %x, 0.0
  %c4 = fcmp nnan ninf uno double %x, %x
  %c5 = icmp eq <4 x i32> %v, zeroinitializer
  %c6 = icmp slt i32 %b, %a
  %n = call i1 @icmp_eq(i32 %a)
  ret i1 %c1
}
"""


def test_reader_counts_every_compare_and_nothing_else() -> None:
    expected = {("ICmp", "ICMP_slt"): 2, ("ICmp", "ICMP_ult"): 1, ("FCmp", "FCMP_olt"): 1, ("FCmp", "FCMP_uno"): 1,
                ("ICmp", "ICMP_eq"): 1}
    assert predicates.read_text(TEXT) == expected
    for size in (1, 5, 64):  # however the stream is cut
        r = predicates.Reader()
        for i in range(0, len(TEXT), size):
            r.feed(TEXT[i:i + size])
        assert r.finish() == expected


def test_an_unknown_predicate_is_a_tool_error() -> None:
    with pytest.raises(ToolError, match="unknown icmp predicate 'sometimes'"):
        predicates.read_text(b"  %c = icmp sometimes i32 %a, %b\n")


def test_predicate_entities_are_llvms(toolchain: Toolchain) -> None:
    ids = predicates.entity_ids(toolchain.run("llvm-ir2vec", ["entities"]).stdout)
    names = {predicates.entity_name(k, p) for k, ps in (("icmp", predicates.ICMP), ("fcmp", predicates.FCMP))
             for p in ps}
    assert len(names) == 26 and names <= set(ids) and {"ICmp", "FCmp"} <= set(ids)
    assert {n for n in ids if n.startswith(("ICMP_", "FCMP_"))} == names


def _summary(max_relation: int) -> DatasetSummary:
    return DatasetSummary("ir", {}, {"modules": 1}, 1, [], [], 10, max_relation, ["O0"], None, 0,
                          predicates={"enabled": True, "compares": 3})


def test_the_predicate_relation_follows_llvms_last(toolchain: Toolchain, tmp_path: Path) -> None:
    entities = toolchain.run("llvm-ir2vec", ["entities"]).stdout
    ids = predicates.entity_ids(entities)
    out = write_dataset(tmp_path / "d", {b"1\t2\t0", b"1\t3\t4"}, entities, _summary(4),
                        {b"ICmp\tICMP_eq", b"FCmp\tFCMP_one"})
    _, rows = read_table(out / "train2id.txt")
    assert [ids["ICmp"], ids["ICMP_eq"], 5] in [[int(x) for x in r] for r in rows]
    _, relations = read_table(out / "relation2id.txt")
    assert relations[-1] == ["Predicate", "5"] and relations[4] == ["Arg2", "4"]
    m = json.loads((out / "manifest.json").read_text())
    assert m["predicates"] == {"enabled": True, "compares": 3, "relation": 5, "triplets": 2}
    assert m["max_relation"] == 4, "LLVM's own maximum stays as LLVM printed it"
    with pytest.raises(ToolError, match="'ICMP_maybe' is not in LLVM's entity list"):
        write_dataset(tmp_path / "e", {b"1\t2\t0"}, entities, _summary(4), {b"ICmp\tICMP_maybe"})


def test_mir_has_no_predicates(csrc_corpus: Path, toolchain: Toolchain, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="IR datasets only"):
        triplets.build_dataset(csrc_corpus, tmp_path / "m", "mir", toolchain, predicates=True)


def test_cli_flag_turns_them_off(csrc_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["triplets", "ir", str(csrc_corpus), "-o", str(tmp_path / "on"), "--opt-levels", "O0"]) == 0
    assert "predicates:" in capsys.readouterr().out
    assert main(["triplets", "ir", str(csrc_corpus), "-o", str(tmp_path / "off"), "--opt-levels", "O0",
                 "--no-predicates"]) == 0
    assert "predicates:" not in capsys.readouterr().out
    on, off = (json.loads((tmp_path / d / "manifest.json").read_text()) for d in ("on", "off"))
    assert off["predicates"] is None and on["predicates"]["triplets"] > 0
    assert on["triplets"]["unique"] == off["triplets"]["unique"] + on["predicates"]["triplets"]


def test_switching_predicates_changes_the_cache_key(csrc_corpus: Path, toolchain: Toolchain, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    bc = next(csrc_corpus.glob("*.bc"))
    store = TripletCache(tmp_path / "c", 1 << 20, "identity")
    on, off = (triplets.Plan("ir", ("O0",), predicates=p) for p in (True, False))
    assert store.key(bc, "ir", ["O0"], 300, on._options()) != store.key(bc, "ir", ["O0"], 300, off._options())
    assert store.key(bc, "ir", ["O0"], 300, on._options()) == store.key(bc, "ir", ["O0"], 300, on._options())
    # through real runs: a warm run is the cold run, the other switch is a miss, never the other's entry
    monkeypatch.setenv(cache.ENABLED_VARIABLE, "true")
    from workers import tripletcache

    cold = triplets.build_dataset(csrc_corpus, tmp_path / "cold", "ir", toolchain, opt_levels=["O0"])
    hits = tripletcache.STATS["hits"]
    warm = triplets.build_dataset(csrc_corpus, tmp_path / "warm", "ir", toolchain, opt_levels=["O0"])
    assert tripletcache.STATS["hits"] == hits + 4
    for name in ("train2id.txt", "relation2id.txt", "manifest.json"):
        assert (cold / name).read_bytes() == (warm / name).read_bytes()
    misses = tripletcache.STATS["misses"]
    plain = triplets.build_dataset(csrc_corpus, tmp_path / "plain", "ir", toolchain, opt_levels=["O0"],
                                   predicates=False)
    assert tripletcache.STATS["misses"] == misses + 4
    assert "Predicate" not in (plain / "relation2id.txt").read_text()


def test_sharded_merge_gives_the_unsharded_bytes_with_predicates(csrc_corpus: Path, toolchain: Toolchain,
                                                                 tmp_path: Path) -> None:
    one = triplets.build_dataset(csrc_corpus, tmp_path / "one", "ir", toolchain, jobs=2)
    st = FileStore(tmp_path / "store")
    for i in (1, 2, 3):
        part = triplets.build_dataset(csrc_corpus, tmp_path / f"p{i}", "ir", toolchain, jobs=2, shard=Shard(i, 3))
        shards.put_part(part, st, "run-p")
    merged = triplets.merge_dataset(st, "run-p", 3, tmp_path / "merged")
    for name in ("train2id.txt", "entity2id.txt", "relation2id.txt", "manifest.json"):
        assert (merged / name).read_bytes() == (one / name).read_bytes(), name
    assert json.loads((merged / "manifest.json").read_text())["predicates"]["triplets"] > 0
