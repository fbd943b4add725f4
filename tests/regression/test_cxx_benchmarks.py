"""The C++ benchmarks (gperf, minisat) from their Debian sources, built and run with the real clang-22 and ld.lld:
compiled as C++, linked by clang++, their workloads run (minisat's answering in its exit status), measured by
`regress run`, and a C++ source that does not compile is one line naming the benchmark."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from farm.cli import main
from farm.errors import FarmError
from farm.toolchain import Toolchain
from regression import benchmarks, build, compare, measure
from regression.history import Skipped
from workers import debsrc, shipped
from workers.linked import check, driver


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the benchmarks' Debian sources are fetched, once for the module."""
    return tmp_path_factory.mktemp("debsrc")


def _needed(toolchain: Toolchain, binary: Path) -> list[str]:
    dynamic = toolchain.run("llvm-readobj", ["--needed-libs", binary]).stdout.decode()
    return [ln.strip() for ln in dynamic.splitlines() if ln.strip().startswith("lib")]


@pytest.mark.parametrize("name", ["gperf", "minisat"])
def test_cxx_benchmark_builds_as_cxx_and_runs_its_workloads(name: str, sources: Path, tmp_path: Path,
                                                            toolchain: Toolchain) -> None:
    bench = benchmarks.lookup(name)
    root = benchmarks.fetch(bench, sources)
    files = bench.source_files(root)
    assert files and all(f.suffix == ".cc" for f in files)
    assert driver(f.name for f in files) == "clang++"
    inputs = tmp_path / "inputs"
    digest = benchmarks.prepare_inputs(bench, root, inputs)
    assert benchmarks.prepare_inputs(bench, root, tmp_path / "again") == digest  # deterministic inputs
    result = build.build_benchmark(toolchain, bench, root, build.heuristic_variant(), tmp_path / "out", ["-Oz"])
    assert result.error is None and result.failures == {}
    assert {o.module for o in result.objects} == {f.relative_to(root).as_posix() for f in files}
    assert any(lib.startswith("libstdc++") for lib in _needed(toolchain, result.binary))  # linked by clang++
    assert measure.text_sizes(toolchain, [result.binary])[result.binary] > 30_000
    outputs = {}
    for w in bench.workloads:
        argv = w.argv(result.binary, inputs)
        outputs[w.name] = measure.run_program(argv, stdin=w.stdin_path(inputs), timeout=120, status=w.status)
    if name == "minisat":  # the answers, each a status: pigeonhole UNSAT (20), the planted problem SAT (10)
        assert [w.status for w in bench.workloads] == [20, 10]
        with pytest.raises(FarmError, match=r"^minisat exited with code 20 \(a run answers 10\)$"):
            measure.run_program([str(result.binary), "-verb=0", str(inputs / "pigeonhole-8.cnf")], status=10)


def test_policy_launcher_and_thinlto_build_cxx(sources: Path, tmp_path: Path, toolchain: Toolchain) -> None:
    """Both variants compile C++: the launcher (a built-in policy) per file and in a ThinLTO build's backends, whose
    thin link and link are clang++'s."""
    bench = benchmarks.lookup("gperf")
    root = benchmarks.fetch(bench, sources)
    heuristic = build.build_benchmark(toolchain, bench, root, build.heuristic_variant(), tmp_path / "h", ["-Oz"])
    launched = build.build_benchmark(toolchain, bench, root, build.policy_variant("heuristic", timeout=120),
                                     tmp_path / "p", ["-Oz"])
    assert launched.error is None
    sizes = measure.text_sizes(toolchain, [heuristic.binary, launched.binary])
    assert sizes[launched.binary] == sizes[heuristic.binary]  # the heuristic through the launcher decides the same
    thin = build.build_benchmark(toolchain, bench, root, build.policy_variant("heuristic", timeout=120),
                                 tmp_path / "t", ["-Oz"], thinlto=True)
    assert thin.error is None and thin.binary.is_file()
    inputs = tmp_path / "inputs"
    benchmarks.prepare_inputs(bench, root, inputs)
    w = bench.workloads[-1]
    assert measure.run_program(w.argv(thin.binary, inputs), timeout=120).output_sha256 == \
        measure.run_program(w.argv(heuristic.binary, inputs), timeout=120).output_sha256


def test_regress_run_measures_gperf_sizes(capsys: pytest.CaptureFixture) -> None:
    """`regress run --bench gperf --no-callgrind`: the binary's and every module's .text, both variants."""
    code = main(["regress", "run", "--bench", "gperf", "--no-callgrind", "--repeats", "0", "--no-publish",
                 "--builder", "cxx", "--run-id", "g1", "--jobs", "2"])
    out = capsys.readouterr().out
    run = compare.open_history().run("g1", "cxx")
    assert code == 0 and run.status == "complete" and run.config["benchmarks"] == ["gperf"]
    rows = {(m.subject, m.metric, m.policy): m for m in compare.open_history().measurements(run)}
    heur, pol = rows[("gperf", "text_size", "heuristic")], rows[("gperf", "text_size", "policy")]
    assert heur.kind == "binary" and heur.value == pol.value > 30_000
    assert {("gperf/src/main.cc", "text_size"), ("gperf/lib/hash.cc", "text_size")} <= {(s, m) for s, m, _ in rows}
    assert any(ln.startswith("gperf ") and "text_size" in ln for ln in out.splitlines())
    assert "Skipped" not in out and compare.open_history().skipped(run) == []


def test_cxx_source_that_does_not_compile_is_one_line_naming_the_benchmark(sources: Path, tmp_path: Path,
                                                                           toolchain: Toolchain) -> None:
    gperf = benchmarks.lookup("gperf")
    tree = tmp_path / "gperf"
    shutil.copytree(benchmarks.fetch(gperf, sources), tree)
    with open(tree / "src" / "version.cc", "a") as f:
        f.write("\ntemplate <class T> struct Broken { T t; int f() { return t.missing(; } };\n")
    bench = dataclasses.replace(gperf, local_dir=tree)
    rows, skipped = compare.measure_benchmark(toolchain, bench, [build.heuristic_variant()], tmp_path / "work",
                                              tmp_path / "unused", ("-Oz",), 2, 0, False)
    assert rows == []
    assert len(skipped) == 1 and isinstance(skipped[0], Skipped)
    s = skipped[0]
    assert (s.subject, s.variant) == ("gperf", "heuristic") and "\n" not in s.reason
    assert s.reason.startswith("1 source(s) failed, first src/version.cc: clang exited with code 1: ")
    assert "version.cc" in s.reason.split(": ", 2)[2]


@pytest.mark.parametrize(("bench_name", "package", "output"), [("gperf", "gperf", "gperf"),
                                                               ("minisat", "minisat2", "minisat")])
def test_recipe_lists_the_benchmark_sources_and_ships_its_program(bench_name: str, package: str, output: str,
                                                                  sources: Path) -> None:
    """The package's recipe (a corpus of it) lists what the benchmark compiles, and the program its shipped entry
    links is the benchmark's binary, made of the same modules."""
    bench = benchmarks.lookup(bench_name)
    assert bench.package == package and bench.binary == output
    root = benchmarks.fetch(bench, sources)
    listed = [j.name for j in debsrc.jobs(package, root)]
    built = {f.relative_to(root).as_posix() for f in bench.source_files(root)}
    assert built <= set(listed) and all(n.endswith(".cc") for n in listed)
    assert not {"lib/getopt.c", "lib/getopt1.c", "minisat/core/Main.cc"} & set(listed)  # empty, or not built
    outputs = shipped.shipping(package).outputs
    check(package, outputs, listed)
    program = next(o for o in outputs if o.name == output)
    needs = [m for o in outputs if o.name in program.needs for m in o.members(listed)]
    assert set(program.members(listed)) | set(needs) == built
