"""The trainer's experiments (bench/policy_recipes.py): each is the nightly's one draw (C's) or the `cxx` recipe
(C++'s) with only what it varies replaced, none shadows a production recipe, and the trainer knows them only while
they are lent to it."""

from __future__ import annotations

import pytest

from bench.policy_recipes import CXX, EXPERIMENTS, HISTORICAL, NIGHTLY, lookup
from farm.errors import InputError
from policytrain import recipes
from policytrain.recipes import RECIPES, added, recipe

#: what each experiment changes in one draw of the nightly (each was measured as one, but nightly-averse, measured as
#: the nightly then was, two draws), and nothing else
VARIES = {"nightly-hold": {"hold_no"}, "nightly-deep": {"budget"}, "nightly-one-round": {"rounds"},
          "nightly-four-rounds": {"rounds"}, "nightly-guided": {"prior", "sticks", "seeds"},
          "nightly-linear": {"bc", "es"}, "nightly-best-seed": {"ensemble"}, "nightly-bagged": {"bag"},
          "nightly-unguarded": {"guard", "floor"}, "nightly-unfloored": {"floor"}, "nightly-wide": {"max_modules"},
          "nightly-strict": {"cap"}, "nightly-ten-seeds": {"seeds"}, "nightly-es-blocks": {"es"},
          "nightly-es-narrow": {"es"}, "nightly-averse": {"es", "draws"}, "nightly-single-flips": {"budget"}}
#: what each C++ experiment changes in the `cxx` recipe, and nothing else
CXX_VARIES = {"cxx-guard-300": {"guard", "cap"}, "cxx-strict": {"guard"}, "cxx-guarded": {"guard"},
              "cxx-guarded-20": {"guard"}, "cxx-guarded-0": {"guard"}, "cxx-wide": {"guard", "cap", "max_modules"}}


def test_each_experiment_varies_the_nightlys_one_draw_only_where_it_says():
    assert HISTORICAL["nightly-one-draw"] is NIGHTLY and RECIPES["nightly"] == NIGHTLY
    assert set(EXPERIMENTS) == set(VARIES) | set(CXX_VARIES) and RECIPES["cxx"] is CXX
    for base, varies in ((NIGHTLY, VARIES), (CXX, CXX_VARIES)):
        for name, fields in varies.items():
            changed = {k for k, v in EXPERIMENTS[name].as_json().items() if v != base.as_json()[k]}
            assert changed == fields, name
    assert EXPERIMENTS["nightly-four-rounds"].rounds == 4 and EXPERIMENTS["nightly-unguarded"].guard is None
    assert not EXPERIMENTS["nightly-single-flips"].budget.groups


def test_production_knows_no_experiment_and_an_experiment_never_shadows_production():
    assert not set(EXPERIMENTS) & set(RECIPES)
    with pytest.raises(InputError) as e:
        recipe("nightly-deep")
    assert str(e.value) == f"unknown training recipe 'nightly-deep': use one of {', '.join(RECIPES)}"
    with pytest.raises(InputError, match="'smoke' is already known"), added({"smoke": NIGHTLY}):
        pass
    assert recipe("smoke") is RECIPES["smoke"]


def test_the_nightlys_former_names_are_the_benchs_not_productions():
    """`nightly` is production's one name for C's nightly; the names it had (and its draws measured apart) are lent by
    the bench, so a command recorded under one runs again and `policy train --recipe` rejects it in one line."""
    assert not set(HISTORICAL) & set(RECIPES) and not set(HISTORICAL) & set(EXPERIMENTS)
    with pytest.raises(InputError) as e:
        recipe("nightly-one-draw")
    assert str(e.value) == f"unknown training recipe 'nightly-one-draw': use one of {', '.join(RECIPES)}"
    assert "\n" not in str(e.value)
    assert lookup("nightly-one-draw") is NIGHTLY and lookup("nightly-two-draws") is HISTORICAL["nightly-two-draws"]
    assert recipes.known() == RECIPES


def test_experiments_are_known_while_lent_and_forgotten_after():
    with added(EXPERIMENTS):
        assert recipe("nightly-deep") is EXPERIMENTS["nightly-deep"] and recipe("nightly") is RECIPES["nightly"]
        with pytest.raises(InputError) as e:
            recipe("nightly-deeper")
        assert str(e.value) == ("unknown training recipe 'nightly-deeper': use one of "
                                f"{', '.join([*RECIPES, *EXPERIMENTS])}")
    assert recipes.known() == RECIPES
    assert lookup("nightly-bagged") is EXPERIMENTS["nightly-bagged"] and lookup("demo") is RECIPES["demo"]
    assert recipes.known() == RECIPES
    with pytest.raises(InputError, match="unknown training recipe 'nope'"):
        lookup("nope")
