"""A corpus from a CMake project that is configured, never built: real CMake, Ninja and clang-22.

tests/data/cmake_project is shaped like LLVM: a generator program built from source writes
headers that TUs include (each header in its own custom target), libraries link each other, a
program waits for a helper it would run, and one TU does not compile.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from farm.errors import InputError, ToolError
from farm.toolchain import Toolchain
from tests.conftest import DATA
from workers import cmake_corpus, corpus

PROJECT = DATA / "cmake_project"
ALL = ["lib/core/lookup.cpp", "lib/core/table.c", "lib/extra/extra.c", "tools/app/main.c",
       "tools/helper/helper.c", "tools/mkheader/mkheader.c"]


def project(where: Path) -> Path:
    """A copy of the project outside this repository (whose git commit would otherwise be its lineage)."""
    dst = where / "src"
    shutil.copytree(PROJECT, dst)
    return dst


def built_objects(build: Path) -> list[str]:
    return sorted(p.relative_to(build).as_posix() for p in build.rglob("*.o"))


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> tuple[Path, Path, corpus.Corpus]:
    """(source, build, corpus) of the whole project."""
    root = tmp_path_factory.mktemp("whole")
    src = project(root)
    c = cmake_corpus.from_cmake(src, root / "corpus", toolchain, build=root / "build")
    return src, root / "build", c


def test_every_tu_compiles_after_its_generated_headers_and_nothing_is_linked(whole, toolchain: Toolchain) -> None:
    src, build, c = whole
    assert [m.name for m in c.modules] == ALL
    assert (build / "core_tables.h").is_file() and (build / "extra_tables.h").is_file()
    assert (build / "mkheader").is_file(), "the generator is built, as tablegen must be"
    # Only the generator's own object: no TU of the corpus was compiled to an object, nothing linked,
    # and the helper that app merely waits for was left out.
    assert built_objects(build) == ["CMakeFiles/mkheader.dir/tools/mkheader/mkheader.c.o"]
    assert not any((build / f).exists() for f in ("helper", "app", "libcore.a", "libextra.a"))
    # Pre-optimization bitcode compiled with each TU's own flags (the target's define, Release's -O3).
    cmd = (c.path / "lib/core/lookup.cpp.cmd").read_bytes().split(b"\0")
    assert b"-DCORE_SCALE=3" in cmd and b"-O3" in cmd and b"-disable-llvm-passes" in cmd
    ir = toolchain.run("llvm-dis", [c.path / "lib/core/table.c.bc", "-o", "-"]).stdout.decode()
    assert "@core_table" in ir and "alloca" in ir
    assert c.origin == f"cmake:{src}" and c.lineage is None


def test_a_tu_that_does_not_compile_is_skipped_and_listed(whole) -> None:
    src, build, c = whole
    assert c.skipped == [{"module": "lib/broken/broken.c", "reason": "clang exited with code 1: "
                          f"{src}/lib/broken/broken.c:3:13: error: expected expression on lib/broken/broken.c"}]
    assert json.loads((c.path / corpus.SKIPPED).read_text()) == c.skipped
    # The project asks for coloured diagnostics, as LLVM's does under Ninja; the reason stays plain text.
    assert "-fdiagnostics-color" in (build / "compile_commands.json").read_text()
    assert b"-fdiagnostics-color" not in (c.path / "lib/core/table.c.cmd").read_bytes()


def test_prerequisites_come_from_the_ninja_graph(whole) -> None:
    """The walk keeps custom-command outputs only: per TU, exactly the headers its target and its
    link dependencies generate."""
    src, build, _ = whole
    chosen = dict((j.name, node) for j, node in cmake_corpus.select(build / "compile_commands.json", src, build))
    need = cmake_corpus.prerequisites(build, [chosen["lib/core/table.c"]])
    assert need.nodes == {"core_tables.h": "core_gen"}
    need = cmake_corpus.prerequisites(build, [chosen["tools/app/main.c"]])
    assert need.nodes == {"core_tables.h": "core_gen", "extra_tables.h": "extra_gen"}
    assert need.left_out >= 2, "the helper app waits for and the generator itself are not built for their own sake"
    assert cmake_corpus.prerequisites(build, [chosen["tools/helper/helper.c"]]).nodes == {}


def test_include_selects_tus_and_builds_only_their_prerequisites(tmp_path: Path, toolchain: Toolchain) -> None:
    src = project(tmp_path)
    build = tmp_path / "build"
    c = cmake_corpus.from_cmake(src, tmp_path / "corpus", toolchain, build=build, include=["lib/core"])
    assert [m.name for m in c.modules] == ["lib/core/lookup.cpp", "lib/core/table.c"] and c.skipped == []
    assert (build / "core_tables.h").is_file()
    assert not (build / "extra_tables.h").exists(), "a header only lib/extra needs must not be generated"
    assert built_objects(build) == ["CMakeFiles/mkheader.dir/tools/mkheader/mkheader.c.o"]
    assert c.lineage == {"include": ["lib/core"]}

    two = cmake_corpus.from_cmake(src, tmp_path / "two", toolchain, build=build,
                                  include=["lib/extra/", "tools/app/main.c"])
    assert [m.name for m in two.modules] == ["lib/extra/extra.c", "tools/app/main.c"]
    assert (build / "extra_tables.h").is_file()
    with pytest.raises(InputError, match=r"^--include lib/nothing matches no translation unit of "):
        cmake_corpus.from_cmake(src, tmp_path / "none", toolchain, build=build, include=["lib/nothing"])
    with pytest.raises(InputError, match="relative to the source tree"):
        cmake_corpus.from_cmake(src, tmp_path / "none", toolchain, build=build, include=["../elsewhere"])
    assert not (tmp_path / "none").exists()


def test_a_failing_generator_is_one_line_naming_its_target(tmp_path: Path, toolchain: Toolchain) -> None:
    src = project(tmp_path)
    with pytest.raises(ToolError) as e:
        cmake_corpus.from_cmake(src, tmp_path / "corpus", toolchain, build=tmp_path / "build",
                                defines=["FARM_GENERATOR_ARGS=fail"], include=["lib/core"])
    assert str(e.value) == "generator target core_gen failed building core_tables.h: mkheader: error: asked to fail"
    assert not (tmp_path / "corpus").exists()
    assert not list(tmp_path.glob(".corpus.*")), "no temporary output left behind"


def test_a_failing_configure_is_one_line_with_cmakes_error(tmp_path: Path, toolchain: Toolchain) -> None:
    src = project(tmp_path)
    with pytest.raises(InputError) as e:
        cmake_corpus.from_cmake(src, tmp_path / "corpus", toolchain, build=tmp_path / "build",
                                defines=["FARM_FAIL_CONFIGURE=ON"])
    assert str(e.value) == (f"CMake configure of {src} failed: CMake Error at CMakeLists.txt:7 (message): "
                            "configure refused: FARM_FAIL_CONFIGURE is set")
    assert not (tmp_path / "corpus").exists()


def test_refused_before_any_work(tmp_path: Path, toolchain: Toolchain) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "a.c").write_text("int a;\n")
    with pytest.raises(InputError, match=r"plain is not a CMake project: no CMakeLists.txt$"):
        cmake_corpus.from_cmake(tmp_path / "plain", tmp_path / "corpus", toolchain, build=tmp_path / "build")
    with pytest.raises(InputError, match="expected VAR=VALUE"):
        cmake_corpus.from_cmake(PROJECT, tmp_path / "corpus", toolchain, build=tmp_path / "build",
                                defines=["-Wdev"])
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match="refusing to replace it"):
        cmake_corpus.from_cmake(PROJECT, tmp_path / "mine", toolchain, build=tmp_path / "build")
    assert not (tmp_path / "build").exists(), "nothing was configured"
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_a_sample_is_chosen_before_anything_is_built(tmp_path: Path, toolchain: Toolchain) -> None:
    """A consumer that needs N modules (the policy's retraining) builds the prerequisites and TUs of N:
    the sample is the name-hash rule training samples by, and it is recorded in the lineage."""
    src = project(tmp_path)
    c = cmake_corpus.from_cmake(src, tmp_path / "corpus", toolchain, build=tmp_path / "build", sample=2)
    everything = [*ALL, "lib/broken/broken.c"]
    chosen = corpus.sample_names(everything, 2)
    assert len(chosen) == 2 and chosen == corpus.sample_names(reversed(everything), 2), "order does not matter"
    assert {m.name for m in c.modules} | {s["module"] for s in c.skipped} == chosen
    assert c.lineage == {"sample": 2}
    build = tmp_path / "build"
    nodes = dict((j.name, n) for j, n in cmake_corpus.select(build / "compile_commands.json", src, build))
    need = cmake_corpus.prerequisites(build, [nodes[name] for name in sorted(chosen)])
    for header in ("core_tables.h", "extra_tables.h"):  # only what the sample needs was generated
        assert (build / header).is_file() == (header in need.nodes), (header, need.nodes)
    assert len(list(c.path.rglob("*.bc"))) == len(c.modules)
    assert corpus.sample_names(everything, None) == set(everything) == corpus.sample_names(everything, 99)
