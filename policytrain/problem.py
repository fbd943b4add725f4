"""The problem the trainer solves, declared once: inlining for size (ml-compiler-opt's `ProblemConfiguration`).

What is specific to inlining-for-size lives here and nowhere else: which LLVM advisor the policy drives (its
advice and the feature carrying LLVM's own decision come from `policyhost/advisors.py`), the level every corpus
and compile is at, what a module is scored by and the reward made of it, and the kinds its models are recorded
as. The search, the learning, the recipes and the fan-out read it; a second problem (regalloc eviction for speed)
would be a second record and the recipes that train it, not a second trainer.
"""

from __future__ import annotations

from dataclasses import dataclass

from policyhost import advisors


def size_reward(policy_size: int, heuristic_size: int, growth_weight: float = 1.0) -> float:
    """ml-compiler-opt's per-module reward (compilation_runner.py): positive when the policy is smaller; a module
    the policy grows counts `growth_weight` times (EsParams.growth_weight)."""
    r = 1.0 - (policy_size + 0.01) / (heuristic_size + 0.01)
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
    def default_feature(self) -> str:
        """The feature that carries LLVM's own decision, which the search flips and the clone learns."""
        return str(advisors.get(self.advisor).default_feature)

    @staticmethod
    def reward(policy_size: int, heuristic_size: int, growth_weight: float = 1.0) -> float:
        return size_reward(policy_size, heuristic_size, growth_weight)


#: The inliner for size. `-Oz` front end and compiles: each module's bitcode must come from an `-Oz` front end
#: (every function `minsize optsize`, as in a user's `-Oz` build); training, checkpoint choice and held-out tables
#: on `-O2` bitcode measured a heuristic up to 23 % bigger than real `-Oz`, and a policy that beat it grew real
#: `-Oz` builds (issue 34; docs/policy-journal.md).
INLINE_SIZE = Problem(advisor="inline", level="Oz", measure=".text bytes of each module's object", kind="inline-es",
                      warm_kind="inline-bc")
