"""How far two vocabularies' vectors of the same entities moved, measured so that independent trainings compare.

TransE's score ||h + r - t|| does not change when one map is applied to every vector: any
rotation or reflection for the L2 distance, a permutation or sign flip of the coordinates for
the farm's L1 (both orthogonal), so two trainings (other seed, other data) land in spaces that
differ by such a map plus whatever training changed. The raw per-entity angle mixes both: between independently
trained versions it is about 1 (orthogonal) for every entity, and ranking entities by it ranks
noise. Two measures see only what training changed:

* aligned drift: fit the orthogonal map that best carries version A onto version B (orthogonal
  Procrustes, `rotation`) on the anchor entities (trained in both), then
  1 - cosine between B's vector and A's mapped one. Each anchor is measured with the map fitted
  on the other anchors (held out in small groups, `_folds`): with about as many anchors as
  dimensions (IR: 81 trained entities in 75 dimensions) a map fitted on all of them bends to fit
  each one, and two unrelated sets of random vectors then "align" to a mean drift of 0.27 instead
  of 1. Held out, it stays about 1; where the others do not fix the map (`rotation`: no more of them
  than dimensions, or all in a lower-dimensional subspace) the map of all anchors is used, and where
  all anchors together do not fix it there is no aligned drift (NaN): any one of the maps that fit
  equally well would be an arbitrary pick, and in practice the CPU's BLAS kernel picked it;
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

#: A singular value of the anchors' cross-covariance below this share of the largest counts as zero (`rotation`):
#: five orders or more above what rounding leaves of an exact zero (1e-16 times the rows summed), four below what
#: 76 unrelated random vectors in 75 dimensions give (1e-5..1e-3), and small enough that rounding moves a map it
#: accepts by about 1e-7 at most.
RANK_TOL = 1e-9

#: Decimals to which cosine similarities are compared (`neighbours`, `structure`).
SIM_DECIMALS = 9


@dataclass(frozen=True)
class Comparison:
    """Per row of both matrices: raw and aligned cosine drift (0..2), k-NN overlap (0..1), structure (-1..1)."""

    raw: np.ndarray
    aligned: np.ndarray
    overlap: np.ndarray
    anchors: int
    k: int
    structure: np.ndarray | None = None
    #: the anchors fix the orthogonal map (`rotation`); when not, `aligned` is NaN throughout
    fixed: bool = False
    #: anchors measured by the map of the other anchors (the rest by the map of all of them)
    held_out: int = 0


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


def rotation(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """The orthogonal matrix R minimising ||a R - b|| (rows: the same entities in both); None when it is not unique.

    Orthogonal Procrustes: R = U V^T for the SVD U S V^T of a^T b. R is unique exactly when a^T b is
    non-singular. A zero singular value leaves its singular vectors' sign free (one zero: a rotation
    and a reflection fit equally well; more: a continuum), and the SVD returns whichever its rounding
    leads to, that is whichever kernel OpenBLAS runs on the CPU: six toy anchors in four dimensions,
    four of them in one plane, gave an aligned drift of 2.00 on one x86-64 and 0.89 on another. Fewer
    rows than dimensions always leave R open; more can too (rows in a lower-dimensional subspace, or
    b's rows so). A singular value below RANK_TOL of the largest counts as zero.
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if len(a) < a.shape[1]:
        return None
    u, s, vt = np.linalg.svd(a.T @ b)
    if not s[0] > 0 or s[-1] <= RANK_TOL * s[0]:
        return None
    return u @ vt


def neighbours(x: np.ndarray, pool: np.ndarray, k: int) -> np.ndarray:
    """For every row of `x`, the indices (rows of `x`) of its `k` most cosine-similar rows in `pool`, self excluded.

    Ties are broken by index. Similarities are compared to SIM_DECIMALS decimals: two that are equal in
    exact arithmetic (a rotated copy, or the toy vocabularies' small integers) come out of the matrix
    product a few units in the last place apart, in an order that depends on the CPU's BLAS kernel;
    rounded, they tie (unless they straddle a rounding boundary: a chance of about 1e-7).
    """
    u = _unit(np.asarray(x, np.float64))
    sim = np.round(u @ u[pool].T, SIM_DECIMALS)
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
    a retrain that kept the vocabulary's geometry (near 1) from an unrelated one (near 0). Similarities are
    rounded as in `neighbours`: ones all equal in exact arithmetic have no correlation (NaN), where unrounded
    their last bits, spread by the CPU's BLAS kernel, would correlate to +1 or -1.
    """
    def sims(x: np.ndarray) -> np.ndarray:
        u = _unit(np.asarray(x, np.float64))
        return np.round(u @ u[pool].T, SIM_DECIMALS)

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
    """Anchors measured together, each group by the map of all other anchors: none when too few would remain.

    A group is at most a tenth of the anchors (ten fits, whatever the vocabulary's size) and small
    enough that the rest still outnumber the dimensions (IR, 81 anchors in 75 dimensions: groups of
    five); groups take every n-th anchor, so one section is never left out whole. Outnumbering is
    necessary, not sufficient: `compare` still asks `rotation` whether the others fix the map.
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
    its own fit when the others still fix the map (`_folds`, `rotation`). When the anchors do not fix
    it, aligned drift is NaN (the map would be an arbitrary pick, see `rotation`); with no anchor,
    overlap is NaN too.
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
    whole = rotation(a[pool], b[pool])
    aligned, held_out = np.full(len(a), np.nan), 0
    if whole is not None:
        aligned = cosine_drift(a @ whole, b)
        for held in _folds(pool, a.shape[1]):  # each anchor by the map of the others (the module's docstring: why)
            others = np.setdiff1d(pool, held)
            r = rotation(a[others], b[others])
            if r is not None:
                aligned[held] = cosine_drift(a[held] @ r, b[held])
                held_out += len(held)
    overlap, used = nn_overlap(a, b, pool, k)
    return Comparison(raw, aligned, overlap, len(pool), used, structure(a, b, pool), whole is not None, held_out)
