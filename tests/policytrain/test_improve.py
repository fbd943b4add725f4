"""Learning from exploration, without a compiler: weighted cloning, the ES gradient, the reward."""

from __future__ import annotations

import numpy as np
import pytest

from farm.numeric import geomean
from policytrain.explore import ModuleResult
from policytrain.improve import (
    Adam,
    BcParams,
    EsParams,
    PriorParams,
    bagged,
    bc_dataset,
    es_gradient,
    es_step,
    fit_bc,
    fit_prior,
    reward,
)
from policytrain.mlp import Mlp

FEATURES = [("callee_users", 1, "int64"), ("cost", 1, "int64"), ("inlining_default", 1, "int64")]


def _module(name: str, rows: np.ndarray, actions: np.ndarray, base: int, best: int) -> ModuleResult:
    return ModuleResult(name, base, best, [], 1, features=FEATURES, rows=rows, actions=actions)


def _synthetic(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The heuristic's default, departed from where a callee has exactly two users (what exploration finds)."""
    rng = np.random.default_rng(seed)
    users, cost = rng.integers(1, 6, n), rng.integers(0, 300, n)
    default = (cost < 60).astype(np.int64)
    action = np.where(users == 2, 1, default)
    return np.stack([users, cost, default], axis=1).astype(np.float64), action


def test_bagging_resamples_the_modules_with_decisions_per_seed() -> None:
    """Each seed draws as many modules as have decisions, with replacement, the same draw every time; a module
    that failed (no rows) is never drawn, and with none usable the results pass through for bc_dataset to refuse."""
    mods = [_module(f"m{i}", *_synthetic(5, i), 100, 100) for i in range(20)]
    failed = ModuleResult("bad", None, None, [], 1, error="crashed")
    draws = {seed: bagged([*mods, failed], seed) for seed in (0, 1)}
    for seed, got in draws.items():
        assert len(got) == 20 and failed not in got and set(map(id, got)) <= set(map(id, mods))
        assert [r.name for r in got] == [r.name for r in bagged([*mods, failed], seed)]
        assert len({r.name for r in got}) < 20  # with replacement: 20 draws of 20 repeat one (P > 0.99999)
    assert [r.name for r in draws[0]] != [r.name for r in draws[1]]
    assert bagged([failed], 0) == [failed]


def test_reward_is_ml_compiler_opts() -> None:
    assert reward(90, 100) == pytest.approx(1 - 90.01 / 100.01)
    assert reward(100, 100) == 0 and reward(110, 100) < 0
    # a growth weighed twice (EsParams.growth_weight) costs twice as much; a saving is what it was
    assert reward(110, 100, 2.0) == pytest.approx(2 * reward(110, 100))
    assert reward(90, 100, 2.0) == reward(90, 100) and reward(100, 100, 2.0) == 0


def test_departures_and_savings_weigh_more() -> None:
    x, y = _synthetic(200, 1)
    saved, same = _module("a", x, y, 1000, 900), _module("b", x, x[:, 2].astype(np.int64), 1000, 1000)
    feats, xs, ys, ws = bc_dataset([saved, same], BcParams(gain=10, flip_weight=5))
    assert feats == FEATURES and len(ys) == 400
    departs = ys[:200] != xs[:200, 2]
    assert ws[:200][~departs] == pytest.approx(1 + 10 * 0.1)
    assert ws[:200][departs] == pytest.approx(5 * (1 + 10 * 0.1))
    assert set(ws[200:]) == {1.0}
    with pytest.raises(ValueError, match="no explored module"):
        bc_dataset([ModuleResult("c", None, None, [], 1, error="broken")], BcParams())


def test_tried_flips_teach_both_ways_as_strongly_as_they_changed_the_module() -> None:
    x, _ = _synthetic(10, 5)
    r = _module("t", x, x[:, 2].astype(np.int64), 1000, 1000)
    r.trial_rows, r.trial_actions, r.trial_deltas = x[:3], np.array([1, 0, 1]), np.array([-20, 10, 0])
    _, _, ys, ws = bc_dataset([r], BcParams(trial_weight=1000, trial_floor=0.1))
    assert len(ys) == 13 and list(ys[10:]) == [1, 1, 0]  # saved: take it; cost or nothing: keep the trajectory's
    assert ws[10:] == pytest.approx([1000 * 20 / 1000 + 0.1, 1000 * 10 / 1000 + 0.1, 0.1])


def test_cloning_learns_where_to_depart_from_the_heuristic() -> None:
    x, y = _synthetic(3000, 2)
    feats, xs, ys, ws = bc_dataset([_module("m", x, y, 100, 90)], BcParams())
    net = fit_bc(feats, xs, ys, ws, BcParams(epochs=30, hidden=(16, 16)))
    tx, ty = _synthetic(1000, 3)  # rows it never saw
    assert ((net.margin(tx) > 0).astype(int) == ty).mean() > 0.97


def test_antithetic_gradient_needs_enough_pairs_and_points_uphill() -> None:
    eps = np.eye(3)
    grad = es_gradient(eps, [1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], 0.1, 0.4)
    assert grad[0] > 0 and grad[1] == grad[2] == 0
    assert es_gradient(eps, [1.0, None, None], [-1.0, 0.0, None], 0.1, 0.4) is None


def test_evolution_strategies_climb_a_known_reward() -> None:
    """ES with Adam on a network whose reward is its closeness to a target: it gets closer."""
    x, _ = _synthetic(20, 4)
    net = Mlp.init(FEATURES, x, (4,), seed=0)
    target = net.flat() + 0.5
    params = EsParams(steps=40, pairs=8, sigma=0.05, step_size=0.05)
    adam = Adam(params.step_size)

    def evaluate(jobs):
        return [None if i == 0 and step == 3 else -float(np.sum((p.flat() - target) ** 2)) for p, i in jobs]

    start = np.linalg.norm(net.flat() - target)
    skipped = 0
    for step in range(1, params.steps + 1):
        net, info = es_step(net, adam, params, step, 4, evaluate)
        skipped += info["skipped"]
    assert np.linalg.norm(net.flat() - target) < 0.5 * start
    assert skipped == 0  # a few failed compiles in one step do not skip it


def test_evolution_strategies_can_leave_an_averaged_networks_zero_blocks_alone() -> None:
    """`EsParams.only_nonzero`: an average of clones is block-diagonal; ES perturbs and moves its clones' own weights
    and leaves the zero blocks between them at zero (without it, it moves those too)."""
    from dataclasses import replace

    from policytrain.mlp import average

    x, _ = _synthetic(20, 4)
    net = average([Mlp.init(FEATURES, x, (4, 4), seed=s) for s in (0, 1)])
    zero = net.flat() == 0
    assert zero.sum() >= 32, "two clones side by side leave zero blocks between them"
    params = EsParams(steps=3, pairs=4, only_nonzero=True)

    def evaluate(jobs):
        return [float(np.sum(p.flat())) for p, _ in jobs]

    for only, moved_zero in ((True, False), (False, True)):
        p, adam = net, Adam(params.step_size)
        for step in range(1, params.steps + 1):
            p, _ = es_step(p, adam, replace(params, only_nonzero=only), step, 4, evaluate)
        assert (p.flat()[zero] != 0).any() == moved_zero
        assert (p.flat()[~zero] != net.flat()[~zero]).any()


def test_geomean() -> None:
    assert geomean([0.5, 2.0]) == pytest.approx(1.0)


def _tried(name: str, n: int, seed: int) -> ModuleResult:
    """A heuristic trajectory whose tried flips helped exactly where the callee has two users and LLVM inlined."""
    x, _ = _synthetic(n, seed)
    r = _module(name, x, x[:, 2].astype(np.int64), 1000, 1000)
    helps = (x[:, 0] == 2) & (x[:, 2] == 1)
    r.trial_rows, r.trial_actions = x, 1 - x[:, 2].astype(np.int64)
    r.trial_deltas = np.where(helps, -8, 12)
    return r


def test_the_prior_ranks_the_flips_that_helped_first() -> None:
    prior = fit_prior([_tried("a", 1500, 6), _tried("b", 1500, 7)], PriorParams(hidden=(16, 16), epochs=30))
    assert prior is not None
    x, _ = _synthetic(400, 8)  # states it never saw
    helps = (x[:, 0] == 2) & (x[:, 2] == 1)
    first = np.argsort(-prior.margin(x))[: int(helps.sum())]
    assert helps[first].mean() > 0.9, "the most promising flips are the ones that help"


def test_no_prior_without_enough_flips_that_helped() -> None:
    r = _tried("a", 300, 9)
    r.trial_deltas = np.where(np.arange(300) < 5, -1, 3)
    assert fit_prior([r], PriorParams(min_helpful=20)) is None
    assert fit_prior([ModuleResult("c", None, None, [], 1, error="broken")], PriorParams()) is None
