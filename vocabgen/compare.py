"""How far two vocabularies' vectors of the same entities moved, measured so that independent trainings compare.

TransE's score ||h + r - t|| does not change when one map is applied to every vector: any
rotation or reflection for the L2 distance, a permutation or sign flip of the coordinates for
the farm's L1 (both orthogonal), so two trainings (other seed, other data) land in spaces that
differ by such a map plus whatever training changed. The raw per-entity angle mixes both: between independently
trained versions it is about 1 (orthogonal) for every entity, and ranking entities by it ranks
noise. Two measures see only what training changed:

* aligned drift: fit the orthogonal map that best carries version A onto version B (orthogonal
  Procrustes, scipy.linalg.orthogonal_procrustes) on the anchor entities (trained in both), then
  1 - cosine between B's vector and A's mapped one. Each anchor is measured with the map fitted
  on the other anchors (held out in small groups, `_folds`): with about as many anchors as
  dimensions (IR: 81 trained entities in 75 dimensions) a map fitted on all of them bends to fit
  each one, and two unrelated sets of random vectors then "align" to a mean drift of 0.27 instead
  of 1. Held out, it stays about 1; with no more anchors than dimensions the others do not fix
  the map, so all are used;
* nearest-neighbour overlap: the share of an entity's k nearest anchors (by cosine) that are the
  same in both versions; it needs no alignment at all;
* structure: the correlation of an entity's similarities to all anchors in both versions (no
  alignment either; the measure that stays well posed with few anchors per dimension).

A rotated copy of a vocabulary has aligned drift 0 and overlap 1 for every entity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Neighbours per entity for the overlap (fewer when there are fewer anchors).
NN_K = 5


@dataclass(frozen=True)
class Comparison:
    """Per row of both matrices: raw and aligned cosine drift (0..2), k-NN overlap (0..1), structure (-1..1)."""

    raw: np.ndarray
    aligned: np.ndarray
    overlap: np.ndarray
    anchors: int
    k: int
    structure: np.ndarray | None = None


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def cosine_drift(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """1 - cos per row; a zero vector against a zero vector is 0, against anything else 1."""
    ua, ub = _unit(np.asarray(a, np.float64)), _unit(np.asarray(b, np.float64))
    cos = np.sum(ua * ub, axis=1)
    za, zb = ~ua.any(axis=1), ~ub.any(axis=1)
    cos = np.where(za | zb, np.where(za & zb, 1.0, 0.0), cos)
    return np.clip(1.0 - cos, 0.0, 2.0)


def rotation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The orthogonal matrix R minimising ||a R - b|| (rows: the same entities in both)."""
    from scipy.linalg import orthogonal_procrustes

    r, _ = orthogonal_procrustes(np.asarray(a, np.float64), np.asarray(b, np.float64))
    return r


def neighbours(x: np.ndarray, pool: np.ndarray, k: int) -> np.ndarray:
    """For every row of `x`, the indices (rows of `x`) of its `k` most cosine-similar rows in `pool`, self excluded.

    Ties are broken by index, so equal inputs give equal answers.
    """
    u = _unit(np.asarray(x, np.float64))
    sim = u @ u[pool].T
    sim[pool, np.arange(len(pool))] = -np.inf  # an entity is not its own neighbour
    order = np.argsort(-sim, axis=1, kind="stable")[:, :k]
    return pool[order]


def nn_overlap(a: np.ndarray, b: np.ndarray, pool: np.ndarray, k: int = NN_K) -> tuple[np.ndarray, int]:
    """Per row: |k-NN in a ∩ k-NN in b| / k, neighbours drawn from `pool`; returns (overlaps, k used)."""
    k = min(k, len(pool) - 1)
    if k < 1:
        return np.full(len(a), np.nan), 0
    na, nb = neighbours(a, pool, k), neighbours(b, pool, k)
    return np.array([len(set(x) & set(y)) / k for x, y in zip(na.tolist(), nb.tolist(), strict=True)]), k


def structure(a: np.ndarray, b: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """Per row: the Pearson correlation of its cosine similarities to the `pool` rows in `a` and in `b` (self excluded).

    Like the overlap it needs no alignment, but it reads every anchor, not the k nearest: with
    about as many anchors as dimensions, where both alignments above are ill-posed, it still tells
    a retrain that kept the vocabulary's geometry (near 1) from an unrelated one (near 0).
    """
    def sims(x: np.ndarray) -> np.ndarray:
        u = _unit(np.asarray(x, np.float64))
        return u @ u[pool].T

    sa, sb = sims(a), sims(b)
    keep = np.ones_like(sa, bool)
    keep[pool, np.arange(len(pool))] = False
    out = np.full(len(a), np.nan)
    for i in range(len(a)):
        x, y = sa[i, keep[i]], sb[i, keep[i]]
        if len(x) > 1 and x.std() > 0 and y.std() > 0:
            out[i] = np.corrcoef(x, y)[0, 1]
    return out


def _folds(pool: np.ndarray, dim: int) -> list[np.ndarray]:
    """Anchors measured together, each group by the map of all other anchors: none when those would not fix it.

    A group is at most a tenth of the anchors (ten fits, whatever the vocabulary's size) and small
    enough that the rest still outnumber the dimensions (IR, 81 anchors in 75 dimensions: groups of
    five); groups take every n-th anchor, so one section is never left out whole.
    """
    size = min(-(-len(pool) // 10), len(pool) - dim - 1)
    if size < 1:
        return []
    n = -(-len(pool) // size)
    return [pool[j::n] for j in range(n)]


def compare(a: np.ndarray, b: np.ndarray, anchors: np.ndarray | None = None, k: int = NN_K) -> Comparison:
    """Rows of `a` and `b` are the same entities; `anchors` (bool mask, default all) are those trained in both.

    The alignment is fitted on the anchors only (a filler vector, its section's mean, says nothing
    about where training put an entity) and applied to every other row; each anchor is left out of
    its own fit when the others still fix the map (`_folds`). With no anchor, aligned drift and
    overlap are NaN.
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} and {b.shape}")
    mask = np.ones(len(a), bool) if anchors is None else np.asarray(anchors, bool)
    pool = np.flatnonzero(mask)
    raw = cosine_drift(a, b)
    if len(pool) == 0:
        nan = np.full(len(a), np.nan)
        return Comparison(raw, nan, nan, 0, 0, nan)
    aligned = cosine_drift(a @ rotation(a[pool], b[pool]), b)
    for held in _folds(pool, a.shape[1]):  # each anchor by the map of the others (the module's docstring says why)
        others = np.setdiff1d(pool, held)
        aligned[held] = cosine_drift(a[held] @ rotation(a[others], b[others]), b[held])
    overlap, used = nn_overlap(a, b, pool, k)
    return Comparison(raw, aligned, overlap, len(pool), used, structure(a, b, pool))
