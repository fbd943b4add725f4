"""bench_evict_reward's pure parts: the bench policies answer only what the mask allows, repeat per seed, and the
rank correlation is Spearman's."""

from __future__ import annotations

import math
import random

import pytest

from bench.bench_evict_reward import spearman
from bench.evict_policies import Perturbed, is_bench_policy, parse, random_allowed

MASKS = [[1] * 33, [0] * 32 + [1], [1, 0] * 16 + [0], [0, 0, 1] + [0] * 29 + [1]]


def test_a_random_answer_is_always_a_candidate_the_mask_allows():
    rng = random.Random(0)
    for mask in MASKS:
        assert {random_allowed(rng, mask) for _ in range(1000)} == {i for i, m in enumerate(mask) if m}
    with pytest.raises(ValueError):
        random_allowed(rng, [0] * 33)


def test_the_perturbed_policy_is_its_default_at_p0_random_at_p1_and_repeats_per_seed():
    def last(f):  # a default the mask always allows in MASKS
        return 32

    def answers(p: float, seed: int) -> list[int]:
        pol = Perturbed("t", p, seed, default=last)
        return [pol.answer({"mask": m}) for m in MASKS * 25]

    assert set(answers(0.0, 3)) == {32}
    assert answers(1.0, 3) == answers(1.0, 3) != answers(1.0, 4)
    for a, m in zip(answers(1.0, 5), MASKS * 25, strict=True):
        assert m[a]
    assert 0 < sum(a != 32 for a in answers(0.5, 1)) < 100


def test_specs():
    assert parse("random:2").p == 1.0 and parse("perturbed:0.1:7").p == 0.1 and parse("rebuilt").p == 0.0
    assert is_bench_policy("perturbed:0.1:7") and not is_bench_policy("spill") and not is_bench_policy("a.onnx")
    for bad in ("random", "perturbed:0.1", "rebuilt:1", "spill"):
        with pytest.raises(ValueError):
            parse(bad)


def test_spearman_ranks_ties_and_degenerate_cases():
    assert spearman([1, 2, 3, 4], [10, 20, 40, 30]) == pytest.approx(0.8)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 1, 2], [5, 6, 7]) == pytest.approx(math.sqrt(3) / 2)
    assert math.isnan(spearman([1, 2], [1, 2])) and math.isnan(spearman([1, 2, 3], [4, 4, 4]))
