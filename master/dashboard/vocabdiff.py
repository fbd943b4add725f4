"""What changed between two vocabulary versions: per-entity drift after alignment, with filler entries marked.

A retrained vocabulary is comparable entity by entity through the angle between its old and new
vector (TransE keeps vectors at unit length, and LLVM sums them weighted, so direction is what a
policy sees), but only once the two spaces are aligned: two trainings land in spaces that differ
by a rotation TransE cannot see, and the raw angle is then about 1 for every entity. So the
page ranks by aligned drift and shows the nearest-neighbour overlap and the similarity
structure, which need no alignment (vocabgen/compare.py: the math and why); the raw drift stays
as a column. An entity that is filler (its section's mean, vocabgen/layout.py) in either
version did not move because of training data: it is marked, and is no anchor of the alignment
nor anyone's neighbour. When the entities trained in both do not fix the map (fewer than the
dimensions, or all in a lower-dimensional subspace) there is no aligned drift: the page says so and
ranks by the raw drift, rather than show one of the maps that fit equally well, picked by rounding.

The two files are read by the farm's one JSON reader (farm/jsonio.py) and must be what `vocab publish`
writes, {section: {entity: [numbers]}} of one dimension, each number one a float holds: anything else is a
CorruptObject (one line on the page), never a traceback from deep in the alignment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from farm import jsonio
from farm.objectstore import CorruptObject
from vocabgen.compare import compare

#: How many of the entities that moved most the page lists and plots.
TOP = 20


@dataclass(frozen=True)
class Drift:
    section: str
    key: str
    #: 1 - cosine similarity of the raw vectors: 0 unchanged, 1 orthogonal, 2 reversed.
    drift: float
    filler_a: bool
    filler_b: bool
    #: the same after the orthogonal map that best carries a onto b (None: the entities trained in both do not fix it).
    aligned: float | None = None
    #: share of the entity's nearest trained neighbours that are the same in both versions.
    overlap: float | None = None
    #: correlation of its similarities to every trained entity in both versions (1: same geometry).
    structure: float | None = None

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
    mean_aligned: float | None = None
    max_aligned: float | None = None
    mean_overlap: float | None = None
    mean_structure: float | None = None


@dataclass(frozen=True)
class Diff:
    dim_a: int
    dim_b: int
    entities: list[Drift]
    sections: list[SectionSummary]
    #: entities trained in both versions: the alignment's anchors and the neighbour pool
    anchors: int = 0
    #: neighbours per entity in the overlap
    k: int = 0
    #: the version b's training started from (its manifest's `warm_start`, vocabgen/warm.py), if any
    warm_from: str | None = None
    #: the anchors fix the orthogonal map (vocabgen/compare.py, `rotation`): there is an aligned drift
    fixed: bool = False
    #: anchors measured by the map the other anchors fix (the rest by the map of all of them)
    held_out: int = 0

    @property
    def comparable(self) -> bool:
        return self.dim_a == self.dim_b

    def top(self, n: int = TOP) -> list[Drift]:
        """The entities that moved most once aligned (raw drift where nothing could be aligned)."""
        def moved(d: Drift) -> float:
            return d.drift if d.aligned is None else d.aligned

        return sorted(self.entities, key=lambda d: (-moved(d), d.section, d.key))[:n]

    def overall(self) -> SectionSummary | None:
        """The whole vocabulary's means over trained entities (None when nothing compares)."""
        trained = [d for d in self.entities if not d.filler]
        if not trained:
            return None
        return _summary("trained entities", len(trained), [], [], trained)


def _fillers(manifest: dict[str, Any]) -> dict[str, set[str]]:
    coverage = manifest.get("coverage")
    if not isinstance(coverage, dict):
        return {}
    return {s: set(c.get("filler") or []) | set(c.get("composed_keys") or []) for s, c in coverage.items()
            if isinstance(c, dict)}


def _dim(vocab: dict[str, Any]) -> int:
    for entries in vocab.values():
        for vec in entries.values():
            return len(vec)
    return 0


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and not jsonio.beyond_float(x)


def vectors(data: bytes, where: str) -> dict[str, dict[str, list[float]]]:
    """A published vocabulary's sections as the diff reads them; CorruptObject naming the first thing that is not."""
    vocab = jsonio.loads(data, where, CorruptObject)
    if not isinstance(vocab, dict) or not all(isinstance(e, dict) for e in vocab.values()):
        raise CorruptObject(f"{where}: not a vocabulary ({{section: {{entity: [numbers]}}}})")
    dim = _dim(vocab)
    for section, entries in vocab.items():
        for key, vec in entries.items():
            if not isinstance(vec, list) or len(vec) != dim or not all(_number(x) for x in vec):
                raise CorruptObject(f"{where}: {section}.{key} is not a list of {dim} numbers")
    return vocab


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _summary(section: str, common: int, only_a: list[str], only_b: list[str], drifts: list[Drift]) -> SectionSummary:
    raw = [d.drift for d in drifts]
    aligned = [d.aligned for d in drifts if d.aligned is not None]
    overlap = [d.overlap for d in drifts if d.overlap is not None and not d.filler]
    shape = [d.structure for d in drifts if d.structure is not None and not d.filler]
    return SectionSummary(section, common, only_a, only_b, _mean(raw), max(raw, default=None), _mean(aligned),
                          max(aligned, default=None), _mean(overlap), _mean(shape))


def _finite(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def diff(data_a: bytes, manifest_a: dict[str, Any], data_b: bytes, manifest_b: dict[str, Any],
         names: tuple[str, str] = ("a", "b")) -> Diff:
    """Compare two published vocabularies of one kind (bytes as served, manifests for the filler lists; `names`
    say which is which in an error)."""
    va, vb = vectors(data_a, f"vocabulary {names[0]}"), vectors(data_b, f"vocabulary {names[1]}")
    fa, fb = _fillers(manifest_a), _fillers(manifest_b)
    dim_a, dim_b = _dim(va), _dim(vb)
    order = [*va, *(s for s in vb if s not in va)]
    common = {s: [k for k in va.get(s, {}) if k in vb.get(s, {})] for s in order}
    rows = [(s, k, k in fa.get(s, ()), k in fb.get(s, ())) for s in order for k in common[s]]
    entities: list[Drift] = []
    anchors = k = held_out = 0
    fixed = False
    if dim_a == dim_b and rows:
        c = compare([va[s][key] for s, key, _, _ in rows], [vb[s][key] for s, key, _, _ in rows],
                    [not (x or y) for _, _, x, y in rows])
        anchors, k, fixed, held_out = c.anchors, c.k, c.fixed, c.held_out
        entities = [Drift(s, key, float(c.raw[i]), x, y, _finite(c.aligned[i]), _finite(c.overlap[i]),
                          _finite(c.structure[i])) for i, (s, key, x, y) in enumerate(rows)]
    sections = [_summary(s, len(common[s]), sorted(set(va.get(s, {})) - set(vb.get(s, {}))),
                         sorted(set(vb.get(s, {})) - set(va.get(s, {}))), [d for d in entities if d.section == s])
                for s in order]
    warm = manifest_b.get("warm_start")
    warm_from = warm.get("from") if isinstance(warm, dict) and isinstance(warm.get("from"), str) else None
    return Diff(dim_a, dim_b, entities, sections, anchors, k, warm_from, fixed, held_out)


#: Drift below this is float rounding, not movement: a version against itself gives 0 to ~1e-16 (float32 vectors,
#: cosines in float64), which an autoscaled chart would draw as full-length bars.
NOISE = 1e-6


def plot_top(d: Diff, n: int = TOP) -> str:
    """An inline SVG bar chart of the entities that moved most once aligned (filler entries grey and labelled)."""
    from master.dashboard.svg import figure_svg, subplots

    top = list(reversed(d.top(n)))
    aligned = all(t.aligned is not None for t in top)
    values = [t.aligned if aligned else t.drift for t in top]
    moved = max(values, default=0.0) >= NOISE
    fig, ax = subplots(8, max(2.5, 0.26 * len(top) + 1.2) if moved else 1.2)
    if top and moved:
        ax.barh([f"{t.section}/{t.key}" + (" (filler)" if t.filler else "") for t in top], values,
                color=["#9e9e9e" if t.filler else "#1565c0" for t in top])
        ax.set_xlim(0, max(values) * 1.05)  # from zero: an autoscaled axis draws a tiny spread as full-length bars
        ax.set_xlabel("aligned drift (1 - cos after orthogonal alignment)" if aligned
                      else "cosine drift (1 - cos) between the two versions")
        ax.tick_params(axis="y", labelsize=8)
        ax.set_title(f"The {len(top)} entities that moved most")
    else:
        ax.text(0.5, 0.5, "no entity to compare" if not top else
                f"no entity moved: every drift is below {NOISE:g} (largest {max(values):.1e}, float rounding)",
                ha="center", va="center")
        ax.set_axis_off()
    return figure_svg(fig, "vocabulary drift")
