"""The inliner trainer's parameter records: how hard each stage works, sound defaults, every value in the manifest.

A training recipe (policytrain/recipes.py) is these records filled in, one set per use; the stages that read them
(exploration, policytrain/explore.py; cloning, the prior and evolution strategies, policytrain/improve.py) stand
above both. So a recipe is data that imports no algorithm, as vocabgen/params.py's are, and a stage's parameters are
read in one place whichever stage is being changed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    """How hard to search one module: flips tried per round, and rounds."""

    per_round: int = 12
    rounds: int = 3
    #: group flips: a flip also holds every later call of its callee (policytrain/explore.py
    #: `callee_key`) to the flipped action, so one
    #: trial refuses (or makes) all of a callee's inlines, which single flips miss when each refusal alone grows
    #: the code (the body stays and a call is added). Measured in docs/policy-journal.md#group-flips
    groups: bool = False

    def as_json(self) -> dict:
        d = {"per_round": self.per_round, "rounds": self.rounds}
        return {**d, "groups": True} if self.groups else d  # (only then: single-flip searches keep their keys)


@dataclass(frozen=True)
class BcParams:
    """Weighted behavioural cloning: network shape, optimisation, and how much improvements weigh."""

    hidden: tuple[int, ...] = (16, 16)
    epochs: int = 40
    batch: int = 256
    lr: float = 3e-3
    gain: float = 10.0
    flip_weight: float = 5.0
    #: counterfactual steps (every flip exploration tried): weight per unit of `.text` changed, relative to
    #: the module (3000: a flip that moved the module by 1 % weighs 30); one that changed nothing weighs `trial_floor`
    trial_weight: float = 3000.0
    trial_floor: float = 0.1
    seed: int = 0


@dataclass(frozen=True)
class PriorParams:
    """The exploration prior: a network scoring how likely flipping LLVM's decision makes its module smaller.

    The heuristic says nothing of its confidence, so a first exploration tries its steps in a content-seeded
    order, and only about one flip in twelve is smaller. Fitted on those trials (state -> did flipping help),
    the prior orders a second search from the heuristic, most promising first: ml-compiler-opt's "least sure
    first", with the confidence learned from what exploration already saw. Wider than the policy: it ranks,
    it never decides."""

    hidden: tuple[int, ...] = (64, 64)
    epochs: int = 80
    #: fewer helpful flips than this and there is nothing to learn: the second search is skipped
    min_helpful: int = 20
    seed: int = 0


@dataclass(frozen=True)
class EsParams:
    """Evolution strategies as ml-compiler-opt's blackbox learner, scaled to a farm worker."""

    steps: int = 6
    pairs: int = 8
    sigma: float = 0.05
    step_size: float = 0.02
    min_compiled: float = 0.4
    seed: int = 0
    #: perturb and move only the weights that are not exactly zero: an average of clones (policytrain/mlp.py
    #: `average`) is block-diagonal, and perturbing its zero blocks mixes the clones and spends most of each pair's
    #: noise on weights no clone has (Adam then moves every one of them by about `step_size` a step)
    only_nonzero: bool = False
    #: how many times a module's growth counts against the same saving (1: ml-compiler-opt's reward). The size bars
    #: are not symmetric (one package 0.5 % larger fails the gate however much the others shrink), so a step
    #: that trades a growth somewhere for a larger saving elsewhere is not what the gate wants
    growth_weight: float = 1.0
