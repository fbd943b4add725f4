"""The compiler-like speed benchmark: the Tiny C Compiler from Debian's `tcc` source, built with the real clang-22 at
-O2 per file and linked by ld.lld, compiling C (its own sources, a generated program) to the same x86-64 object
whatever build of it runs, trained for PGO on other C files than it is measured on, and its recipe and shipped
entry naming the very objects the benchmark links."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from regression import benchinputs, benchmarks, build, measure, pgo
from workers import debsrc, shipped
from workers.linked import check, driver

BENCH = benchmarks.lookup("tcc")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tcc's Debian source tree (with the recipe's config.h), fetched once for the module."""
    return benchmarks.fetch(BENCH, tmp_path_factory.mktemp("debsrc"))


@pytest.fixture(scope="module")
def heuristic(root: Path, tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> build.BuildResult:
    return build.build_benchmark(toolchain, BENCH, root, build.heuristic_variant(), tmp_path_factory.mktemp("h"),
                                 ["-O2"])


def _files(inputs: Path) -> dict[str, bytes]:
    return {p.relative_to(inputs).as_posix(): p.read_bytes() for p in sorted(inputs.rglob("*")) if p.is_file()}


def test_tcc_builds_from_its_debian_source_and_compiles_c_to_the_same_object(root: Path, heuristic, tmp_path: Path,
                                                                             toolchain: Toolchain) -> None:
    assert heuristic.error is None and heuristic.failures == {}
    assert {o.module for o in heuristic.objects} == set(BENCH.sources)
    assert driver(o.module for o in heuristic.objects) == "clang"  # C, linked as C
    assert measure.text_sizes(toolchain, [heuristic.binary])[heuristic.binary] > 150_000
    inputs = tmp_path / "inputs"
    digest = benchmarks.prepare_inputs(BENCH, root, inputs)
    assert benchmarks.prepare_inputs(BENCH, root, tmp_path / "again") == digest  # deterministic inputs
    self_compile = BENCH.workloads[0]
    assert self_compile.name == "self" and (inputs / "tcc-src" / "config.h").is_file()
    argv = self_compile.argv(heuristic.binary, inputs)
    obj = subprocess.run(argv, capture_output=True, cwd=tmp_path, timeout=120, check=True).stdout
    assert obj[:4] == b"\x7fELF" and int.from_bytes(obj[16:18], "little") == 1  # a relocatable object, on stdout
    run = measure.run_program(argv, cwd=tmp_path, timeout=120)
    assert run.output_sha256 == hashlib.sha256(obj).hexdigest()  # what the farm compares between builds
    (tmp_path / "self.o").write_bytes(obj)
    symbols = toolchain.run("llvm-nm", ["--defined-only", tmp_path / "self.o"]).stdout.decode()
    assert " T tcc_compile_string" in symbols and " T main" in symbols  # it compiled all of itself


def test_a_build_at_another_level_writes_byte_identical_objects(root: Path, heuristic, tmp_path: Path,
                                                                toolchain: Toolchain) -> None:
    """The comparison's premise (both variants compute the same thing) holds for tcc: its objects do not depend on
    how tcc itself was optimized; and no workload names a device as its output, which tcc would unlink."""
    other = build.build_benchmark(toolchain, BENCH, root, build.heuristic_variant(), tmp_path / "oz", ["-Oz"])
    assert other.error is None
    inputs = tmp_path / "inputs"
    benchmarks.prepare_inputs(BENCH, root, inputs)
    for w in BENCH.workloads:
        assert w.args[w.args.index("-o") + 1] == benchmarks.TO_STDOUT
        outputs = {measure.run_program(w.argv(b, inputs), cwd=tmp_path, timeout=120).output_sha256
                   for b in (heuristic.binary, other.binary)}
        assert len(outputs) == 1, w.name


def test_pgo_trains_tcc_on_other_c_files_and_its_profile_fits_the_build(root: Path, tmp_path: Path,
                                                                       toolchain: Toolchain) -> None:
    benchmarks.prepare_inputs(BENCH, root, tmp_path / "inputs")
    measured = _files(tmp_path / "inputs")
    benchmarks.prepare_training(BENCH, root, tmp_path / "train")
    trained = _files(tmp_path / "train")
    assert len(trained) == len(benchinputs.TCC_TESTS2) + 1
    assert not set(measured.values()) & set(trained.values())  # no file of one set in the other, by content
    profile = pgo.train(toolchain, BENCH, root, tmp_path / "pgo", ["-O2"], 2)
    assert profile.path.is_file() and profile.training_sha256 == benchmarks.input_digest(BENCH.training,
                                                                                          tmp_path / "train")
    assert (tmp_path / "pgo" / "46_grep.o").is_file()  # tests2's objects land in the run's directory
    used = build.build_benchmark(toolchain, BENCH, root, build.heuristic_variant(), tmp_path / "use", ["-O2"],
                                 profile_flags=pgo.use_flags(profile.path))
    assert used.error is None  # every function of the build has a fitting profile record


def test_recipe_lists_the_benchmark_sources_and_ships_its_program(root: Path) -> None:
    listed = [j.name for j in debsrc.jobs("tcc", root)]
    assert sorted(listed) == sorted(BENCH.sources)
    outputs = shipped.shipping("tcc").outputs
    check("tcc", outputs, listed)
    program = next(o for o in outputs if o.name == BENCH.binary)
    assert set(program.members(listed)) == set(BENCH.sources) and program.libs == BENCH.libs
