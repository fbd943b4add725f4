"""policytrain/draws.py: a recipe of several draws trains each whole and publishes their average."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from farm.toolchain import Toolchain
from policytrain import draws
from policytrain.recipes import RECIPES


def test_each_draw_clones_with_its_own_seeds_the_first_with_the_recipes() -> None:
    from bench.policy_recipes import HISTORICAL  # the nightly's draws, as it ran them and measured apart

    nightly = HISTORICAL["nightly-two-draws"]
    assert nightly.draws == 2 and [draws.seeds_of(nightly, d) for d in range(2)] == [(0, 1, 2, 3, 4), (5, 6, 7, 8, 9)]
    assert draws.seeds_of(nightly, 1) == HISTORICAL["nightly-other-seeds"].seeds  # the second draw, measured alone
    assert draws.seeds_of(replace(nightly, seeds=(3,)), 2) == (5,)


def test_two_draws_are_two_whole_trainings_averaged(packages: dict[str, Path], tmp_path: Path,
                                                    toolchain: Toolchain) -> None:
    """The policy is exactly the average of the two networks each draw chose on its own (one training each, with
    the draw's seeds); every line and history row says its draw, and the average's validation is recorded."""
    from policytrain.explore import ExploreCache
    from policytrain.fanout import thread_fanout
    from policytrain.mlp import average
    from policytrain.params import Budget, EsParams
    from policytrain.trainer import Trainer, resolve_splits

    rec = replace(RECIPES["smoke"], budget=Budget(8, 1), es=EsParams(steps=1, pairs=2), draws=2)
    splits = resolve_splits(f"beta={packages['beta']}", f"alpha={packages['alpha']}", "", tmp_path, toolchain, rec)
    fanout = thread_fanout(toolchain, ExploreCache(tmp_path / "cache"), 2)
    lines: list[str] = []
    policy, info = draws.run(Trainer(toolchain, splits, rec, fanout, progress=lines.append))
    alone = [Trainer(toolchain, splits, replace(rec, seeds=(d,), draws=1), fanout, progress=lambda _: None).run()
             for d in range(2)]
    mean = average([net for net, _ in alone])
    assert all(np.array_equal(a, b) for a, b in zip(policy.ws + policy.bs, mean.ws + mean.bs, strict=True))
    assert info["chosen"] == f"the average of 2 draws ({alone[0][1]['chosen']}; {alone[1][1]['chosen']})"
    assert [h.get("draw") for h in info["history"]] == [1] * len(alone[0][1]["history"]) + \
        [2] * len(alone[1][1]["history"]) + [None]
    assert info["history"][-1]["stage"] == "average" and info["history"][-1]["validation"] == info["validation"]
    assert lines[0].startswith("draw 1/2: train on ") and any(ln.startswith("draw 2/2: es step 1/1") for ln in lines)
    assert lines[-1].startswith("2 draws averaged (") and f"validation {info['validation']:.4f}x" in lines[-1]
    # one draw is the trainer's own run, untouched
    one, single = draws.run(Trainer(toolchain, splits, replace(rec, seeds=(0,), draws=1), fanout,
                                    progress=lambda _: None))
    assert single == alone[0][1] and np.array_equal(one.ws[0], alone[0][0].ws[0])
