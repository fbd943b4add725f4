"""ThinLTO corpora (workers/thinlto.py): a package's modules as a distributed ThinLTO build's backends compile them,
with the real clang-22 and lld."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from farm.errors import InputError, ToolError
from farm.toolchain import Toolchain, text_sizes
from tests import cxxpackage
from workers.corpus import load
from workers.linked import link
from workers.shipped import Output
from workers.thinlto import thin_corpus


@pytest.fixture(scope="module")
def thin(cxx_corpus: Path, tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain):
    out = tmp_path_factory.mktemp("thin") / "corpus"
    return thin_corpus("bag", load(cxx_corpus), cxxpackage.OUTPUTS, out, toolchain, jobs=2)


def _section(toolchain: Toolchain, f: Path, name: str) -> int:
    for line in toolchain.run("llvm-readelf", ["-S", "-W", f]).stdout.decode().splitlines():
        cols = line.replace("[ ", "[").split()
        if len(cols) > 5 and cols[1] == name:
            return int(cols[5], 16)
    raise AssertionError(f"no {name} in {f}")


def test_a_thinlto_corpus_holds_each_module_with_its_index_and_links_as_lld_links_in_process(
        thin, tmp_path: Path, toolchain: Toolchain) -> None:
    """Each backend compiled with its index and the objects linked give the library lld's own ThinLTO links from
    the same pre-link bitcode: the same `.text`."""
    from policytrain.units import corpus_units

    corpus, outputs = thin
    assert json.loads((corpus.path / "corpus_description.json").read_text())["has_thinlto"] is True
    units = corpus_units(corpus.path)
    assert [u.name for u in units] == ["lib/alpha.cpp", "lib/beta.cpp", "lib/gamma.cpp", "main.cpp"]
    assert all(u.flags[:3] == ("-Oz", "-x", "ir") and u.flags[3] == f"-fthinlto-index={corpus.path}/{u.name}.thinlto.bc"
               for u in units)
    assert [o.name for o in outputs] == ["libbag.so.1", "bagtool"] and outputs[0].members(
        [u.name for u in units]) == ["lib/alpha.cpp", "lib/beta.cpp", "lib/gamma.cpp"]
    objs = {}
    for i, u in enumerate(units):
        objs[u.name] = tmp_path / f"{i}.o"
        toolchain.run("clang", u.argv(objs[u.name])[1:])
    linked = link("bag", outputs, objs, tmp_path / "out", toolchain)
    lib = [str(corpus.path / f"{n}.bc") for n in ("lib/alpha.cpp", "lib/beta.cpp", "lib/gamma.cpp")]
    toolchain.run("clang++", ["-fuse-ld=lld", "-flto=thin", "-Oz", "-shared", "-Wl,-soname,libbag.so.1", "-o",
                              tmp_path / "inproc.so", *(f"-Wl,{p}" for p in lib)])
    assert _section(toolchain, tmp_path / "out" / "libbag.so.1", ".text") == _section(
        toolchain, tmp_path / "inproc.so", ".text")
    assert linked.outputs["libbag.so.1"] == text_sizes(toolchain, [tmp_path / "out" / "libbag.so.1"])[
        tmp_path / "out" / "libbag.so.1"]


def test_backends_through_the_policy_host_with_the_heuristic_give_the_objects_plain_clang_gives(
        thin, tmp_path: Path, toolchain: Toolchain) -> None:
    """The launcher and host drive a ThinLTO backend as they drive a per-file compile: answering what LLVM's heuristic
    would, every object is the object of the same backend without a policy."""
    from policytrain.explore import ReplayPolicy, compile_object
    from policytrain.units import corpus_units

    corpus, _ = thin
    for i, u in enumerate(corpus_units(corpus.path)):
        plain, hosted = tmp_path / f"p{i}.o", tmp_path / f"h{i}.o"
        toolchain.run("clang", u.argv(plain)[1:])
        assert compile_object(u, ReplayPolicy(None), toolchain, hosted) is None
        assert hosted.read_bytes() == plain.read_bytes(), u.name


def test_a_module_two_outputs_link_is_two_backends(cxx_corpus: Path, tmp_path: Path, toolchain: Toolchain) -> None:
    both = (Output("libbag.so.1", "shared", ("lib/*.cpp",)),
            Output("bagtool", "program", ("main.cpp", "lib/alpha.cpp")))
    corpus, outputs = thin_corpus("bag", load(cxx_corpus), both, tmp_path / "c", toolchain, jobs=2)
    names = [m.name for m in corpus.modules]
    assert "lib/alpha.cpp@bagtool" in names and outputs[1].members(names) == ["lib/alpha.cpp@bagtool", "main.cpp"]


def test_bad_thinlto_input_is_one_line_naming_the_package(thin, cxx_corpus: Path, tmp_path: Path,
                                                          toolchain: Toolchain) -> None:
    corpus, _ = thin
    copy = tmp_path / "copy"
    shutil.copytree(corpus.path, copy)
    os.remove(copy / "lib" / "beta.cpp.thinlto.bc")
    with pytest.raises(InputError) as e:
        load(copy)
    assert str(e.value) == (f"corpus {copy}: a ThinLTO corpus whose module lib/beta.cpp has no index "
                            "(lib/beta.cpp.thinlto.bc)")
    with pytest.raises(InputError, match=r"^package bag: no linked outputs in workers/data/shipped.toml"):
        thin_corpus("bag", load(cxx_corpus), (), tmp_path / "none", toolchain)
    with pytest.raises(ToolError, match=r"^package bag: the ThinLTO thin link of libbag.so.1 failed: ld.lld: error: "
                                        r"unable to find library -lno-such-lib-mlgo$"):
        thin_corpus("bag", load(cxx_corpus), (Output("libbag.so.1", "shared", ("lib/*.cpp",),
                                                     libs=("-lno-such-lib-mlgo",)),), tmp_path / "bad", toolchain)
