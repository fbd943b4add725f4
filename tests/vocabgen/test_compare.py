"""The drift measures of vocabgen/compare.py: blind to a rotation or reflection of the whole space, not to training."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ortho_group

from vocabgen.compare import compare, cosine_drift, neighbours, nn_overlap, rotation, structure


def _vocab(n: int = 60, dim: int = 16, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)  # TransE keeps entity vectors at unit length


def test_a_rotated_copy_has_no_aligned_drift_and_the_same_neighbours():
    a = _vocab()
    for seed in (1, 2):
        q = ortho_group.rvs(16, random_state=seed)  # a rotation or a reflection
        c = compare(a, a @ q)
        assert c.raw.mean() > 0.5, "raw drift sees the rotation"
        assert np.allclose(c.aligned, 0, atol=1e-9) and np.all(c.overlap == 1.0)
        assert np.allclose(c.structure, 1.0)
        assert c.anchors == 60 and c.k == 5


@pytest.mark.parametrize(("n", "dim"), [(60, 16), (81, 75)])
def test_unrelated_vocabularies_keep_their_drift_after_alignment_and_share_few_neighbours(n: int, dim: int):
    """81 entities in 75 dimensions is IR's case: a map fitted on every entity would fit each one (0.27)."""
    c = compare(_vocab(n, dim, seed=0), _vocab(n, dim, seed=1))
    assert c.aligned.mean() > 0.8 and c.overlap.mean() < 0.3 and abs(c.structure.mean()) < 0.2


def test_a_few_moved_entities_stand_out_after_alignment():
    a = _vocab()
    b = a @ ortho_group.rvs(16, random_state=3)
    moved = [4, 17, 33]
    b[moved] = _vocab(3, seed=9)
    c = compare(a, b)
    assert set(np.argsort(-c.aligned)[:3].tolist()) == set(moved)
    assert np.median(c.aligned) < 0.05 < c.aligned[moved].min()


def test_alignment_is_fitted_on_the_anchors_only():
    a = _vocab(20, 8)
    b = a @ ortho_group.rvs(8, random_state=4)
    b[:5] = a[:5].mean(axis=0)  # filler in b: its section's mean, at the unrotated place
    anchors = np.arange(20) >= 5
    c = compare(a, b, anchors)
    assert np.allclose(c.aligned[anchors], 0, atol=1e-9) and c.anchors == 15
    assert np.all(c.overlap[anchors] == 1.0)
    assert compare(a, b).aligned[anchors].max() > 1e-3  # fitted on the filler too, the anchors would not align


def test_small_and_degenerate_inputs():
    assert nn_overlap(_vocab(1, 4), _vocab(1, 4), np.array([0]))[1] == 0
    c = compare(_vocab(3, 4), _vocab(3, 4, seed=5))
    assert c.k == 2 and not c.fixed and np.isnan(c.aligned).all()  # three anchors cannot fix a map of four dimensions
    assert np.isnan(compare(_vocab(3, 4), _vocab(3, 4), np.zeros(3, bool)).aligned).all()
    assert cosine_drift(np.zeros((2, 3)), np.array([[0.0, 0, 0], [1, 0, 0]])).tolist() == [0.0, 1.0]


def test_the_map_is_none_unless_the_rows_fix_it():
    """Orthogonal Procrustes has one answer exactly when a^T b is non-singular; otherwise any answer is a pick."""
    a = _vocab(10, 4)
    q = ortho_group.rvs(4, random_state=5)
    assert np.allclose(rotation(a, a @ q), q, atol=1e-12)
    assert rotation(a[:3], a[:3] @ q) is None  # fewer rows than dimensions
    flat = a.copy()
    flat[:, 3] = 0  # ten rows, in a three-dimensional subspace: the fourth axis may keep or flip its sign
    assert rotation(flat, flat @ q) is None and rotation(a, flat) is None
    c = compare(flat, flat @ q)
    assert not c.fixed and c.held_out == 0 and np.isnan(c.aligned).all() and np.all(c.overlap == 1.0)
    assert np.allclose(c.raw, cosine_drift(flat, flat @ q))


def _plane_and_two() -> np.ndarray:
    """Seven vectors in four dimensions, five of them in one plane (the dashboard tests' toy vocabulary until the
    diff's alignment differed between CPUs): the other two are each needed to fix the map."""
    return np.array([[(n * 7 + i) % 11 - 5 for i in range(4)] for n in range(1, 8)], np.float64) / 5


def test_what_rounding_decided_is_now_fixed_by_the_maths():
    """Add (row 2) reversed, measured by the map of the six others, was 2.00 or 1.19 depending on rounding (the
    CPU's BLAS kernel; here a relative perturbation of 1e-15 stands in for it): the others do not fix the map.
    Now Add and Function (row 5) are measured by the map of all seven, which is unique, so nothing moves."""
    a = _plane_and_two()
    b = a.copy()
    b[2] = -b[2]
    base = compare(a, b)
    assert base.fixed and base.held_out == 5 and base.raw[2] == 2.0
    rng = np.random.default_rng(0)
    for _ in range(20):
        c = compare(a * (1 + 1e-15 * rng.normal(size=a.shape)), b)
        assert c.held_out == 5 and np.allclose(c.aligned, base.aligned, rtol=0, atol=1e-9)
    rotated = compare(a, a @ ortho_group.rvs(4, random_state=6))  # a rotated copy still aligns exactly
    assert rotated.fixed and np.allclose(rotated.aligned, 0, atol=1e-9)


def test_similarities_equal_in_exact_arithmetic_stay_equal_whatever_the_rounding():
    """Rows 1 and 2 are equally near row 0 (cosine 1/sqrt 2); rotated, the product rounds them apart either way:
    the tie is broken by index."""
    x = np.array([[1.0, 0, 0], [1, 1, 0], [1, 0, 1], [0, 0, 1]])
    for seed in range(40):
        assert neighbours(x @ ortho_group.rvs(3, random_state=seed), np.arange(4), 1)[0].tolist() == [1], seed
        # each axis is equally near (0) both others: no structure to correlate, where rounding made it +1 or -1
        e = np.eye(3)
        assert np.isnan(structure(e @ ortho_group.rvs(3, random_state=seed), e, np.arange(3))).all(), seed
