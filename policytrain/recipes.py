"""How hard each stage of the inliner trainer works, one `Recipe` per use (policytrain/trainer.py runs them).

ml-compiler-opt keeps one runner and many configurations; so does the farm: the nightly builder, its
experiments (bench/README.md says what each measured), `make demo` and the test suite each name a recipe.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace

from farm.errors import InputError
from policytrain.explore import Budget
from policytrain.improve import BcParams, EsParams, PriorParams


@dataclass(frozen=True)
class Recipe:
    """How hard each stage works (see the module docstring)."""

    rounds: int = 2
    budget: Budget = field(default_factory=lambda: Budget(12, 3))
    bc: BcParams = field(default_factory=BcParams)
    es: EsParams = field(default_factory=EsParams)
    #: after exploring from the heuristic, search it again in the order a prior learned from that search
    #: (policytrain/improve.py PriorParams); None: one search. Off by default: the second search finds 1.7x the
    #: savings, but its flips, chosen where flipping looked promising, teach cloning to depart too often
    #: (validation 0.9995x against 0.9959x; bench/README.md)
    prior: PriorParams | None = None
    #: at most this many modules per training package (sampled by name hash), None: all
    max_modules: int | None = None
    #: how strongly the cloned network may stick to LLVM's decision (policytrain/mlp.py `stick`): each is measured
    #: on validation and the best kept
    sticks: tuple[float, ...] = (0.0, 1.0, 2.0, 4.0, 8.0)
    #: cloning seeds, each a network measured on validation with every stick (the best kept): the same data
    #: cloned with seeds 0-4 measured 0.9959x, 1.0013x, 1.0982x, 1.0035x and 1.1230x there (bench/README.md),
    #: so one seed is a draw, not a choice
    seeds: tuple[int, ...] = (0,)
    #: average the seeds' clones into one network (policytrain/mlp.py `average`) instead of keeping the best on
    #: validation: the best of five draws on five validation packages is a draw unseen packages do not repeat
    ensemble: bool = False
    #: each seed clones a bootstrap resample of the explored modules (policytrain/improve.py `bagged`), not all of
    #: them: bagging, so that the seeds differ by data as well as by initialisation
    bag: bool = False
    #: how strongly every clone keeps LLVM's "no" (policytrain/mlp.py `hold_no`; 50: it only ever refuses an inline
    #: LLVM would make). Added inlines grew code the clones never saw (one seed: libsodium +2.3 % in
    #: cross-validation), but refusals grew it too, and the whole nightly validated worse with it (bench/README.md)
    hold_no: float = 0.0
    #: every clone keeps LLVM's "no" where its cost estimate is more than this above the threshold (policytrain/mlp.py
    #: `guard`); None: no guard
    guard: float | None = None
    #: every clone keeps LLVM's "yes" where its cost estimate is more than this below the threshold (policytrain/mlp.py
    #: `floor`); None: no floor
    floor: float | None = None
    #: the cap a checkpoint (stick, round, ES step) is chosen under (policytrain/trainer.py Measured.rank: no validation
    #: package above it if any checkpoint manages that); None: the gate's `1 + policy_size_tolerance`
    cap: float | None = None
    #: whole trainings of this recipe, each cloning with its own seeds (policytrain/draws.py `seeds_of`), their chosen
    #: networks averaged into the policy (policytrain/draws.py): one training is a draw
    draws: int = 1
    #: the packages of each split when the recipe is smaller than the declared splits (each a subset of
    #: policytrain/packages.py's, so still disjoint); empty: the declared splits
    packages: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def split(self, name: str) -> tuple[str, ...] | None:
        return dict(self.packages).get(name)

    def as_json(self) -> dict:
        return dataclasses.asdict(self)


# what the nightly builder trains with: fits one 2-core worker in under 2 hours (bench/README.md)
# (a validation costs ~10 s here, so sticks up to 8, near the heuristic, for the cap to choose from); the five
# cloning seeds are averaged into one network, not chosen among: on eleven packages nothing was trained on it
# ranked better than the best seed (0.9961x against 0.9964x, worst package 1.0003x against 1.0031x); and no clone
# adds an inline LLVM's estimate puts more than 300 above its threshold (Recipe.guard: such adds almost never helped
# in exploration; on those eleven packages 0.99600x against 0.99616x unguarded), nor refuses one it puts more than 1,000
# below (Recipe.floor, its mirror: such refusals helped 2.5 % of the time; 0.99635x against 0.99642x without);
# ES takes 64 pairs a step, each on one training module, nearer ml-compiler-opt's ~100 (0.99658x against 0.99706x
# with 8; ~8 min more). That is one draw; from 2026-11-26 to 2026-11-27 the nightly trained two, seeds 0-4 and 5-9,
# and averaged them (Recipe.draws, `nightly-two-draws`): on fourteen packages nothing chose on 0.99412x against the
# two draws' mean, 0.99420x (bench/README.md; ~90 min cold). Its search flips a callee's every later call with each
# flip (Budget.groups): one draw measured 0.99193x on those fourteen packages against 0.99442x and 0.99398x for the
# single-flip draws (since 2026-11-26, evening). The experiments below were each measured as one draw, those before
# that evening with single flips.
_NIGHTLY = Recipe(rounds=2, budget=Budget(16, 2, groups=True), es=EsParams(steps=16, pairs=64), max_modules=50,
                  sticks=(0.0, 2.0, 4.0, 8.0), seeds=(0, 1, 2, 3, 4), ensemble=True, guard=300.0, floor=1000.0)

RECIPES = {
    # one draw since 2026-11-27, when the corpora became real -Oz bitcode (issue 34): a second draw moved the held-out
    # geomean by 0.005 % and cost ~40 min of the 2 h a cold run may take (bench/data/policy-decisions-2026-11-27.txt)
    "nightly": _NIGHTLY,
    # the same, under the name the bench commands of 2026-11-26 used for one draw
    "nightly-one-draw": _NIGHTLY,
    # the nightly from 2026-11-26, late morning, to 2026-11-27: two draws averaged (bench/README.md, "Wider validation,
    # and two draws averaged")
    "nightly-two-draws": replace(_NIGHTLY, draws=2),
    # the nightly whose clones only refuse (Recipe.hold_no): less growth in cross-validation, but validation
    # 0.9978x against the nightly's 0.9941x, so not the nightly (bench/README.md)
    "nightly-hold": replace(_NIGHTLY, hold_no=50.0),
    # the nightly searching each module three times as hard (48 flips a round): does more counterfactual data
    # make clones that hold on unseen code? (the experiment in bench/README.md)
    "nightly-deep": replace(_NIGHTLY, budget=replace(_NIGHTLY.budget, per_round=48)),
    # the nightly's first round alone (exploration from the heuristic, cloning, ES): the vocabulary comparison at
    # nightly scale (`bench_policy_training.py vocab`), three trainings sharing one cached search (bench/README.md)
    "nightly-one-round": replace(_NIGHTLY, rounds=1),
    # the nightly iterated twice more (ml-compiler-opt's loop: each round explores from the last round's clone):
    # round 3 validated better (0.9927x against 0.9941x) but grew unseen code more (15 evaluation packages 0.9982x
    # against 0.9951x), so the nightly keeps two rounds (bench/README.md)
    "nightly-four-rounds": replace(_NIGHTLY, rounds=4),
    # the nightly's search and cloning data, cloned into a linear policy (no hidden layer: ~80 weights instead of
    # ~1,000) that ES can move with 16 pairs a step: does a policy too small to memorise hold on unseen code?
    # (the experiment in bench/README.md)
    "nightly-linear": replace(_NIGHTLY, bc=BcParams(hidden=()), es=EsParams(steps=24, pairs=16)),
    # the nightly as it was until 2026-11-25: each round keeps the one seed's clone that validates best (the
    # comparison of bench/README.md's "Five seeds averaged")
    "nightly-best-seed": replace(_NIGHTLY, ensemble=False),
    # the nightly as it was until 2026-11-25, night: its clones may add any inline (the comparison of bench/README.md's
    # "A guard on far added inlines")
    "nightly-unguarded": replace(_NIGHTLY, guard=None, floor=None),
    # the nightly as it was until 2026-11-26: its clones may refuse any inline (bench/README.md, "A floor under
    # refusals")
    "nightly-unfloored": replace(_NIGHTLY, floor=None),
    # the nightly with twice the modules of each training package (100, sampled by name hash: the nightly's 50 among
    # them): does more data from the same packages make clones that hold on unseen code? (bench/README.md)
    "nightly-wide": replace(_NIGHTLY, max_modules=100),
    # the nightly choosing its checkpoints so that no validation package grows at all, not by up to the gate's
    # tolerance (the experiment in bench/README.md)
    "nightly-strict": replace(_NIGHTLY, cap=1.0),
    # the nightly's second draw alone (cloning seeds 5-9 instead of 0-4), to see how far two runs of the same recipe
    # land apart on unseen code (bench/README.md)
    "nightly-other-seeds": replace(_NIGHTLY, seeds=(5, 6, 7, 8, 9)),
    # the nightly whose ES moves only the averaged clones' own weights, not the zero blocks between them (the
    # experiment in bench/README.md)
    "nightly-es-blocks": replace(_NIGHTLY, es=replace(_NIGHTLY.es, only_nonzero=True)),
    # the nightly as it was until 2026-11-26, morning: ES takes 8 steps of 8 pairs, a gradient seen on 8 training
    # modules a step (bench/README.md, "ES with eight times the pairs")
    "nightly-es-narrow": replace(_NIGHTLY, es=replace(_NIGHTLY.es, steps=8, pairs=8)),
    # the nightly as it was until 2026-11-26, evening: each flip of its search flips one step, not a callee's every
    # later call (bench/README.md, "Group flips")
    "nightly-single-flips": replace(_NIGHTLY, budget=replace(_NIGHTLY.budget, groups=False)),
    # the nightly averaging ten cloning seeds a round instead of five: does a wider average hold better on unseen
    # code, or only land between its draws? (the experiment in bench/README.md)
    "nightly-ten-seeds": replace(_NIGHTLY, seeds=tuple(range(10))),
    # the nightly whose seeds each clone a bootstrap resample of the modules before they are averaged (the
    # experiment in bench/README.md)
    "nightly-bagged": replace(_NIGHTLY, bag=True),
    # the nightly (two draws) whose ES counts a module's growth twice against the same saving: does a reward as
    # lopsided as the gate's bars keep packages from growing? Not on the decision packages: 0.99480x (worst
    # 1.0015x) against the nightly's 0.99412x (1.0012x), so not adopted (bench/README.md)
    "nightly-averse": replace(_NIGHTLY, draws=2, es=replace(_NIGHTLY.es, growth_weight=2.0)),
    # the nightly with a second, prior-guided search of the heuristic (the experiment in bench/README.md)
    # (measured with one seed and the default sticks, as the nightly then had)
    "nightly-guided": replace(_NIGHTLY, prior=PriorParams(), sticks=Recipe.sticks, seeds=Recipe.seeds),
    # `make demo`: one round, a small search and two ES steps on a few small packages of each split
    "demo": Recipe(rounds=1, budget=Budget(6, 2), es=EsParams(steps=2, pairs=4), max_modules=20, sticks=(0.0, 4.0),
                   packages=(
        ("train", ("lua5.4", "libzstd", "lzo2")), ("validation", ("jansson",)),
        ("evaluation", ("zlib", "bzip2", "lz4", "cjson", "libyaml", "giflib")))),
    # the test suite: the smallest run that still goes through every stage
    "smoke": Recipe(rounds=1, budget=Budget(2, 1), bc=BcParams(epochs=3), es=EsParams(steps=1, pairs=2),
                    sticks=(0.0,)),
}


def recipe(name: str) -> Recipe:
    try:
        return RECIPES[name]
    except KeyError:
        raise InputError(f"unknown training recipe {name!r}: use one of {', '.join(RECIPES)}") from None
