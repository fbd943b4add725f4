"""The problems the trainers solve, declared once (ml-compiler-opt's `ProblemConfiguration`).

What is specific to a problem lives here and nowhere else: which LLVM advisor the policy drives (its advice and
the feature carrying LLVM's own decision come from `policyhost/advisors.py`), the level every corpus and compile is
at, what a module is scored by and the reward made of it, and the kinds its models are recorded as. Two problems:
inlining for size (`INLINE_SIZE`, policytrain/trainer.py) and regalloc eviction for speed (`EVICT_SPEED`,
policytrain/evict_train.py). They share the learning (policytrain/improve.py's ES and Adam, policytrain/mlp.py's
network); what differs is this record and the recipes.
"""

from __future__ import annotations

from dataclasses import dataclass

from policyhost import advisors


def saving(policy: float, heuristic: float, growth_weight: float = 1.0) -> float:
    """ml-compiler-opt's per-module reward (compilation_runner.py), for either problem's measure: the relative
    saving against LLVM's heuristic, positive when the policy's measure is lower (a smaller object, a lower
    RegAllocScore summed over the module's functions: summing first keeps a module with one hot function from being
    outvoted by its cold ones); a loss counts `growth_weight` times (EsParams.growth_weight)."""
    r = 1.0 - (policy + 0.01) / (heuristic + 0.01)
    return r if r >= 0 else growth_weight * r


@dataclass(frozen=True)
class Problem:
    """One training problem: the advisor, the regime, the score and the kinds of model it yields."""

    #: the advisor of policyhost/advisors.py the policy drives
    advisor: str
    #: the optimization level of every corpus (front end) and compile: the regime the users build in
    level: str
    #: what a module is scored by (said in records and tables)
    measure: str
    #: the trained policy's `mlgo.kind` (evolution strategies over a cloned and improved MLP)
    kind: str
    #: the warm start's `mlgo.kind` (behavioural cloning of LLVM's heuristic)
    warm_kind: str

    @property
    def advice(self) -> str:
        """The output a model must give (LLVM's advice name: the ONNX output too)."""
        return advisors.get(self.advisor).advice

    @property
    def default_feature(self) -> str | None:
        """The feature that carries LLVM's own decision, which the search flips and the clone learns; None when the
        advisor sends none (regalloc eviction in release mode: its clone's teacher is LLVM's rule rebuilt,
        policytrain/evict_model.py `rebuilt_default`)."""
        feature = advisors.get(self.advisor).default_feature
        return None if feature is None else str(feature)

    @staticmethod
    def reward(policy: float, heuristic: float, growth_weight: float = 1.0) -> float:
        """The per-module reward of the problem's measure (`saving`)."""
        return saving(policy, heuristic, growth_weight)


#: The inliner for size. `-Oz` front end and compiles: each module's bitcode must come from an `-Oz` front end
#: (every function `minsize optsize`, as in a user's `-Oz` build); training, checkpoint choice and held-out tables
#: on `-O2` bitcode measured a heuristic up to 23 % bigger than real `-Oz`, and a policy that beat it grew real
#: `-Oz` builds (issue 34; docs/policy-journal.md).
INLINE_SIZE = Problem(advisor="inline", level="Oz", measure=".text bytes of each module's object", kind="inline-es",
                      warm_kind="inline-bc")

#: Regalloc eviction for speed: `-O2` front end and compiles (the regime of a user's release build), each module
#: scored by LLVM's RegAllocScore of its functions (policytrain/evict_reward.py), the policy a per-candidate scorer
#: (policytrain/evict_model.py) cloned from LLVM's default eviction rule and improved by ES.
EVICT_SPEED = Problem(advisor="regalloc", level="O2", measure="RegAllocScore of each function (lower is better)",
                      kind="regalloc-es", warm_kind="regalloc-bc")
