"""The training recipes: a name that is none of them is one line, and each recipe's own packages stay inside the
declared splits, so a recipe can never train on what another split judges."""

from __future__ import annotations

from dataclasses import replace

import pytest

from farm.errors import InputError
from policytrain import splitdata
from policytrain.recipes import RECIPES, recipe

PRODUCTION = RECIPES


def test_an_unknown_recipe_is_one_line_naming_the_known_ones():
    with pytest.raises(InputError) as e:
        recipe("nightlyy")
    assert str(e.value) == f"unknown training recipe 'nightlyy': use one of {', '.join(RECIPES)}"
    assert recipe("nightly") is RECIPES["nightly"]


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_a_recipes_packages_are_inside_the_declared_splits(name):
    rec = RECIPES[name]
    for split, names in rec.packages:
        # a small run's held-out table may use retired evaluation packages: they never train, and it spends no look
        # of the fresh ones (policytrain/splitdata.py MAX_LOOKS)
        allowed = set(splitdata.SPLITS[f"cxx-{split}" if rec.cxx else split]) | (
            set(splitdata.RETIRED) if split == "evaluation" and not rec.cxx else set())
        assert set(names) <= allowed, (name, split)
    assert rec.seeds and rec.sticks and rec.rounds >= 1


#: what each experiment changes in one draw of the nightly (each was measured as one, but nightly-averse, measured as
#: the nightly is, two draws), and nothing else: a retuned nightly retunes its experiments too
EXPERIMENTS = {"nightly-hold": {"hold_no"}, "nightly-deep": {"budget"}, "nightly-one-round": {"rounds"},
               "nightly-four-rounds": {"rounds"}, "nightly-guided": {"prior", "sticks", "seeds"},
               "nightly-linear": {"bc", "es"}, "nightly-best-seed": {"ensemble"},
               "nightly-bagged": {"bag"}, "nightly-unguarded": {"guard", "floor"},
               "nightly-unfloored": {"floor"},
               "nightly-wide": {"max_modules"}, "nightly-strict": {"cap"},
               "nightly-other-seeds": {"seeds"}, "nightly-ten-seeds": {"seeds"},
               "nightly-es-blocks": {"es"}, "nightly-es-narrow": {"es"}, "nightly-averse": {"es", "draws"},
               "nightly-single-flips": {"budget"}, "nightly-two-draws": {"draws"}}


def test_every_nightly_experiment_differs_from_the_nightly_only_where_it_says():
    """Production's nightly, the names it had and the experiments measured beside it (bench/policy_recipes.py),
    together."""
    from bench.policy_recipes import EXPERIMENTS as MEASURED
    from bench.policy_recipes import HISTORICAL

    RECIPES = {**PRODUCTION, **MEASURED, **HISTORICAL}  # the assertions read the union by the registry's name
    one = RECIPES["nightly-one-draw"]
    assert set(EXPERIMENTS) | {"nightly-one-draw"} == {n for n in RECIPES if n.startswith("nightly-")}
    assert RECIPES["nightly"] == one and one.draws == 1 and RECIPES["nightly-two-draws"] == replace(one, draws=2)
    for name, fields in EXPERIMENTS.items():
        changed = {k for k, v in RECIPES[name].as_json().items() if v != one.as_json()[k]}
        assert changed == fields, name
    assert RECIPES["nightly-hold"] == replace(one, hold_no=50.0)
    assert RECIPES["nightly"].hold_no == 0.0 and RECIPES["nightly-four-rounds"].rounds == 4
    assert RECIPES["nightly"].ensemble and len(RECIPES["nightly"].seeds) == 5
    assert RECIPES["nightly"].guard == 300.0 and RECIPES["nightly-unguarded"].guard is None
    assert RECIPES["nightly"].floor == 1000.0 and RECIPES["nightly-unfloored"].floor is None
    assert RECIPES["nightly"].budget.groups and not RECIPES["nightly-single-flips"].budget.groups
