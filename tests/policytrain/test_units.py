"""The inliner's units are the `-Oz` a user builds: real clang-22, a real C file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.errors import InputError
from farm.toolchain import Toolchain, text_sizes
from tests.conftest import CSRC


def test_a_unit_of_an_oz_corpus_is_the_users_oz_build_and_an_o2_corpus_is_refused(tmp_path: Path,
                                                                                 toolchain: Toolchain) -> None:
    """Issue 34: the heuristic the policy trains against and is judged against is plain `clang -Oz -c x.c`. A unit
    of an `-Oz` corpus compiles to the same `.text` as the source at `-Oz`; an `-O2` corpus (the vocabularies') at
    `-Oz` compiles to another size, and the trainer refuses it in one line."""
    from policytrain.units import LEVEL, corpus_units
    from workers.corpus import from_sources

    source = CSRC / "sort.c"
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "sort.c").write_bytes(source.read_bytes())
    oz = from_sources(tmp_path / "src", tmp_path / "oz", toolchain, level=LEVEL)
    o2 = from_sources(tmp_path / "src", tmp_path / "o2", toolchain)
    (unit,) = corpus_units(oz.path)
    objs = {k: tmp_path / f"{k}.o" for k in ("unit", "source", "o2")}
    toolchain.run("clang", unit.argv(objs["unit"])[1:])
    toolchain.run("clang", ["-Oz", "-g0", "-c", str(tmp_path / "src" / "sort.c"), "-o", str(objs["source"])])
    toolchain.run("clang", ["-Oz", "-c", str(o2.modules[0].bitcode), "-o", str(objs["o2"])])
    sizes = text_sizes(toolchain, list(objs.values()))
    assert sizes[objs["unit"]] == sizes[objs["source"]]
    assert sizes[objs["o2"]] != sizes[objs["source"]]  # the regime the farm trained in until issue 34
    with pytest.raises(InputError) as e:
        corpus_units(o2.path)
    assert "compiled by an -O2 front end, but the inliner for size needs -Oz bitcode" in str(e.value)


def test_a_cxx_corpus_compiles_to_the_text_its_real_build_gives(cxx_corpus: Path, tmp_path: Path,
                                                                toolchain: Toolchain) -> None:
    """Each unit of the tests' C++ package compiles to the object `clang++ -Oz -fPIC -std=c++17 -c` gives from its
    source (the package's own build), and its library linked from the units is the library linked from those."""
    from policytrain.units import corpus_units
    from tests import cxxpackage
    from workers.linked import link

    units = corpus_units(cxx_corpus)
    src = Path(json.loads((cxx_corpus / "corpus_description.json").read_text())["source"])  # what it compiled
    mine, real = {}, {}
    for i, u in enumerate(units):
        mine[u.name], real[u.name] = tmp_path / f"u{i}.o", tmp_path / f"s{i}.o"
        toolchain.run("clang", u.argv(mine[u.name])[1:])
        toolchain.run("clang++", ["-Oz", "-g0", "-fPIC", "-std=c++17", "-c", str(src / u.name), "-o",
                                  str(real[u.name])])
    assert text_sizes(toolchain, list(mine.values())) == {mine[n]: s for n, s in zip(
        mine, text_sizes(toolchain, list(real.values())).values(), strict=True)}
    assert link("bag", cxxpackage.OUTPUTS, mine, tmp_path / "a", toolchain) == link(
        "bag", cxxpackage.OUTPUTS, real, tmp_path / "b", toolchain)

