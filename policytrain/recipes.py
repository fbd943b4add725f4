"""How hard each stage of the inliner trainer works, one `TrainingRecipe` per use (policytrain/trainer.py runs them).

ml-compiler-opt keeps one runner and many configurations; so does the farm. `RECIPES` holds what production and the
test suite run: the nightly builder's (`cxx`, C++), C's (`nightly`, the nightly's until 2026-11-28), `make demo`'s
and the suite's `smoke`: each under its one real name. The experiments measured against the nightly and not adopted,
and the names the nightly had and its draws measured apart (`nightly-one-draw`, `nightly-two-draws`,
`nightly-other-seeds`), live beside the benches that measured them (bench/policy_recipes.py); code outside production
lends its recipes to `recipe()` for as long as it runs them (`added`), so production never imports them and `policy
train --recipe` knows only these.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from farm.errors import InputError
from policytrain.params import BcParams, Budget, EsParams, PriorParams


@dataclass(frozen=True)
class TrainingRecipe:
    """How hard each stage works (see the module docstring). The name says what it is the recipe of, a training: how a
    Debian package builds is workers/debrecipes.py `PackageRecipe`, another thing."""

    rounds: int = 2
    budget: Budget = field(default_factory=lambda: Budget(12, 3))
    bc: BcParams = field(default_factory=BcParams)
    es: EsParams = field(default_factory=EsParams)
    #: after exploring from the heuristic, search it again in the order a prior learned from that search
    #: (policytrain/params.py PriorParams); None: one search. Off by default: the second search finds 1.7x the
    #: savings, but its flips, chosen where flipping looked promising, teach cloning to depart too often
    #: (validation 0.9995x against 0.9959x; docs/policy-journal.md#guided-search)
    prior: PriorParams | None = None
    #: at most this many modules per training package (sampled by name hash), None: all
    max_modules: int | None = None
    #: how strongly the cloned network may stick to LLVM's decision (policytrain/mlp.py `stick`): each is measured
    #: on validation and the best kept
    sticks: tuple[float, ...] = (0.0, 1.0, 2.0, 4.0, 8.0)
    #: cloning seeds, each a network measured on validation with every stick (the best kept): the same data
    #: cloned with seeds 0-4 measured 0.9959x, 1.0013x, 1.0982x, 1.0035x and 1.1230x there
    #: (docs/policy-journal.md#cloning-is-a-draw), so one seed is a draw, not a choice
    seeds: tuple[int, ...] = (0,)
    #: average the seeds' clones into one network (policytrain/mlp.py `average`) instead of keeping the best on
    #: validation: the best of five draws on five validation packages is a draw unseen packages do not repeat
    ensemble: bool = False
    #: each seed clones a bootstrap resample of the explored modules (policytrain/improve.py `bagged`), not all of
    #: them: bagging, so that the seeds differ by data as well as by initialisation
    bag: bool = False
    #: how strongly every clone keeps LLVM's "no" (policytrain/mlp.py `hold_no`; 50: it only ever refuses an inline
    #: LLVM would make). Added inlines grew code the clones never saw (one seed: libsodium +2.3 % in
    #: cross-validation), but refusals grew it too, and the whole nightly validated worse with it
    #: (docs/policy-journal.md#cross-validation)
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
    #: policytrain/splitdata.py's, so still disjoint); empty: the declared splits
    packages: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: the ThinLTO regime: every package a distributed ThinLTO build (workers/thinlto.py), the policy deciding in its
    #: backends, judged by the files it links against the ThinLTO heuristic; False: each file compiled alone
    thinlto: bool = False
    #: the C++ splits (`cxx-train`, `cxx-validation`, `cxx-evaluation`) are the declared ones; False: the C splits
    cxx: bool = False

    def split(self, name: str) -> tuple[str, ...] | None:
        return dict(self.packages).get(name)

    def as_json(self) -> dict:
        return dataclasses.asdict(self)


# C's recipe, what the nightly builder trained until 2026-11-28: fits one 2-core worker in under 2 hours
# (docs/policy-journal.md#the-real-oz-regime)
# (a validation costs ~10 s here, so sticks up to 8, near the heuristic, for the cap to choose from); the five
# cloning seeds are averaged into one network, not chosen among: on eleven packages nothing was trained on it
# ranked better than the best seed (0.9961x against 0.9964x, worst package 1.0003x against 1.0031x); and no clone
# adds an inline LLVM's estimate puts more than 300 above its threshold (TrainingRecipe.guard: such adds almost never
# helped in exploration; on those eleven packages 0.99600x against 0.99616x unguarded), nor refuses one it puts more
# than 1,000 below (TrainingRecipe.floor, its mirror: such refusals helped 2.5 % of the time; 0.99635x against 0.99642x
# without); ES takes 64 pairs a step, each on one training module, nearer ml-compiler-opt's ~100 (0.99658x against
# 0.99706x with 8; ~8 min more). That is one draw; from 2026-11-26 to 2026-11-27 the nightly trained two, seeds 0-4 and
# 5-9, and averaged them (TrainingRecipe.draws; bench/policy_recipes.py `nightly-two-draws`): on fourteen packages
# nothing chose on 0.99412x against the two draws' mean, 0.99420x
# (docs/policy-journal.md#the-decision-split-and-two-draws-averaged; ~90 min cold). Its search flips a callee's every
# later call with each flip (Budget.groups): one draw measured 0.99193x on those fourteen packages against 0.99442x
# and 0.99398x for the single-flip draws (since 2026-11-26, evening). The experiments (bench/policy_recipes.py) were
# each measured as one draw, those before that evening with single flips.
_NIGHTLY = TrainingRecipe(rounds=2, budget=Budget(16, 2, groups=True), es=EsParams(steps=16, pairs=64), max_modules=50,
                          sticks=(0.0, 2.0, 4.0, 8.0), seeds=(0, 1, 2, 3, 4), ensemble=True, guard=300.0, floor=1000.0)

RECIPES = {
    # one draw since 2026-11-27, when the corpora became real -Oz bitcode (issue 34): a second draw moved the held-out
    # geomean by 0.005 % and cost ~40 min of the 2 h a cold run may take (bench/data/policy-decisions-2026-11-27.txt)
    "nightly": _NIGHTLY,
    # the C++ nightly: C++ per file, judged by what the linker ships (issue 45). bench_headroom's search found 5.3 %
    # of spdlog's and leveldb's linked libraries against 0.35 % on per-file C, so C++ gets a policy of its own, and
    # the nightly builder trains and publishes it ([policy] recipe). Leaner than C's, so that a cold run fits a
    # 2-core worker well under 2 hours (13.5 min here, beside other work): one round, 8 x 2 group flips, 12 modules a
    # training package, 8 ES steps of 16 pairs; checkpoints chosen on three C++ validation packages' linked files
    # (taglib and libixion, 208 modules between them, would make each validation longer than the rest of an ES step)
    # with none above the heuristic (cap 1.0); no clone adds an inline LLVM's estimate puts more than 40 above its
    # threshold (guard 40; C's 300 let pugixml grow 4.7 %). On the C++ decision split, linked: guard 300 0.9250x
    # (pugixml 1.0470x), 60 0.9481x (1.0084x), 40 0.9662x (none above the heuristic), 20 0.9953x
    # (docs/policy-journal.md#c-recipes-compared). It grows C (1.0092x with guard 300), so C keeps the recipe above
    "cxx": replace(_NIGHTLY, cxx=True, rounds=1, budget=replace(_NIGHTLY.budget, per_round=8),
           max_modules=12, es=replace(_NIGHTLY.es, steps=8, pairs=16), cap=1.0, guard=40.0,
           packages=(("validation", ("snappy", "soundtouch", "voro++")),)),
    # `make demo`: one round, a small search and two ES steps on a few small packages of each split
    "demo": TrainingRecipe(rounds=1, budget=Budget(6, 2), es=EsParams(steps=2, pairs=4), max_modules=20,
                           sticks=(0.0, 4.0), packages=(
        ("train", ("lua5.4", "libzstd", "lzo2")), ("validation", ("jansson",)),
        ("evaluation", ("zlib", "bzip2", "lz4", "cjson", "libyaml", "giflib")))),
    # the test suite: the smallest run that still goes through every stage
    "smoke": TrainingRecipe(rounds=1, budget=Budget(2, 1), bc=BcParams(epochs=3), es=EsParams(steps=1, pairs=2),
                    sticks=(0.0,)),
}


#: Recipes lent by code outside production while it runs them (`added`): the benches' experiments.
_ADDED: dict[str, TrainingRecipe] = {}


def known() -> dict[str, TrainingRecipe]:
    """Every recipe `recipe()` knows now: RECIPES, then any added."""
    return {**RECIPES, **_ADDED}


def recipe(name: str) -> TrainingRecipe:
    try:
        return known()[name]
    except KeyError:
        raise InputError(f"unknown training recipe {name!r}: use one of {', '.join(known())}") from None


@contextmanager
def added(extra: Mapping[str, TrainingRecipe]) -> Iterator[None]:
    """`recipe()` also knows `extra` inside the block (bench/policy_recipes.py lends its experiments so); a name it
    already knows is refused, so an experiment never shadows what production runs."""
    taken = sorted(set(extra) & set(known()))
    if taken:
        raise InputError(f"training recipe {taken[0]!r} is already known: an added recipe needs a name of its own")
    _ADDED.update(extra)
    try:
        yield
    finally:
        for name in extra:
            _ADDED.pop(name, None)
