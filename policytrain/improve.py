"""Learning from exploration: weighted behavioural cloning, then evolution strategies, judged on `.text`.

The recipe is ml-compiler-opt's, scaled to a farm worker:

* **Weighted behavioural cloning** (`weighted_bc_trainer_lib.py`): fit the network to the best
  trajectory of every explored module. A module's steps weigh `1 + gain * saved` (saved: the
  fraction of `.text` its best trajectory saved over the base), so trajectories that shrank code
  pull harder than those that merely repeat the base. Decisions that depart from the heuristic
  are rare; they also weigh `flip_weight` times more, or the network would learn to ignore them.
  Every flip exploration *tried* is kept too, as counterfactual data: where it saved `.text`
  the flipped action is the label, where it cost the trajectory's action is, each weighted by
  how much it changed the module. A handful of winning flips teaches the network where to
  depart; the thousands of losing ones teach it where not to, which is what keeps a policy from
  growing code it never saw.
* **Evolution strategies** (`es/blackbox_learner.py`): antithetic pairs `theta +/- sigma * eps`,
  each pair evaluated on one training module; the per-module reward is ml-compiler-opt's
  `1 - (policy + 0.01) / (heuristic + 0.01)`; rewards are z-scored per step and the gradient
  estimate drives Adam. A step where fewer than 40% of the pairs compiled is skipped.
* **Keep the best on validation**: after BC and after every ES step, the candidate is measured
  on the validation packages (never trained on); the best seen is what training returns.

Everything that compiles is a pure function of its inputs (module, policy parameters, LLVM), so
Celery can fan it out (policytrain/fanout.py) and the driver (policytrain/trainer.py) stays
a loop over plain calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from policytrain.explore import ModuleResult, default_offset
from policytrain.mlp import Mlp
from policytrain.params import BcParams, EsParams, PriorParams
from policytrain.problem import INLINE_SIZE


def bc_dataset(results: Sequence[ModuleResult], params: BcParams) -> tuple[list[tuple[str, int, str]], np.ndarray,
                                                                             np.ndarray, np.ndarray]:
    """(features, rows, actions, weights) from the best trajectory of every explored module."""
    usable = [r for r in results if r.rows is not None and len(r.rows)]
    if not usable:
        raise ValueError("no explored module has a decision to learn from")
    features = [tuple(f) for f in usable[0].features]
    usable = [r for r in usable if [tuple(f) for f in r.features] == features]
    at = default_offset(features)
    xs, ys, ws = [], [], []
    for r in usable:
        w = np.full(len(r.actions), 1.0 + params.gain * max(r.saved, 0.0))
        departs = r.actions != r.rows[:, at].astype(np.int64)
        w[departs] *= params.flip_weight
        xs.append(r.rows)
        ys.append(r.actions)
        ws.append(w)
        if r.trial_rows is not None and len(r.trial_rows) and params.trial_weight > 0:
            # a flip that saved is a step to take; one that cost is a step to avoid, as strongly as it cost
            better = r.trial_deltas < 0
            xs.append(r.trial_rows)
            ys.append(np.where(better, r.trial_actions, 1 - r.trial_actions))
            ws.append(params.trial_weight * np.abs(r.trial_deltas) / r.base_size + params.trial_floor)
    return features, np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)


def bagged(results: Sequence[ModuleResult], seed: int) -> list[ModuleResult]:
    """A bootstrap resample of the explored modules that have decisions (as many, drawn with replacement, seeded):
    each seed's clone of a bagging recipe learns from its own draw, so the average does not follow a few modules."""
    usable = [r for r in results if r.rows is not None and len(r.rows)]
    if not usable:
        return list(results)  # bc_dataset says there is nothing to learn
    rng = np.random.default_rng([seed, len(usable)])
    return [usable[i] for i in rng.integers(0, len(usable), len(usable))]


def fit_bc(features: Sequence[tuple[str, int, str]], x: np.ndarray, y: np.ndarray, w: np.ndarray, params: BcParams,
           init: Mlp | None = None) -> Mlp:
    """Weighted cross-entropy fit of the network (torch, seeded, one thread); returned as numpy weights."""
    import torch

    torch.manual_seed(params.seed)
    torch.set_num_threads(1)
    base = init or Mlp.init(features, x, params.hidden, params.seed)
    layers = [torch.nn.Linear(wt.shape[0], wt.shape[1], dtype=torch.float64) for wt in base.ws]
    with torch.no_grad():
        for lin, wt, b in zip(layers, base.ws, base.bs, strict=True):
            lin.weight.copy_(torch.from_numpy(wt.T.copy()))
            lin.bias.copy_(torch.from_numpy(b.copy()))
    mods: list[torch.nn.Module] = []
    for i, lin in enumerate(layers):
        mods += [lin] if i == len(layers) - 1 else [lin, torch.nn.ReLU()]
    net = torch.nn.Sequential(*mods)
    from policytrain.mlp import scale

    h = torch.from_numpy((scale(x) - base.mean) / base.std)
    yt, wt_ = torch.from_numpy(y.astype(np.int64)), torch.from_numpy(w / w.mean())
    opt = torch.optim.Adam(net.parameters(), lr=params.lr)
    gen = torch.Generator().manual_seed(params.seed)
    loss_fn = torch.nn.CrossEntropyLoss(reduction="none")
    for _ in range(params.epochs):
        for b in torch.randperm(len(yt), generator=gen).split(params.batch):
            opt.zero_grad()
            loss = (loss_fn(net(h[b]), yt[b]) * wt_[b]).mean()
            loss.backward()
            opt.step()
    with torch.no_grad():
        ws = tuple(lin.weight.detach().numpy().T.copy() for lin in layers)
        bs = tuple(lin.bias.detach().numpy().copy() for lin in layers)
    return Mlp(base.features, base.mean, base.std, ws, bs)


def fit_prior(results: Sequence[ModuleResult], params: PriorParams) -> Mlp | None:
    """The prior from every flip of LLVM's own decision that exploration tried (helpful ones weighted up to
    balance the classes); None when too few flips helped."""
    xs, ys = [], []
    features = None
    for r in results:
        if r.trial_rows is None or not len(r.trial_rows):
            continue
        feats = [tuple(f) for f in r.features]
        features = features or feats
        if feats != features:
            continue
        of_default = r.trial_actions == 1 - r.trial_rows[:, default_offset(feats)].astype(np.int64)
        xs.append(r.trial_rows[of_default])
        ys.append((r.trial_deltas[of_default] < 0).astype(np.int64))
    if not xs:
        return None
    x, y = np.concatenate(xs), np.concatenate(ys)
    helpful = int(y.sum())
    if helpful < params.min_helpful or helpful == len(y):
        return None
    w = np.where(y == 1, (len(y) - helpful) / helpful, 1.0)
    return fit_bc(features, x, y, w, BcParams(hidden=params.hidden, epochs=params.epochs, seed=params.seed))


#: The problem's reward (policytrain/problem.py), by the name the learners know.
reward = INLINE_SIZE.reward


class Adam:
    """Adam on a flat parameter vector, ascending (ES maximises the reward)."""

    def __init__(self, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> None:
        self.lr, self.b1, self.b2, self.eps, self.t = lr, b1, b2, eps, 0
        self.m: np.ndarray | None = None
        self.v: np.ndarray | None = None

    def step(self, theta: np.ndarray, grad: np.ndarray) -> np.ndarray:
        if self.m is None:
            self.m, self.v = np.zeros_like(theta), np.zeros_like(theta)
        self.t += 1
        self.m = self.b1 * self.m + (1 - self.b1) * grad
        self.v = self.b2 * self.v + (1 - self.b2) * grad * grad
        mh, vh = self.m / (1 - self.b1 ** self.t), self.v / (1 - self.b2 ** self.t)
        return theta + self.lr * mh / (np.sqrt(vh) + self.eps)


def es_gradient(eps: np.ndarray, plus: Sequence[float | None], minus: Sequence[float | None], sigma: float,
                min_compiled: float) -> np.ndarray | None:
    """The antithetic ES gradient from per-pair rewards (None where a side failed to compile), z-scored;
    None when too few pairs compiled for the step to mean anything."""
    ok = [i for i, (p, m) in enumerate(zip(plus, minus, strict=True)) if p is not None and m is not None]
    if len(ok) < max(1, math.ceil(min_compiled * len(plus))):
        return None
    r = np.array([[plus[i], minus[i]] for i in ok], dtype=np.float64)
    spread = r.std()
    z = (r - r.mean()) / (spread if spread > 1e-12 else 1.0)
    return ((z[:, 0] - z[:, 1])[:, None] * eps[ok]).sum(axis=0) / (2 * len(ok) * sigma)


#: evaluate(policy, module index) -> reward on that training module, None if it failed to compile
PairEval = Callable[[list[tuple[Mlp, int]]], list[float | None]]


def es_step(policy: Mlp, adam: Adam, params: EsParams, step: int, modules: int, evaluate: PairEval) -> tuple[
        Mlp, dict]:
    """One ES step: `pairs` antithetic perturbations, pair i on module (seeded choice); Adam update."""
    rng = np.random.default_rng([params.seed, step])
    theta = policy.flat()
    eps = rng.standard_normal((params.pairs, theta.size))
    if params.only_nonzero:
        eps *= theta != 0
    mods = rng.integers(0, modules, params.pairs)
    jobs = [(policy.with_flat(theta + s * params.sigma * e), int(m)) for e, m in zip(eps, mods, strict=True)
            for s in (1, -1)]
    rewards = evaluate(jobs)
    plus, minus = rewards[0::2], rewards[1::2]
    grad = es_gradient(eps, plus, minus, params.sigma, params.min_compiled)
    done = [r for r in rewards if r is not None]
    info = {"step": step, "pairs": params.pairs, "compiled": len(done),
            "mean_reward": float(np.mean(done)) if done else None, "skipped": grad is None}
    if grad is None:
        return policy, info
    return policy.with_flat(adam.step(theta, grad)), info
