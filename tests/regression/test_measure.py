"""Measurements and builds against the real clang-22, llvm-size and valgrind."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from farm.errors import FarmError, InputError
from farm.toolchain import Toolchain
from regression import benchmarks, build, measure
from tests.conftest import DATA
from tests.regression.conftest import with_corrupt_module

CSRC = DATA / "csrc"


def _readonly_alloc_bytes(toolchain: Toolchain, obj: Path) -> int:
    """Berkeley `text` derived independently: sizes of allocated, non-writable sections (llvm-readelf)."""
    out = toolchain.run("llvm-readelf", ["-S", "--wide", obj]).stdout.decode()
    total = 0
    for line in out.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([A-Za-z]*)",
                     line)
        if m and "A" in m.group(3) and "W" not in m.group(3):
            total += int(m.group(2), 16)
    return total


@pytest.fixture(scope="module")
def objects(toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("objs")
    objs = []
    for src in sorted(CSRC.glob("*.c")):
        obj = out / f"{src.stem}.o"
        toolchain.run("clang", ["-Oz", "-c", src, "-o", obj])
        objs.append(obj)
    return objs


@pytest.fixture(scope="module")
def bench_binary(toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bin") / "bench"
    toolchain.run("clang", ["-Oz", *sorted(CSRC.glob("*.c")), "-lm", "-o", out])
    return out


def test_text_sizes_are_berkeley_text(toolchain: Toolchain, objects: list[Path]) -> None:
    sizes = measure.text_sizes(toolchain, objects)
    assert set(sizes) == set(objects)
    for obj in objects:
        assert sizes[obj] == _readonly_alloc_bytes(toolchain, obj) > 0


def test_text_sizes_batches_keep_files_apart(toolchain: Toolchain, objects: list[Path]) -> None:
    together = measure.text_sizes(toolchain, objects, chunk=3)
    alone = {o: measure.text_sizes(toolchain, [o])[o] for o in objects}
    assert together == alone
    assert len(set(alone.values())) > 1  # the files really differ, so a mix-up would show


def test_text_size_of_a_non_object_is_a_tool_error(toolchain: Toolchain, tmp_path: Path) -> None:
    junk = tmp_path / "junk.o"
    junk.write_text("not an object\n")
    with pytest.raises(FarmError, match="llvm-size"):
        measure.text_sizes(toolchain, [junk])


def test_callgrind_counts_are_repeatable_and_scale(bench_binary: Path) -> None:
    small = [measure.callgrind_instructions([str(bench_binary), "4000"]) for _ in range(2)]
    large, digest = measure.callgrind_instructions([str(bench_binary), "8000"])
    assert small[0] == small[1]
    assert large > small[0][0] > 0
    direct = subprocess.run([bench_binary, "8000"], capture_output=True, check=True).stdout
    assert digest == hashlib.sha256(direct).hexdigest()


def test_program_failure_is_one_line(tmp_path: Path) -> None:
    script = tmp_path / "fails.sh"
    script.write_text("#!/bin/sh\necho 'error: input is bad' >&2\nexit 3\n")
    script.chmod(0o755)
    with pytest.raises(FarmError) as e:
        measure.run_program([str(script)])
    assert str(e.value) == "fails.sh exited with code 3: error: input is bad"
    with pytest.raises(FarmError, match=r"timed out after 0\.2s"):
        measure.run_program(["/bin/sleep", "5"], timeout=0.2)


def test_a_workload_can_answer_in_its_exit_status(tmp_path: Path) -> None:
    """A SAT solver exits 10 or 20 when it did its work (regression/benchmarks.py `Workload.status`): that status is
    a run, any other (0 included) the one-line failure."""
    script = tmp_path / "solver.sh"
    script.write_text("#!/bin/sh\necho SATISFIABLE\nexit 10\n")
    script.chmod(0o755)
    assert measure.run_program([str(script)], status=10).output_sha256 == hashlib.sha256(b"SATISFIABLE\n").hexdigest()
    count, digest = measure.callgrind_instructions([str(script)], status=10)  # valgrind exits as its client does
    assert count > 0 and digest == hashlib.sha256(b"SATISFIABLE\n").hexdigest()
    assert len(measure.interleaved_wall_times({"a": ([str(script)], None)}, 2, status=10)["a"]) == 2
    with pytest.raises(FarmError) as e:
        measure.run_program(["/bin/true"], status=10)
    assert str(e.value) == "true exited with code 0 (a run answers 10)"
    with pytest.raises(FarmError, match=r"^solver.sh exited with code 10$"):
        measure.run_program([str(script)])


def test_interleaved_wall_times_sample_every_program(bench_binary: Path, tmp_path: Path) -> None:
    log = tmp_path / "order.log"
    progs = {}
    for name in ("a", "b"):
        script = tmp_path / name
        script.write_text(f"#!/bin/sh\necho {name} >> {log}\nexec {bench_binary} 1000\n")
        script.chmod(0o755)
        progs[name] = ([str(script)], None)
    samples = measure.interleaved_wall_times(progs, 3)
    assert {k: len(v) for k, v in samples.items()} == {"a": 3, "b": 3}
    assert all(s > 0 for v in samples.values() for s in v)
    assert log.read_text().split() == ["a", "b", "b", "a", "a", "b"]  # rotated order each round


def test_compile_failure_keeps_the_compilers_message(toolchain: Toolchain, tmp_path: Path) -> None:
    bad = build.compile_object(toolchain, build.heuristic_variant(), "syntax_error.c",
                               ["-c", "-Oz", str(DATA / "bad" / "syntax_error.c")], tmp_path / "bad.o")
    assert bad.obj is None and not (tmp_path / "bad.o").exists()
    assert bad.error.startswith("clang exited with code 1: ") and "error" in bad.error and "\n" not in bad.error


def test_corpus_build_skips_a_bad_module(toolchain: Toolchain, compare_corpus: Path, tmp_path: Path) -> None:
    corpus = with_corrupt_module(compare_corpus, tmp_path / "corpus")
    result = build.build_corpus(toolchain, corpus, build.heuristic_variant(), tmp_path / "out", ["-Oz"])
    assert set(result.failures) == {"corrupt"}
    modules = json.loads((corpus / "corpus_description.json").read_text())["modules"]
    assert set(result.ok_objects) == set(modules) - {"corrupt"}
    assert all(o.obj.is_file() and o.seconds > 0 for o in result.ok_objects.values())


def test_malformed_corpus_description(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no corpus_description\.json"):
        build.corpus_modules(tmp_path)
    (tmp_path / "corpus_description.json").write_text('{"modules": []}')
    with pytest.raises(InputError, match="lists no modules"):
        build.corpus_modules(tmp_path)


def test_local_benchmark_builds_and_runs(toolchain: Toolchain, tmp_path: Path) -> None:
    bench = benchmarks.local_benchmark(CSRC, ("3000",))
    result = build.build_benchmark(toolchain, bench, CSRC, build.heuristic_variant(), tmp_path, ["-Oz"])
    assert result.error is None and result.binary.is_file()
    assert sorted(result.ok_objects) == sorted(p.name for p in CSRC.glob("*.c"))
    argv = bench.workloads[0].argv(result.binary, tmp_path)
    expected = subprocess.run([result.binary, "3000"], capture_output=True, check=True).stdout
    assert measure.run_program(argv).output_sha256 == hashlib.sha256(expected).hexdigest()


def test_benchmark_with_a_broken_source_reports_it(toolchain: Toolchain, tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(CSRC, src)
    shutil.copy(DATA / "bad" / "syntax_error.c", src)
    bench = benchmarks.local_benchmark(src)
    result = build.build_benchmark(toolchain, bench, src, build.heuristic_variant(), tmp_path / "out", ["-Oz"])
    assert result.binary is None
    assert result.error.startswith("1 source(s) failed, first syntax_error.c: clang exited with code 1")


def test_benchmark_catalogue_is_consistent() -> None:
    for name, bench in benchmarks.BENCHMARKS.items():
        assert bench.name == name and bench.package and bench.workloads
        for w in bench.workloads:
            for arg in w.args:
                if arg.startswith("{scripts}/"):
                    assert (benchmarks.SCRIPTS / arg.removeprefix("{scripts}/")).is_file()
    with pytest.raises(InputError, match="unknown benchmark 'nope': known are bzip2, gperf, lua, minisat, tcc, zlib"):
        benchmarks.lookup("nope")


def test_compression_inputs_are_real_and_deterministic(tmp_path: Path) -> None:
    import gzip

    bench = benchmarks.lookup("zlib")
    first = benchmarks.prepare_inputs(bench, CSRC, tmp_path / "a")
    second = benchmarks.prepare_inputs(bench, CSRC, tmp_path / "b")
    assert first == second
    text = (tmp_path / "a" / "input.txt").read_bytes()
    assert gzip.decompress((tmp_path / "a" / "input.txt.gz").read_bytes()) == text
    assert (CSRC / "bench_main.c").read_bytes() in text
