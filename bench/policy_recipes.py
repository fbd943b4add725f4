"""The inliner trainer's experiments: recipes measured against the nightly and not adopted
(docs/policy-journal.md has each one's numbers, in the section named beside each recipe below), kept here beside
the benches that measured them so that any of them can be run again.

Production's recipes are policytrain/recipes.py `RECIPES`; `mlgo-farm policy train --recipe` knows only those. Run an
experiment with this module, which is `mlgo-farm` with these recipes lent to the trainer (`recipes.added`):

    .venv/bin/python -m bench.policy_recipes policy train --recipe nightly-deep -o var/bench/policy/deep.onnx

bench_policy_training.py trains through it (bench/harness/policy.py `train_policy`), so its `--recipe` takes either.
Each experiment is the nightly's one draw (`nightly`) with what it varies replaced: a retuned nightly retunes its
experiments too. The names the nightly had, and its draws measured apart (`HISTORICAL`), are lent with them, so the
commands the journal and the decisions files recorded under those names run again; production knows only `nightly`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace

from policytrain.params import BcParams, EsParams, PriorParams
from policytrain.recipes import RECIPES, TrainingRecipe, added, recipe

#: The nightly, one draw: what every experiment varies.
NIGHTLY = RECIPES["nightly"]
#: The C++ recipe the nightly trains since 2026-11-28: what the C++ experiments vary.
CXX = RECIPES["cxx"]

EXPERIMENTS: dict[str, TrainingRecipe] = {
    # the nightly whose clones only refuse (TrainingRecipe.hold_no): less growth in cross-validation, but validation
    # 0.9978x against the nightly's 0.9941x, so not the nightly (docs/policy-journal.md#cross-validation)
    "nightly-hold": replace(NIGHTLY, hold_no=50.0),
    # the nightly searching each module three times as hard (48 flips a round): does more counterfactual data
    # make clones that hold on unseen code? (the experiment in docs/policy-journal.md#eleven-validation-packages)
    "nightly-deep": replace(NIGHTLY, budget=replace(NIGHTLY.budget, per_round=48)),
    # the nightly's first round alone (exploration from the heuristic, cloning, ES): the vocabulary comparison at
    # nightly scale (`bench_policy_training.py vocab`), three trainings sharing one cached search
    # (docs/policy-journal.md#what-the-vocabulary-is-worth-downstream)
    "nightly-one-round": replace(NIGHTLY, rounds=1),
    # the nightly iterated twice more (ml-compiler-opt's loop: each round explores from the last round's clone):
    # round 3 validated better (0.9927x against 0.9941x) but grew unseen code more (15 evaluation packages 0.9982x
    # against 0.9951x), so the nightly keeps two rounds (docs/policy-journal.md#four-rounds)
    "nightly-four-rounds": replace(NIGHTLY, rounds=4),
    # the nightly's search and cloning data, cloned into a linear policy (no hidden layer: ~80 weights instead of
    # ~1,000) that ES can move with 16 pairs a step: does a policy too small to memorise hold on unseen code?
    # (the experiment in docs/policy-journal.md#a-linear-policy)
    "nightly-linear": replace(NIGHTLY, bc=BcParams(hidden=()), es=EsParams(steps=24, pairs=16)),
    # the nightly as it was until 2026-11-25: each round keeps the one seed's clone that validates best (the
    # comparison of docs/policy-journal.md#five-seeds-averaged)
    "nightly-best-seed": replace(NIGHTLY, ensemble=False),
    # the nightly as it was until 2026-11-25, night: its clones may add any inline (the comparison
    # of docs/policy-journal.md#a-guard-on-far-added-inlines)
    "nightly-unguarded": replace(NIGHTLY, guard=None, floor=None),
    # the nightly as it was until 2026-11-26: its clones may refuse any inline
    # (docs/policy-journal.md#a-floor-under-refusals)
    "nightly-unfloored": replace(NIGHTLY, floor=None),
    # the nightly with twice the modules of each training package (100, sampled by name hash: the nightly's 50 among
    # them): does more data from the same packages make clones that hold on unseen code?
    # (docs/policy-journal.md#a-guard-on-far-added-inlines)
    "nightly-wide": replace(NIGHTLY, max_modules=100),
    # the nightly choosing its checkpoints so that no validation package grows at all, not by up to the gate's
    # tolerance (the experiment in docs/policy-journal.md#a-guard-on-far-added-inlines)
    "nightly-strict": replace(NIGHTLY, cap=1.0),
    # the nightly whose ES moves only the averaged clones' own weights, not the zero blocks between them (the
    # experiment in docs/policy-journal.md#a-floor-under-refusals)
    "nightly-es-blocks": replace(NIGHTLY, es=replace(NIGHTLY.es, only_nonzero=True)),
    # the nightly as it was until 2026-11-26, morning: ES takes 8 steps of 8 pairs, a gradient seen on 8 training
    # modules a step (docs/policy-journal.md#es-with-eight-times-the-pairs)
    "nightly-es-narrow": replace(NIGHTLY, es=replace(NIGHTLY.es, steps=8, pairs=8)),
    # the nightly as it was until 2026-11-26, evening: each flip of its search flips one step, not a callee's every
    # later call (docs/policy-journal.md#group-flips)
    "nightly-single-flips": replace(NIGHTLY, budget=replace(NIGHTLY.budget, groups=False)),
    # the nightly averaging ten cloning seeds a round instead of five: does a wider average hold better on unseen
    # code, or only land between its draws? (the experiment in docs/policy-journal.md#a-floor-under-refusals)
    "nightly-ten-seeds": replace(NIGHTLY, seeds=tuple(range(10))),
    # the nightly whose seeds each clone a bootstrap resample of the modules before they are averaged (the
    # experiment in docs/policy-journal.md#bagging-the-seeds)
    "nightly-bagged": replace(NIGHTLY, bag=True),
    # the nightly (two draws) whose ES counts a module's growth twice against the same saving: does a reward as
    # lopsided as the gate's bars keep packages from growing? Not on the decision packages: 0.99480x (worst
    # 1.0015x) against the nightly's 0.99412x (1.0012x), so not adopted
    # (docs/policy-journal.md#growth-counted-twice-in-es)
    "nightly-averse": replace(NIGHTLY, draws=2, es=replace(NIGHTLY.es, growth_weight=2.0)),
    # the nightly with a second, prior-guided search of the heuristic (the experiment in
    # docs/policy-journal.md#guided-search)
    # (measured with one seed and the default sticks, as the nightly then had)
    "nightly-guided": replace(NIGHTLY, prior=PriorParams(), sticks=TrainingRecipe.sticks, seeds=TrainingRecipe.seeds),
    # C++ (docs/policy-journal.md#c-recipes-compared, each on the C++ decision split, linked): the `cxx` recipe until
    # 2026-11-28, evening, C's guard (300) and cap (the gate's): 0.9250x, pugixml 1.0470x
    "cxx-guard-300": replace(CXX, guard=300.0, cap=None),
    # ... choosing its checkpoints with no validation package above the heuristic (cap 1.0): the same checkpoint
    # (its validation worst was already 0.9940x), so the same policy
    "cxx-strict": replace(CXX, guard=300.0),
    # ... and no clone adding an inline LLVM puts more than 60 (20, 0) above its threshold: 0.9481x (pugixml
    # 1.0084x); 20: 0.9953x (double-conversion 1.0030x); 0: stopped once 20 had shown that tightening gives up most
    # of the saving. 40 is `cxx` now (0.9662x, none above the heuristic)
    "cxx-guarded": replace(CXX, guard=60.0),
    "cxx-guarded-20": replace(CXX, guard=20.0),
    "cxx-guarded-0": replace(CXX, guard=0.0),
    # ... cloning from twice the modules of each training package (24), with C's guard: its search of 60 more
    # modules did not fit the evening it was written in (not measured)
    "cxx-wide": replace(CXX, guard=300.0, cap=None, max_modules=24),
}

#: The nightly's former names and its draws measured apart, for the commands recorded under them (not experiments:
#: each is, or was, the nightly).
HISTORICAL: dict[str, TrainingRecipe] = {
    # the nightly, under the name the bench commands of 2026-11-26 used for one draw: what each experiment varies
    "nightly-one-draw": NIGHTLY,
    # the nightly from 2026-11-26, late morning, to 2026-11-27: two draws averaged
    # (docs/policy-journal.md#the-decision-split-and-two-draws-averaged)
    "nightly-two-draws": replace(NIGHTLY, draws=2),
    # the nightly's second draw alone (cloning seeds 5-9 instead of 0-4), to see how far two runs of the same recipe
    # land apart on unseen code (docs/policy-journal.md#a-guard-on-far-added-inlines); what policytrain/draws.py
    # `seeds_of` gives the second draw
    "nightly-other-seeds": replace(NIGHTLY, seeds=(5, 6, 7, 8, 9)),
}
#: Everything this module lends the trainer.
LENT = {**EXPERIMENTS, **HISTORICAL}


def lookup(name: str) -> TrainingRecipe:
    """Production's recipe, an experiment or a former name `name`; InputError (one line naming every known one) if
    none."""
    with added(LENT):
        return recipe(name)


def main(argv: Sequence[str] | None = None) -> int:
    """`mlgo-farm ARGV` with the experiments and former names known to `policy train --recipe`."""
    from farm.cli import main as farm_main

    with added(LENT):
        return farm_main(argv)


if __name__ == "__main__":
    sys.exit(main())
