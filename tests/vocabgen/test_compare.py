"""The drift measures of vocabgen/compare.py: blind to a rotation or reflection of the whole space, not to training."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ortho_group

from vocabgen.compare import compare, cosine_drift, nn_overlap


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
    assert c.k == 2
    assert np.isnan(compare(_vocab(3, 4), _vocab(3, 4), np.zeros(3, bool)).aligned).all()
    assert cosine_drift(np.zeros((2, 3)), np.array([[0.0, 0, 0], [1, 0, 0]])).tolist() == [0.0, 1.0]
