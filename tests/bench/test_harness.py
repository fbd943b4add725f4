"""The bench harness's pure parts: the alternation order, medians and ratios, the header's fields, a failed
command's one line, merged corpora, free ports. No timing is asserted: the benches measure, the tests do not."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from bench.harness import compare, corpora, header, loopback, timing
from farm.errors import ToolError


def test_each_round_runs_every_variant_in_order_after_a_warm_up_whose_results_are_dropped():
    assert compare.order(["base", "ours"], 2) == [(0, "base"), (0, "ours"), (1, "base"), (1, "ours"),
                                                  (2, "base"), (2, "ours")]
    assert compare.order(["base", "ours"], 2, warmup=False) == [(1, "base"), (1, "ours"), (2, "base"), (2, "ours")]
    calls, rounds = [], []
    counter = iter(range(100))

    def variant(name):
        def run():
            calls.append(name)
            return next(counter)
        return run

    got = compare.alternate({"base": variant("base"), "ours": variant("ours")}, 3, each_round=rounds.append)
    assert calls == ["base", "ours"] * 4
    assert rounds == [0, 1, 2, 3]
    assert got == {"base": [2, 4, 6], "ours": [3, 5, 7]}  # the warm-up's 0 and 1 dropped
    assert compare.alternate({"a": variant("a")}, 2, warmup=False) == {"a": [8, 9]}


def test_medians_the_ratio_of_medians_and_the_median_of_each_rounds_ratio():
    base, ours = [1.0, 2.0, 10.0], [1.5, 2.0, 5.0]
    assert compare.median(base) == 2.0
    assert compare.ratio(ours, base) == 1.0
    assert compare.paired(ours, base) == 1.0  # per round 1.5, 1.0, 0.5
    assert compare.paired([3.0, 3.0], [1.0, 2.0]) == 2.25
    rows = compare.compare({"base": base, "ours": [2.0, 4.0, 30.0]}, "base")
    assert list(rows) == ["base", "ours"]
    assert rows["base"] == compare.Row("base", 2.0, 1.0, 1.0)
    assert rows["ours"] == compare.Row("ours", 4.0, 2.0, 2.0)
    with pytest.raises(ValueError, match="same rounds"):
        compare.paired([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="no measurements"):
        compare.median([])


def test_the_header_is_one_line_of_its_fields_in_order():
    line = header.format_header({"llvm": "LLVM 22.1.8", "bench": "bench_x", "cores": "2 cores"})
    assert line == "# bench_x | 2 cores | LLVM 22.1.8"
    with pytest.raises(KeyError, match="colour"):
        header.format_header({"bench": "x", "colour": "blue"})


class _Toolchain:
    version, commit = "22.1.8", "0123456789abcdef0123456789abcdef01234567"


class _Missing:
    @property
    def version(self):
        raise ToolError("llvm-config not found in /nowhere")


def test_the_headers_fields_say_cores_load_commit_and_llvm(tmp_path: Path):
    f = header.fields(_Toolchain(), bench="bench_x")
    assert list(f) == list(header.FIELDS)
    assert f["bench"] == "bench_x" and f["cores"] == f"{os.cpu_count()} cores"
    assert len(f["load"].split()) == 4  # "load" and the 1, 5 and 15 minute averages
    assert f["llvm"] == "LLVM 22.1.8 (0123456789ab)"
    assert header.llvm(_Missing()) == "unavailable (llvm-config not found in /nowhere)"
    assert header.commit(tmp_path) == "unknown"  # not a git checkout
    repo = tmp_path / "repo"

    def git(*args):
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                       capture_output=True)

    repo.mkdir()
    git("init", "-q")
    (repo / "f").write_text("1")
    git("add", "f")
    git("commit", "-qm", "one")
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert header.commit(repo) == head
    (repo / "f").write_text("2")
    assert header.commit(repo) == head + "+changes"
    (repo / "untracked").write_text("")
    (repo / "f").write_text("1")
    assert header.commit(repo) == head  # untracked files are not the commit's code


def test_a_failed_command_ends_the_bench_with_one_line_naming_it():
    with pytest.raises(SystemExit) as e:
        timing.run("echo some noise >&2; echo the reason >&2; exit 3", shell=True)
    assert str(e.value.code) == "bench command failed with 3: echo some noise >&2; echo the reason >&2; exit 3: " \
                                "the reason"
    took = timing.run(["true"])
    assert took.peak_kib > 0 and took.peak_mib == took.peak_kib / 1024
    with timing.Meter(include_self=True) as m:
        subprocess.run(["true"], check=True)
    assert m.timing is not None and m.timing.peak_kib > 0


def _corpus(root: Path, names: list[str]) -> Path:
    root.mkdir()
    for n in names:
        (root / n).parent.mkdir(parents=True, exist_ok=True)
        (root / f"{n}.bc").write_bytes(n.encode())
        (root / f"{n}.cmd").write_text("-Oz")
    (root / "corpus_description.json").write_text(json.dumps({"modules": names}))
    return root


def test_merged_corpora_prefix_each_module_with_its_package_and_link_its_files(tmp_path: Path):
    a = _corpus(tmp_path / "a", ["x", "sub/y"])
    b = _corpus(tmp_path / "b", ["x"])
    out = corpora.merged_corpus(tmp_path / "merged", {"pa": a, "pb": b})
    desc = json.loads((out / "corpus_description.json").read_text())
    assert desc["modules"] == ["pa/sub/y", "pa/x", "pb/x"] and desc["source"] == "merged: pa pb"
    assert (out / "pa" / "sub" / "y.bc").samefile(a / "sub" / "y.bc")
    assert (out / "pb" / "x.cmd").samefile(b / "x.cmd")
    assert corpora.merged_corpus(out, {}) == out  # made once: a second call reads nothing


def test_free_ports_differ_and_until_returns_the_first_true_value():
    ports = loopback.free_ports(3)
    assert len(set(ports)) == 3 and all(p > 0 for p in ports)
    answers = iter([0, None, "ready"])
    assert loopback.until(lambda: next(answers), 5, "answer", poll=0) == "ready"
    with pytest.raises(TimeoutError, match="no answer after 0 s"):
        loopback.until(lambda: False, 0, "answer", poll=0)
