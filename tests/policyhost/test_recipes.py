"""The training recipes: a name that is none of them is one line, and each recipe's own packages stay inside the
declared splits, so a recipe can never train on what another split judges."""

from __future__ import annotations

from dataclasses import replace

import pytest

from farm.errors import InputError
from policyhost.recipes import RECIPES, recipe
from workers import packages


def test_an_unknown_recipe_is_one_line_naming_the_known_ones():
    with pytest.raises(InputError) as e:
        recipe("nightlyy")
    assert str(e.value) == f"unknown training recipe 'nightlyy': use one of {', '.join(RECIPES)}"
    assert recipe("nightly") is RECIPES["nightly"]


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_a_recipes_packages_are_inside_the_declared_splits(name):
    rec = RECIPES[name]
    for split, names in rec.packages:
        assert set(names) <= set(packages.SPLITS[split]), (name, split)
    assert rec.seeds and rec.sticks and rec.rounds >= 1


def test_the_held_nightly_differs_from_the_nightly_only_in_holding_llvms_no():
    assert RECIPES["nightly-hold"] == replace(RECIPES["nightly"], hold_no=50.0)
    assert RECIPES["nightly"].hold_no == 0.0
