"""A package's linked files, made by ld.lld from one object per module (workers/linked.py), with the real clang-22."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from farm.errors import InputError, ToolError
from farm.toolchain import Toolchain, text_parts, text_sizes
from tests import cxxpackage
from workers.linked import driver, link
from workers.shipped import Output


def _objects(corpus: Path, out: Path, toolchain: Toolchain) -> dict[str, Path]:
    """Each module of the corpus compiled at -Oz, by name, in the corpus's order."""
    out.mkdir(parents=True, exist_ok=True)
    objs = {}
    for i, m in enumerate(json.loads((corpus / "corpus_description.json").read_text())["modules"]):
        obj = out / f"{i}.o"
        toolchain.run("clang", ["-Oz", "-c", corpus / f"{m}.bc", "-o", obj])
        objs[m] = obj
    return objs


def test_a_cxx_package_links_its_library_and_program_and_the_linker_keeps_one_copy_of_each_template(
        cxx_corpus: Path, tmp_path: Path, toolchain: Toolchain) -> None:
    objs = _objects(cxx_corpus, tmp_path / "o", toolchain)
    linked = link("bag", cxxpackage.OUTPUTS, objs, tmp_path / "out", toolchain)
    assert list(linked.outputs) == ["libbag.so.1", "bagtool"]
    assert linked.outputs == {n: s for n, s in zip(linked.outputs, text_sizes(
        toolchain, [tmp_path / "out" / n for n in linked.outputs]).values(), strict=True)}
    run = subprocess.run([tmp_path / "out" / "bagtool", "x", "y", "z"], capture_output=True, text=True, timeout=60,
                         env={"LD_LIBRARY_PATH": str(tmp_path / "out")})
    assert run.returncode == 0 and int(run.stdout) > 0, run.stderr  # a real program, linked against the library
    lib = [objs[m] for m in objs if m.startswith("lib/")]
    parts = text_parts(toolchain, lib)
    groups = [set(parts[o].groups) for o in lib]
    assert groups[0] and groups[0] == groups[1] == groups[2], "every module carries the same template copies"
    assert all(parts[o].text == n for o, n in text_sizes(toolchain, lib).items())  # llvm-size's figure, split
    assert all(parts[o].without(groups[0]) == parts[o].own < parts[o].text for o in lib)


def test_bad_outputs_are_one_line_naming_the_package(cxx_corpus: Path, tmp_path: Path, toolchain: Toolchain) -> None:
    objs = _objects(cxx_corpus, tmp_path / "o", toolchain)
    lib, _ = cxxpackage.OUTPUTS
    with pytest.raises(InputError) as e:
        link("bag", (Output("libbag.so.1", "shared", ("lib/*.cc",)),), objs, tmp_path / "a", toolchain)
    assert str(e.value).startswith("package bag: output libbag.so.1 names 'lib/*.cc', which no module of its corpus ")
    with pytest.raises(ToolError) as e:
        link("bag", (lib, Output("bagtool", "program", ("main.cpp",), ("libbag.so.1",), ("-lno-such-lib-mlgo",))),
             objs, tmp_path / "b", toolchain)
    assert str(e.value) == ("package bag: linking bagtool failed: ld.lld: error: unable to find library "
                            "-lno-such-lib-mlgo")
    with pytest.raises(ToolError, match=r"^package bag: linking libbag.so.1 failed: ld.lld: error: undefined symbol"):
        # a library missing modules its code calls (main.cpp calls beta_sum): -z defs, not a smaller library
        link("bag", (Output("libbag.so.1", "shared", ("lib/alpha.cpp", "main.cpp")),), objs, tmp_path / "c", toolchain)
    with pytest.raises(ToolError, match=r"^package bag: cannot link libbag.so.1: module lib/beta.cpp did not compile$"):
        link("bag", cxxpackage.OUTPUTS, {**objs, "lib/beta.cpp": None}, tmp_path / "d", toolchain)
    with pytest.raises(InputError, match=r"^package bag: workers/data/shipped.toml declares no linked outputs$"):
        link("bag", (), objs, tmp_path / "e", toolchain)


def test_the_driver_is_clang_plus_plus_when_any_module_is_cxx_a_second_thinlto_backend_too() -> None:
    """A ThinLTO corpus names the second backend of a module two outputs link `MODULE@OUTPUT` (workers/thinlto.py):
    an output made only of such backends (fasttext's program, which compiles the library's sources again) is still
    C++ and must link with libstdc++."""
    assert driver(["a.c", "lib/b.c"]) == "clang"
    assert driver(["a.c", "lib/b.cc"]) == "clang++"
    assert driver(["src/main.cc@fasttext", "src/args.cc@fasttext"]) == "clang++"
    assert driver(["src/main.c@prog"]) == "clang"
