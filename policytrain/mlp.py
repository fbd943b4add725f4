"""The inliner policy network as plain numpy data: forward pass, limits, flat parameters, averages.

One small MLP serves every stage of training (policytrain/improve.py): behavioural cloning fits
it, evolution strategies perturb its flat parameter vector, exploration asks it for a decision
and for how sure it is, and publishing exports it to ONNX for `policy-cc` and LLVM users. Keeping
the weights as numpy arrays (not a torch module) lets an exploration or ES worker evaluate a
policy per decision in microseconds without importing torch, and the ONNX graph is written
from the same arrays, so what is published is exactly what was measured.

This module is the network and nothing else: how it is stored (npz files, JSON in Celery
messages) is policytrain/mlp_io.py, its ONNX graph policytrain/onnx_export.py. A worker that
only evaluates policies imports neither onnx nor the file formats.

Input: the LLVM inliner's features in the compiler's order, `inlining_default` included: the
policy learns where to depart from LLVM's heuristic, which it sees, rather than re-deriving it.
Features are log-scaled (`sign(x) * log1p(|x|)`) and standardised with the training set's mean
and spread, stored in the network. Output: two logits, [no inline, inline]."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

#: what a limit takes off the other decision's logit: far more than any margin a network reaches, so LLVM's stands
PIN_PUSH = 1e4
#: LLVM's own decision, an input of every network (see the module docstring)
DEFAULT = "inlining_default"


@dataclass(frozen=True)
class Limit:
    """Where a network keeps LLVM's decision whatever its own: LLVM decided `keeps` and its cost estimate lies more
    than the limit (the `Mlp` field `name`) beyond its threshold on `side` (+1 above, -1 below)."""

    name: str
    side: int
    keeps: int

    @functools.cached_property  # read on every decision of a network with this limit
    def push(self) -> np.ndarray:
        """Added to the logits where the limit holds: the logit of the decision LLVM did not make loses PIN_PUSH."""
        push = -PIN_PUSH * np.eye(2)[1 - self.keeps]
        push.setflags(write=False)
        return push


#: `Mlp.guard` keeps LLVM's "no" far above its threshold, `Mlp.floor` its "yes" far below it
LIMITS = (Limit("guard", +1, 0), Limit("floor", -1, 1))


def scale(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.log1p(np.abs(x))


@dataclass(frozen=True)
class Mlp:
    """Weights `ws[i]` (in, out) and biases `bs[i]`; ReLU between layers; inputs `features` (name, width, dtype).

    `dtype` is the ONNX input's element type, as LLVM sends the feature: `int64` or `float32`.
    """

    features: tuple[tuple[str, int, str], ...]
    mean: np.ndarray
    std: np.ndarray
    ws: tuple[np.ndarray, ...]
    bs: tuple[np.ndarray, ...]
    #: how strongly the network sticks to LLVM's own decision: `stick * (2 * inlining_default - 1)` is added to
    #: the margin, so it departs from the heuristic only where it is that sure (chosen on validation; ES does not
    #: perturb it)
    stick: float = 0.0
    #: how strongly it keeps LLVM's "no": `hold_no * (1 - inlining_default)` is taken off the inline logit, so
    #: with a large one the network only ever refuses an inline LLVM would make (not perturbed by ES either)
    hold_no: float = 0.0
    #: the furthest LLVM's cost estimate may be above its threshold for the network to add an inline LLVM refuses;
    #: above it LLVM's "no" stands (None: no guard). In the nightly's first search (418 training modules) such adds
    #: helped 6 times in 581 and cost 504 KB (docs/policy-journal.md#a-guard-on-far-added-inlines), and a network
    #: meets such states on code it never saw. Not perturbed by ES
    guard: float | None = None
    #: its mirror: the furthest LLVM's estimate may be *below* its threshold for the network to refuse an inline
    #: LLVM makes; further below (a last call to a static function, say) LLVM's "yes" stands (None: no floor). In
    #: that search such refusals helped 13 times in 522 and cost 29 KB. Not perturbed by ES
    floor: float | None = None

    @classmethod
    def init(cls, features: Sequence[tuple[str, int, str]], x: np.ndarray, hidden: Sequence[int] = (32, 32),
             seed: int = 0) -> Mlp:
        """A network whose normalisation is fitted to rows `x` and whose weights are small and seeded."""
        rng = np.random.default_rng(seed)
        s = scale(np.asarray(x, dtype=np.float64))
        mean, std = s.mean(axis=0), s.std(axis=0)
        std = np.where(std > 1e-6, std, 1.0)
        dims = [s.shape[1], *hidden, 2]
        ws = tuple(rng.normal(0, np.sqrt(2.0 / a), (a, b)) for a, b in itertools.pairwise(dims))
        bs = tuple(np.zeros(b) for b in dims[1:])
        return cls(checked_features(features), mean, std, ws, bs)

    @property
    def width(self) -> int:
        return sum(f[1] for f in self.features)

    def logits(self, x: np.ndarray) -> np.ndarray:
        """(n, 2) logits for rows of raw features."""
        x = np.asarray(x, dtype=np.float64)
        h = (scale(x) - self.mean) / self.std
        for i, (w, b) in enumerate(zip(self.ws, self.bs, strict=True)):
            h = h @ w + b
            if i < len(self.ws) - 1:
                h = np.maximum(h, 0.0)
        if self.lean is not None:
            no, slope = self.lean
            h = h + no + np.outer(x[:, self.default_at], slope)
        for lim in self.limits:
            h = h + np.outer(self.pinned(x, lim), lim.push)
        return h

    @property
    def limits(self) -> tuple[Limit, ...]:
        """The limits this network has (its `guard`, its `floor`: those not None)."""
        return tuple(lim for lim in LIMITS if getattr(self, lim.name) is not None)

    def pinned(self, x: np.ndarray, lim: Limit) -> np.ndarray:
        """1.0 for the rows where `lim` keeps LLVM's decision, else 0.0."""
        cost, threshold = self.gap_at
        beyond = lim.side * (x[:, cost] - x[:, threshold]) > getattr(self, lim.name)
        return (beyond & (x[:, self.default_at] == lim.keeps)).astype(np.float64)

    @functools.cached_property  # read on every decision of a network with a limit, like default_at
    def gap_at(self) -> tuple[int, int]:
        """Where `cost_estimate` and `threshold` sit in a row (a limit's gap is their difference)."""
        return feature_offset(self.features, "cost_estimate"), feature_offset(self.features, "threshold")

    @functools.cached_property  # read on every decision, like default_at
    def lean(self) -> tuple[np.ndarray, np.ndarray] | None:
        """How the logits lean on LLVM's decision `d`: offset `no + d * slope` (`stick` toward LLVM's decision
        either way, half on each logit; `hold_no` off the inline logit where LLVM says no); None when not at all.
        One affine term, so numpy and the ONNX graph compute it the same way."""
        if not (self.stick or self.hold_no):
            return None
        no = np.array([self.stick / 2, -self.stick / 2 - self.hold_no])
        yes = np.array([-self.stick / 2, self.stick / 2])
        return no, yes - no

    @functools.cached_property  # read on every decision of a sticky network (a frozen dataclass keeps a __dict__)
    def default_at(self) -> int:
        """Where `inlining_default` sits in a row."""
        return feature_offset(self.features, DEFAULT)

    def margin(self, x: np.ndarray) -> np.ndarray:
        """logit(inline) - logit(no inline): positive means inline, its size how sure the policy is."""
        z = self.logits(x)
        return z[:, 1] - z[:, 0]

    # -- flat parameters, for evolution strategies ------------------------------------------------
    def flat(self) -> np.ndarray:
        return np.concatenate([a.ravel() for pair in zip(self.ws, self.bs, strict=True) for a in pair])

    def with_flat(self, theta: np.ndarray) -> Mlp:
        ws, bs, pos = [], [], 0
        for w, b in zip(self.ws, self.bs, strict=True):
            ws.append(theta[pos:pos + w.size].reshape(w.shape))
            pos += w.size
            bs.append(theta[pos:pos + b.size].copy())
            pos += b.size
        return replace(self, ws=tuple(ws), bs=tuple(bs))


def feature_offset(features: Sequence[tuple[str, int, str]], feature: str) -> int:
    """Where `feature` starts in a row laid out as `features` (name, width, dtype); ValueError if it is not one."""
    pos = 0
    for name, width, _ in features:
        if name == feature:
            return pos
        pos += width
    raise ValueError(f"no {feature!r} feature")


def checked_features(items) -> tuple[tuple[str, int, str], ...]:
    """`items` as (name, width, dtype) of plain Python types; ValueError for an element type other than the two LLVM
    sends (what a stored network declares is checked as it is read, not when its ONNX graph is first built)."""
    out = tuple((str(n), int(w), str(d)) for n, w, d in items)
    bad = [d for _, _, d in out if d not in ("int64", "float32")]
    if bad:
        raise ValueError(f"feature element type {bad[0]!r} is neither int64 nor float32")
    return out


def average(nets: Sequence[Mlp]) -> Mlp:
    """One network whose logits are the mean of `nets`' (same inputs, depth, guard and floor): the hidden layers side by
    side (block-diagonal), the output layer their mean, `stick` and `hold_no` their mean (the lean is linear in
    both). Networks normalised differently (say, two retrains' chosen rounds) first take their normalisation into
    their first layer. Exact, and still an `Mlp`, so it is measured, perturbed and exported like any other."""
    import scipy.linalg

    first = nets[0]
    if any(n.features != first.features or len(n.ws) != len(first.ws)
           or any(getattr(n, lim.name) != getattr(first, lim.name) for lim in LIMITS) for n in nets):
        raise ValueError("only networks with the same inputs, depth, guard and floor can be averaged")
    if any(not np.array_equal(n.mean, first.mean) or not np.array_equal(n.std, first.std) for n in nets):
        nets = [_unnormalised(n) for n in nets]
        first = nets[0]
    k, last = len(nets), len(first.ws) - 1
    ws, bs = [], []
    for i in range(len(first.ws)):
        layer = [n.ws[i] for n in nets]
        if i == last:  # a network with no hidden layer is linear: its average is the mean weight
            ws.append(np.mean(layer, axis=0) if i == 0 else np.concatenate(layer, axis=0) / k)
        elif i == 0:
            ws.append(np.concatenate(layer, axis=1))
        else:
            ws.append(scipy.linalg.block_diag(*layer))
        bs.append(np.mean([n.bs[i] for n in nets], axis=0) if i == last else np.concatenate([n.bs[i] for n in nets]))
    return replace(first, ws=tuple(ws), bs=tuple(bs), stick=float(np.mean([n.stick for n in nets])),
                   hold_no=float(np.mean([n.hold_no for n in nets])))


def _unnormalised(net: Mlp) -> Mlp:
    """The same function with mean 0 and std 1: ((s - mean) / std) @ w + b == s @ (w / std) + (b - (mean / std) @ w)."""
    w, b = net.ws[0], net.bs[0]
    return replace(net, mean=np.zeros_like(net.mean), std=np.ones_like(net.std),
                   ws=(w / net.std[:, None], *net.ws[1:]), bs=(b - (net.mean / net.std) @ w, *net.bs[1:]))
