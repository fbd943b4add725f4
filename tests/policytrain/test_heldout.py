"""The held-out table judges the modules a package ships and shows all of them beside, with the real clang-22."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

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
    assert text.splitlines()[1].split() == ["gamma", "1", h, h, "1.0000", str(len(names)), "1.0000"]
    assert "(no shipped list: all modules)" in text.splitlines()[2] and "(0 of 2 above 1.0050x)" in text
