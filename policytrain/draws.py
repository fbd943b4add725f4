"""Whole trainings of one recipe, averaged into the policy it publishes (`TrainingRecipe.draws`).

One training is a draw. Which few departures from LLVM its clones learn decides most of what it does on a
package: the nightly's two draws (cloning seeds 0-4 and 5-9, the same data, the same cache) landed 0.22 % of
geomean apart on eleven packages nobody trained on, and 3.6 % apart on one
(docs/policy-journal.md#a-guard-on-far-added-inlines). A draw's chosen network is kept by its own validation, so
each draw runs whole (its rounds, its ES, its choice); the policy is
then their average (policytrain/mlp.py `average`: exact, and still a network measured and exported like any
other). An average keeps what the draws agree on and halves what only one of them learned: on the packages that
decided it beat the mean of its draws in two looks of three, and on the evaluation packages in every look.
Round 1 searches the heuristic in every draw, so the exploration cache searches it once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from policytrain.mlp import Mlp, average
from policytrain.recipes import TrainingRecipe


class Training(Protocol):
    """What a draw needs of a training run (trainer.py `Trainer`, a dataclass; this module sits below it)."""

    recipe: TrainingRecipe
    progress: Callable[[str], None]
    history: list[dict]

    def run(self) -> tuple[Mlp, dict]: ...

    def validate(self, policy: Mlp) -> Any: ...


def seeds_of(recipe: TrainingRecipe, draw: int) -> tuple[int, ...]:
    """Draw `draw`'s cloning seeds (0: the recipe's own): the recipe's shifted past the draws before it, so the
    nightly's second draw clones with seeds 5-9, as bench/policy_recipes.py `nightly-other-seeds` does alone."""
    return tuple(s + draw * len(recipe.seeds) for s in recipe.seeds)


def run(t: Training) -> tuple[Mlp, dict]:
    """`t.run()`, or with `TrainingRecipe.draws` above one, each draw run whole and their chosen networks averaged; the
    average is measured on validation for the record (it is not a choice: the draws made theirs)."""
    n = t.recipe.draws
    if n <= 1:
        return t.run()
    nets, chosen = [], []
    for d in range(n):
        def say(line: str, d: int = d) -> None:
            t.progress(f"draw {d + 1}/{n}: {line}")

        # a Trainer is a dataclass: the draw is the same run with its own seeds, lines and history
        one = replace(t, recipe=replace(t.recipe, seeds=seeds_of(t.recipe, d), draws=1), progress=say,  # type: ignore[type-var]
                      history=[])
        net, info = one.run()
        t.history += [{**row, "draw": d + 1} for row in info["history"]]
        nets.append(net)
        chosen.append(info["chosen"])
    policy = average(nets)
    val = t.validate(policy)
    t.history.append({"stage": "average", "draws": n, **val.fields()})
    t.progress(f"{n} draws averaged ({'; '.join(chosen)}): validation {val}")
    return policy, {**val.fields(), "chosen": f"the average of {n} draws ({'; '.join(chosen)})",
                    "history": t.history}
