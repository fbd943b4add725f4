"""The regalloc eviction policy: one small network scoring each candidate, the highest masked-in score evicted.

LLVM's release-mode eviction advisor sends, per decision, a row of 33 values for each per-candidate feature (32
interfering live ranges and, last, the range being allocated: choosing it means "evict nothing"), a `mask` of the
candidates it may choose, and a few per-decision scalars (`progress`). ml-compiler-opt's eviction model applies the
same network to every candidate's column of features and takes the masked argmax; so does this one: the network
(policytrain/mlp.py's `Mlp`, one output) sees a candidate's features beside the decision's scalars, so what it
learns about one candidate holds for every position, and 33 positions cost no more weights than one.

The same numpy forward serves behavioural cloning (policytrain/evict_train.py), ES (its flat parameters are the
network's) and the host while training; policytrain/evict_onnx.py writes the ONNX graph of exactly this computation
for `policy-cc --advisor regalloc`. Also here: LLVM's default eviction rule rebuilt from the features (the clone's
teacher: release mode sends no default decision) and the host policies that answer with either and log what
they saw.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from farm.errors import InputError
from policyhost.runnable import EVICT_MASK, masked_argmax
from policytrain.mlp import Mlp, scale

TYPE_CHECKING = False
if TYPE_CHECKING:
    from policyhost.protocol import Header, Observation

#: the policy input a decision's function embedding is fed as (policytrain/evict_context.py)
CONTEXT = "function_embedding"
#: the furthest from zero a feature is taken as: LLVM sends infinite weights for unspillable ranges
BOUND = 1e30


def clean(x: np.ndarray) -> np.ndarray:
    """Features as the network reads them: NaN (LLVM's 0/0 when a candidate's aggregates are empty) as 0, infinities
    and beyond as +-BOUND (the ONNX graph does the same: policytrain/evict_onnx.py)."""
    return np.clip(np.nan_to_num(np.asarray(x, dtype=np.float64), nan=0.0), -BOUND, BOUND)


@dataclass(frozen=True)
class Layout:
    """Where a decision's values go: per-candidate features (mask excluded) and per-decision scalars, (name, dtype)
    each in the compiler's order, how many candidates a decision has, and the length of the function's MIR2Vec
    embedding read after them (policytrain/evict_context.py; 0: none)."""

    columns: tuple[tuple[str, str], ...]
    scalars: tuple[tuple[str, str], ...]
    width: int
    context: int = 0

    @classmethod
    def of(cls, header: Header) -> Layout:
        """The layout of the features a compiler's session header declares; a one-line InputError without a mask."""
        mask = header.feature(EVICT_MASK)
        if mask is None:
            raise InputError("an eviction policy needs the 'mask' feature: the compiler is not asking for evictions")
        cols, scalars = [], []
        for f in header.features:
            dtype = "float32" if f.is_float else "int64"
            if f.name == EVICT_MASK:
                continue
            if f.count == mask.count:
                cols.append((f.name, dtype))
            elif f.count == 1:
                scalars.append((f.name, dtype))
        return cls(tuple(cols), tuple(scalars), mask.count)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.columns + self.scalars) + ((CONTEXT,) if self.context else ())

    def matrix(self, feats: Mapping[str, Sequence[float]], context: np.ndarray | None = None) -> np.ndarray:
        """(width, F): each candidate's features, the decision's scalars and then its function's embedding
        (zeros when unknown) repeated on every row."""
        cols = [np.asarray(feats[n], dtype=np.float64) for n, _ in self.columns]
        cols += [np.full(self.width, float(feats[n][0])) for n, _ in self.scalars]
        x = np.stack(cols, axis=1)
        if not self.context:
            return x
        ctx = np.zeros(self.context) if context is None else np.asarray(context, dtype=np.float64)
        return np.concatenate([x, np.broadcast_to(ctx, (self.width, self.context))], axis=1)


@dataclass(frozen=True)
class Scorer:
    """The per-candidate network and the layout it reads."""

    layout: Layout
    net: Mlp

    @classmethod
    def init(cls, layout: Layout, x: np.ndarray, hidden: Sequence[int] = (16,), seed: int = 0) -> Scorer:
        """Normalisation fitted to candidate rows `x` (n, F), small seeded weights, one output."""
        rng = np.random.default_rng(seed)
        s = scale(clean(x))
        mean, std = s.mean(axis=0), s.std(axis=0)
        std = np.where(std > 1e-6, std, 1.0)
        dims = [s.shape[1], *hidden, 1]
        ws = tuple(rng.normal(0, np.sqrt(2.0 / a), (a, b)) for a, b in itertools.pairwise(dims))
        bs = tuple(np.zeros(b) for b in dims[1:])
        feats = tuple((n, 1, d) for n, d in layout.columns + layout.scalars)
        if layout.context:
            feats += ((CONTEXT, layout.context, "float32"),)
        return cls(layout, Mlp(feats, mean, std, ws, bs))

    def scores(self, x: np.ndarray) -> np.ndarray:
        """(n, width) scores for decisions `x` (n, width, F)."""
        n, w, f = x.shape
        return self.net.logits(clean(x.reshape(n * w, f))).reshape(n, w)

    def decide(self, feats: Mapping[str, Sequence[float]], context: np.ndarray | None = None) -> int:
        return masked_argmax(self.scores(self.layout.matrix(feats, context)[None])[0].tolist(), feats[EVICT_MASK])

    def with_net(self, net: Mlp) -> Scorer:
        return replace(self, net=net)


def rebuilt_default(f: Mapping[str, Sequence[float]]) -> int:
    """DefaultEvictionAdvisor::tryFindEvictionCandidate (RegAllocEvictionAdvisor.cpp) redone on the features: the
    release-mode advisor sends no default decision. Cheapest (broken hints + 10 x urgent, max weight) candidate
    lighter than the one being allocated, no local interference once one is found, stop at a hint; else the
    candidate itself (no eviction). The features are normalised aggregates, so this is not exact in general
    (on zlib's trees.c it is: tests/policyhost/test_evict_channel.py)."""
    mask, w, cand = f[EVICT_MASK], f["use_def_density"], len(f[EVICT_MASK]) - 1
    best, best_cost = None, (math.inf, math.inf)
    for i in range(cand):
        if not mask[i] or (f["nr_urgent"][i] == 0 and mask[cand] and not w[cand] > w[i]):
            continue
        cost = (f["nr_broken_hints"][i] + 10 * f["nr_urgent"][i], w[i])
        if not cost < best_cost or (best is not None and f["is_local"][i] > 0):
            continue
        best, best_cost = i, cost
        if f["is_hint"][i]:
            break
    if best is None:
        return cand if mask[cand] else list(mask).index(1)
    return best


class EvictPolicy:
    """A host policy answering `answer(features, embedding)` (the rebuilt default, or a `Scorer`); with `log`, it
    keeps every decision's matrix, mask and answer: what behavioural cloning learns from. `embeddings` (function
    name -> vector, policytrain/evict_context.py) adds each decision's function's MIR2Vec embedding to what it sees
    and logs."""

    def __init__(self, name: str, answer: Callable[..., int], log: bool = False,
                 embeddings: Mapping[str, np.ndarray] | None = None, dim: int = 0) -> None:
        self.name, self.answer, self.log = name, answer, log
        self.embeddings, self.dim = embeddings or {}, dim
        self.layout: Layout | None = None
        self.xs: list[np.ndarray] = []
        self.masks: list[np.ndarray] = []
        self.ys: list[int] = []
        self.unknown = 0  # decisions in a function without an embedding (zeros seen instead)

    def bind(self, header: Header) -> None:
        layout = replace(Layout.of(header), context=self.dim)
        if self.layout is not None and layout != self.layout:
            raise InputError("the compiler changed its feature set within one compile")
        self.layout = layout

    def decide(self, obs: Observation) -> int:
        ctx = None
        if self.dim:
            ctx = self.embeddings.get(obs.context or "")
            self.unknown += ctx is None
        choice = self.answer(obs.features, ctx)
        if self.log:
            self.xs.append(self.layout.matrix(obs.features, ctx))
            self.masks.append(np.asarray(obs.features[EVICT_MASK], dtype=bool))
            self.ys.append(choice)
        return choice


def teacher(log: bool = True, embeddings: Mapping[str, np.ndarray] | None = None, dim: int = 0) -> EvictPolicy:
    return EvictPolicy("default-rebuilt", lambda f, _ctx: rebuilt_default(f), log, embeddings, dim)


def scorer_policy(scorer: Scorer, embeddings: Mapping[str, np.ndarray] | None = None) -> EvictPolicy:
    return EvictPolicy("scorer", scorer.decide, False, embeddings, scorer.layout.context)
