"""What changed between two vocabulary versions: per-entity cosine drift, with filler entries marked.

A retrained vocabulary is only comparable entity by entity through the angle between its old
and new vector (TransE keeps vectors at unit length, and LLVM sums them weighted, so direction is
what a policy sees). An entity that is filler (its section's mean, vocabgen/layout.py) in either
version did not move because of training data, so it is marked: a large drift of a filler
entry says "the section's mean moved", not "the farm learned something about this opcode".
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

#: How many of the entities that moved most the page lists and plots.
TOP = 20


@dataclass(frozen=True)
class Drift:
    section: str
    key: str
    #: 1 - cosine similarity: 0 unchanged, 1 orthogonal, 2 reversed.
    drift: float
    filler_a: bool
    filler_b: bool

    @property
    def filler(self) -> bool:
        return self.filler_a or self.filler_b


@dataclass(frozen=True)
class SectionSummary:
    section: str
    common: int
    only_a: list[str]
    only_b: list[str]
    mean_drift: float | None
    max_drift: float | None


@dataclass(frozen=True)
class Diff:
    dim_a: int
    dim_b: int
    entities: list[Drift]
    sections: list[SectionSummary]

    @property
    def comparable(self) -> bool:
        return self.dim_a == self.dim_b

    def top(self, n: int = TOP) -> list[Drift]:
        return sorted(self.entities, key=lambda d: (-d.drift, d.section, d.key))[:n]


def _fillers(manifest: dict[str, Any]) -> dict[str, set[str]]:
    coverage = manifest.get("coverage")
    if not isinstance(coverage, dict):
        return {}
    return {s: set(c.get("filler") or []) for s, c in coverage.items() if isinstance(c, dict)}


def _dim(vocab: dict[str, Any]) -> int:
    for entries in vocab.values():
        for vec in entries.values():
            return len(vec)
    return 0


def _drift(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    if na == 0 or nb == 0:
        return 0.0 if na == nb else 1.0
    return max(0.0, min(2.0, 1.0 - dot / (na * nb)))


def diff(data_a: bytes, manifest_a: dict[str, Any], data_b: bytes, manifest_b: dict[str, Any]) -> Diff:
    """Compare two published vocabularies of one kind (bytes as served, manifests for the filler lists)."""
    va, vb = json.loads(data_a), json.loads(data_b)
    fa, fb = _fillers(manifest_a), _fillers(manifest_b)
    dim_a, dim_b = _dim(va), _dim(vb)
    entities: list[Drift] = []
    sections: list[SectionSummary] = []
    for section in [*va, *(s for s in vb if s not in va)]:
        ea, eb = va.get(section, {}), vb.get(section, {})
        common = [k for k in ea if k in eb]
        drifts = []
        if dim_a == dim_b:
            for key in common:
                d = Drift(section, key, _drift(ea[key], eb[key]), key in fa.get(section, ()),
                          key in fb.get(section, ()))
                drifts.append(d)
        entities += drifts
        values = [d.drift for d in drifts]
        sections.append(SectionSummary(section, len(common), sorted(set(ea) - set(eb)), sorted(set(eb) - set(ea)),
                                       sum(values) / len(values) if values else None, max(values, default=None)))
    return Diff(dim_a, dim_b, entities, sections)


def plot_top(d: Diff, n: int = TOP) -> str:
    """An inline SVG bar chart of the entities that moved most (filler entries grey and labelled)."""
    from master.dashboard.svg import figure_svg, subplots

    top = list(reversed(d.top(n)))
    fig, ax = subplots(8, max(2.5, 0.26 * len(top) + 1.2))
    if top:
        ax.barh([f"{t.section}/{t.key}" + (" (filler)" if t.filler else "") for t in top], [t.drift for t in top],
                color=["#9e9e9e" if t.filler else "#1565c0" for t in top])
        ax.set_xlabel("cosine drift (1 - cos) between the two versions")
        ax.tick_params(axis="y", labelsize=8)
        ax.set_title(f"The {len(top)} entities that moved most")
    else:
        ax.text(0.5, 0.5, "no entity to compare", ha="center", va="center")
        ax.set_axis_off()
    return figure_svg(fig, "vocabulary drift")
