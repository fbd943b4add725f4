"""The held-out table judges the modules a package ships and shows all of them beside, with the real clang-22."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from farm.toolchain import Toolchain


def test_the_table_judges_shipped_modules_and_shows_all_beside(packages: dict[str, Path], tmp_path: Path,
                                                                toolchain: Toolchain) -> None:
    from policytrain.explore import ExploreCache
    from policytrain.fanout import thread_fanout
    from policytrain.heldout import format_table, heldout_table, judged
    from policytrain.recipes import RECIPES
    from policytrain.trainer import Splits, Trainer, package

    every = package("gamma", packages["gamma"])
    assert every.shipped is None  # no workers/data/shipped.toml entry for a test's own package
    names = sorted(u.name for u in every.units)
    ships = replace(every, shipped=frozenset(names[:1]))
    t = Trainer(toolchain, Splits((), (), (ships, every)), RECIPES["smoke"],
                thread_fanout(toolchain, ExploreCache(tmp_path / "cache"), 2), progress=lambda _: None)
    table = heldout_table(t, None)
    part, whole = table["packages"]
    sizes = dict(zip(names, t.heuristic_sizes(sorted(every.units, key=lambda u: u.name)), strict=True))
    assert part["shipped"] == {"modules": 1, "heuristic": sizes[names[0]], "policy": sizes[names[0]], "ratio": 1.0}
    assert part["modules"] == whole["modules"] == len(names) and part["heuristic"] == sum(sizes.values())
    assert judged(whole) is whole and whole["shipped"] is None
    text = format_table(table, 1.005)
    h = f"{sizes[names[0]]:,}"
    assert text.splitlines()[1].split() == ["gamma", "1", h, h, "1.0000", "1.0000", str(len(names)), "1.0000",
                                            "(not", "linked:", "sum", "of", "objects)"]
    assert "(no shipped list: all modules)" in text.splitlines()[2] and "(0 of 2 above 1.0050x)" in text


def _never(unit, toolchain: Toolchain):
    """A network that refuses every inline, with the features this compiler sends."""
    import numpy as np

    from policytrain.explore import play
    from policytrain.mlp import Mlp

    feats = tuple(play(unit, None, (), toolchain).policy.features)
    width = sum(f[1] for f in feats)
    return Mlp(feats, np.zeros(width), np.ones(width), (np.zeros((width, 2)),), (np.array([1.0, 0.0]),))


def _cxx_trainer(cxx_corpus: Path, tmp_path: Path, toolchain: Toolchain, outputs):
    from policytrain.explore import ExploreCache
    from policytrain.fanout import thread_fanout
    from policytrain.recipes import RECIPES
    from policytrain.trainer import Splits, Trainer, package

    p = package("bag", cxx_corpus)
    p = replace(p, shipped=frozenset(u.name for u in p.units), outputs=outputs)
    return p, Trainer(toolchain, Splits((), (), (p,)), RECIPES["smoke"],
                      thread_fanout(toolchain, ExploreCache(tmp_path / "cache"), 2), progress=lambda _: None)


def test_a_cxx_package_is_judged_by_what_it_links_with_the_sum_of_objects_beside(
        cxx_corpus: Path, tmp_path: Path, toolchain: Toolchain) -> None:
    """The linked files and the sum of objects disagree for C++ (the linker keeps one copy of each template a sum
    counts per object): the table's ratio and bars are the linked files', the objects' ratio stands beside."""
    from policytrain.heldout import format_table, heldout_table, judged
    from tests import cxxpackage

    p, t = _cxx_trainer(cxx_corpus, tmp_path, toolchain, cxxpackage.OUTPUTS)
    table = heldout_table(t, _never(p.units[0], toolchain))
    (row,) = table["packages"]
    linked, objects = row["linked"], row["shipped"]
    assert judged(row) is linked and set(linked["outputs"]) == {"libbag.so.1", "bagtool"}
    assert linked["heuristic"] == sum(h for h, _ in linked["outputs"].values())
    assert abs(linked["ratio"] - objects["ratio"]) > 0.01, (linked, objects)  # the two numbers disagree
    assert table["geomean"] == pytest.approx(linked["ratio"]) and table["objects"]["geomean"] == pytest.approx(
        objects["ratio"])
    cols = format_table(table, 1.005).splitlines()[1].split()
    assert cols[:7] == ["bag", "4", f"{linked['heuristic']:,}", f"{linked['policy']:,}", f"{linked['ratio']:.4f}",
                        f"{objects['ratio']:.4f}", "4"]


def test_a_package_whose_link_fails_has_no_ratio_and_its_table_says_why(
        cxx_corpus: Path, tmp_path: Path, toolchain: Toolchain) -> None:
    from farm.errors import FarmError
    from policytrain.heldout import check_complete, heldout_table
    from workers.shipped import Output

    _, t = _cxx_trainer(cxx_corpus, tmp_path, toolchain, (Output("libbag.so.1", "shared", ("lib/*.cc",)),))
    table = heldout_table(t, None)
    assert table["geomean"] is None and table["packages"][0]["linked"]["ratio"] is None
    with pytest.raises(FarmError) as e:
        check_complete(table)
    assert str(e.value).startswith("the held-out table has no ratio for bag: ") and (
        "package bag: output libbag.so.1 names 'lib/*.cc', which no module of its corpus matches" in str(e.value))


def test_training_modules_count_a_template_copy_another_module_carries_for_nothing(
        cxx_corpus: Path, tmp_path: Path, toolchain: Toolchain) -> None:
    """The reward counts what the linker keeps: a COMDAT group two modules of a package carry is kept once whatever
    one module does, so neither pays for it (Unit.shared); a module's size is then its own bytes and its groups no
    other module has."""
    from farm.toolchain import text_parts
    from tests import cxxpackage

    p, t = _cxx_trainer(cxx_corpus, tmp_path, toolchain, cxxpackage.OUTPUTS)
    units = {u.name: u for u in t.linked_units([p])}
    lib = [units[n] for n in ("lib/alpha.cpp", "lib/beta.cpp", "lib/gamma.cpp")]
    assert lib[0].shared and lib[0].shared == lib[1].shared == lib[2].shared and not units["main.cpp"].shared
    whole, linked = t.heuristic_sizes(p.units), t.heuristic_sizes(list(units.values()))
    assert all(a < b for a, b in zip(linked[:3], whole[:3], strict=True)) and linked[3] == whole[3]
    obj = tmp_path / "a.o"
    toolchain.run("clang", ["-Oz", "-c", lib[0].bitcode, "-o", obj])
    parts = text_parts(toolchain, [obj])[obj]
    assert linked[0] == parts.own + sum(n for g, n in parts.groups.items() if g not in lib[0].shared)
    assert lib[0].digest() != p.units[0].digest()  # another measure: another cache key
