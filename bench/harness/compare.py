"""Baseline against ours in the same run: alternated rounds, medians, ratios.

A shared machine's load changes by the minute, so the variants take turns: each round runs every variant once, in
the order given (the baseline first), after an optional warm-up round whose results are dropped (page cache,
bytecode cache, a server's first start). Two ratios come out: the ratio of the medians, and the median over rounds of
each round's ratio to that round's baseline (`paired`: steadier when the load moves between rounds).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


def order(names: Sequence[str], repeat: int, warmup: bool = True) -> list[tuple[int, str]]:
    """(round, variant) in the order `alternate` runs them: round 0 is the warm-up (when asked), then rounds 1 to
    `repeat`, each running every variant once in the order of `names`."""
    return [(r, name) for r in range(0 if warmup else 1, repeat + 1) for name in names]


def alternate(variants: Mapping[str, Callable[[], T]], repeat: int, warmup: bool = True,
              each_round: Callable[[int], None] | None = None) -> dict[str, list[T]]:
    """Run the variants alternated (`order`); each one's results of the measured rounds, in round order.
    `each_round(r)`, when given, runs before round `r` (0: the warm-up)."""
    results: dict[str, list[T]] = {name: [] for name in variants}
    current = None
    for r, name in order(list(variants), repeat, warmup):
        if each_round is not None and r != current:
            each_round(r)
        current = r
        got = variants[name]()
        if r:
            results[name].append(got)
    return results


def median(xs: Sequence[float]) -> float:
    if not xs:
        raise ValueError("no measurements")
    return statistics.median(xs)


def ratio(ours: Sequence[float], base: Sequence[float]) -> float:
    """The ratio of the medians, ours / baseline."""
    return median(ours) / median(base)


def paired(ours: Sequence[float], base: Sequence[float]) -> float:
    """The median over rounds of ours / baseline of the same round."""
    if len(ours) != len(base):
        raise ValueError(f"{len(ours)} rounds against {len(base)}: pairs need the same rounds")
    return median([o / b for o, b in zip(ours, base, strict=True)])


@dataclass(frozen=True)
class Row:
    """One variant against the baseline: its median, the ratio of the medians and the paired ratio."""

    name: str
    median: float
    ratio: float
    paired: float


def compare(samples: Mapping[str, Sequence[float]], baseline: str) -> dict[str, Row]:
    """Each variant's row against `baseline` (whose own row has ratio 1), in the order of `samples`."""
    base = samples[baseline]
    return {name: Row(name, median(xs), ratio(xs, base), paired(xs, base)) for name, xs in samples.items()}
