"""policytrain/splitdata.py: the splits, as data, are disjoint, have recipes, and retire what was looked at too
often."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import InputError
from policytrain import splitdata
from workers import debrecipes


def test_the_policy_splits_are_disjoint_and_have_recipes() -> None:
    every = [p for split in splitdata.SPLITS.values() for p in split]
    assert len(every) == len(set(every)), "a package in two splits"
    assert all(p in debrecipes.RECIPES for p in every)
    assert {"zlib", "bzip2"} <= set(splitdata.RETIRED) and len(splitdata.EVALUATION) >= 10
    assert len(splitdata.VALIDATION) >= 5 and splitdata.TRAIN
    assert splitdata.split_of("zlib") == "retired" and splitdata.split_of("llvm-toolchain-19") is None
    assert splitdata.split_of("lhasa") == "evaluation"
    assert all(splitdata.looks().get(p, 0) < splitdata.MAX_LOOKS for p in splitdata.EVALUATION)
    assert splitdata.split_of("twolame") == "decision" and len(splitdata.DECISION) >= 10
    splitdata.check()


def test_an_evaluation_package_looked_at_too_often_must_retire(tmp_path: Path) -> None:
    """A table looked at again and again stops being held out: at MAX_LOOKS the check names the package."""
    five = ("zlib", "bzip2", "lz4", "cjson", "giflib")
    splitdata.check({"evaluation": five}, counts={"zlib": splitdata.MAX_LOOKS - 1})
    with pytest.raises(InputError) as e:
        splitdata.check({"evaluation": five}, counts={"lz4": splitdata.MAX_LOOKS})
    assert str(e.value) == (f"package splits: evaluation package lz4 has been looked at {splitdata.MAX_LOOKS} times "
                            f"(policytrain/data/looks.toml; {splitdata.MAX_LOOKS} retire a package): move it to the "
                            "retired split")
    splitdata.check({"evaluation": (*five[:2], *five[3:], "libxmp"), "retired": ("lz4",)}, counts={"lz4": 9})
    bad = tmp_path / "looks.toml"
    bad.write_text('[zlib]\nlooks = "many"\nwhere = "x"\n')
    with pytest.raises(InputError, match=r"\[zlib\] looks must be a whole number of looks, not 'many'"):
        splitdata.looks(bad)
    bad.write_text('[zlib]\nlooks = 2\n')
    with pytest.raises(InputError, match=r"\[zlib\] needs 'where'"):
        splitdata.looks(bad)


@pytest.mark.parametrize(("splits", "message"), [
    ({"train": ("zlib",), "evaluation": ("zlib", "bzip2")}, "zlib is in train and in evaluation"),
    ({"train": ("lua5.4", "lua5.4")}, "lua5.4 is twice in train"),
    ({"validation": ("no-such-recipe",)}, "no-such-recipe (validation) has no recipe"),
    ({"evaluation": ("zlib", "bzip2")}, "2 evaluation package(s), at least 5"),
    ({"test": ("zlib",)}, "unknown split 'test'"),
])
def test_a_bad_split_table_fails_in_one_line(splits: dict, message: str) -> None:
    with pytest.raises(InputError) as e:
        splitdata.check(splits)
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(("text", "message"), [
    ("[split.train]\npackages = [\"zlib\"]\n", "[split.train] needs 'why'"),
    ("[split.train]\npackages = [\"zlib\"]\nwhy = \"x\"\nowner = \"me\"\n", "[split.train] unknown key 'owner'"),
    ("[split.train]\npackages = [1]\nwhy = \"x\"\n", "[split.train] packages must be package names"),
    ("[split.train]\npackages = [\"zlib\"]\nwhy = \"x\"\n", "[split.cxx-decision] is missing"),
    ("[splits.train]\npackages = []\nwhy = \"x\"\n", "unknown table [splits]"),
    ("[overlap.a]\npackages = \"zlib\"\nwhy = \"x\"\n", "[overlap.a] packages must be a list"),
])
def test_a_bad_splits_file_names_the_table_and_key_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "splits.toml"
    bad.write_text(text)
    with pytest.raises(InputError) as e:
        splitdata.load(bad)
    assert message in str(e.value) and str(bad) in str(e.value) and "\n" not in str(e.value)


def test_the_splits_file_is_the_declared_splits() -> None:
    """What the module exports is what the data file says, split by split and overlap by overlap."""
    splits, overlaps = splitdata.load()
    assert splits == splitdata.SPLITS and tuple(splits) == splitdata.SPLIT_NAMES
    assert overlaps == splitdata.OVERLAPS and all(len(pair) == 2 for pair in overlaps)
