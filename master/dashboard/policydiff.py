"""What changed between two published policy versions: their manifests side by side, the metric deltas,
and how far each weight tensor of the ONNX model moved.

Two versions of a warm-start policy differ by what they were trained from (vocabulary, corpus,
LLVM) and by what training made of it. The manifest answers the first; the weights the second. A
tensor's drift is its relative L2 change ||b - a|| / ||a||, compared by initializer name (the
exporter names them after the layers, so the same architecture gives the same names); a tensor
whose shape changed has no per-element change and is marked instead, as is one in only one model.
A model that does not parse is reported as such: the page still shows the manifests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

#: How many of the tensors that moved most the page lists and plots.
TOP = 20
#: Manifest fields that are not compared as fields (the version names the page already shows).
_SKIP = ("version",)


@dataclass(frozen=True)
class Field:
    name: str
    a: Any
    b: Any

    @property
    def changed(self) -> bool:
        return self.a != self.b


@dataclass(frozen=True)
class MetricDelta:
    name: str
    a: float
    b: float

    @property
    def delta(self) -> float:
        return self.b - self.a

    @property
    def delta_pct(self) -> float | None:
        return (self.b - self.a) / abs(self.a) * 100 if self.a else None


@dataclass(frozen=True)
class Tensor:
    name: str
    shape_a: tuple[int, ...] | None
    shape_b: tuple[int, ...] | None
    #: ||b - a|| / ||a||; None when the shapes differ or the tensor is in one model only; inf when a is all zero
    drift: float | None

    @property
    def note(self) -> str:
        if self.shape_a is None:
            return "only in b"
        if self.shape_b is None:
            return "only in a"
        if self.shape_a != self.shape_b:
            return f"shape {list(self.shape_a)} → {list(self.shape_b)}"
        return ""


@dataclass
class Diff:
    fields: list[Field]
    metrics: list[MetricDelta]
    tensors: list[Tensor] = field(default_factory=list)
    #: why the weights could not be compared (a model that is not ONNX), else None
    weights_error: str | None = None

    @property
    def changed(self) -> list[Field]:
        return [f for f in self.fields if f.changed]

    def top(self, n: int = TOP) -> list[Tensor]:
        moved = [t for t in self.tensors if t.drift is not None]
        return sorted(moved, key=lambda t: (-t.drift, t.name))[:n]


def flatten(manifest: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested objects as dotted names (`metrics.heldout_agreement`); lists stay values."""
    out: dict[str, Any] = {}
    for key, value in manifest.items():
        name = f"{prefix}{key}"
        if name in _SKIP:
            continue
        if isinstance(value, dict) and value:
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def compare_manifests(a: dict[str, Any], b: dict[str, Any]) -> tuple[list[Field], list[MetricDelta]]:
    fa, fb = flatten(a), flatten(b)
    names = [*fa, *(n for n in fb if n not in fa)]
    fields = [Field(n, fa.get(n), fb.get(n)) for n in sorted(names)]
    ma, mb = a.get("metrics") or {}, b.get("metrics") or {}
    metrics = [MetricDelta(k, _num(ma[k]), _num(mb[k])) for k in sorted(ma) if isinstance(ma, dict) and
               isinstance(mb, dict) and k in mb and _num(ma[k]) is not None and _num(mb[k]) is not None]
    return fields, metrics


def initializers(data: bytes) -> dict[str, Any]:
    """The model's weight tensors by name, as numpy arrays (ValueError when the bytes are not an ONNX model)."""
    import onnx
    from google.protobuf.message import DecodeError
    from onnx import numpy_helper

    try:
        model = onnx.load_from_string(data)
        return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    except (DecodeError, ValueError, TypeError) as e:
        raise ValueError(f"not an ONNX model: {e}") from None


def tensor_drift(a: dict[str, Any], b: dict[str, Any]) -> list[Tensor]:
    import numpy as np

    out = []
    for name in [*a, *(n for n in b if n not in a)]:
        ta, tb = a.get(name), b.get(name)
        sa = tuple(ta.shape) if ta is not None else None
        sb = tuple(tb.shape) if tb is not None else None
        drift = None
        if ta is not None and tb is not None and sa == sb:
            va, vb = ta.astype(np.float64).ravel(), tb.astype(np.float64).ravel()
            change, norm = float(np.linalg.norm(vb - va)), float(np.linalg.norm(va))
            drift = change / norm if norm else (0.0 if change == 0 else math.inf)
        out.append(Tensor(name, sa, sb, drift))
    return out


def diff(data_a: bytes, manifest_a: dict[str, Any], data_b: bytes, manifest_b: dict[str, Any]) -> Diff:
    fields, metrics = compare_manifests(manifest_a, manifest_b)
    d = Diff(fields, metrics)
    try:
        d.tensors = tensor_drift(initializers(data_a), initializers(data_b))
    except ValueError as e:
        d.weights_error = str(e)
    return d


def plot_top(d: Diff, n: int = TOP) -> str:
    """An inline SVG bar chart of the tensors that moved most (relative L2 change)."""
    from master.dashboard.svg import figure_svg, subplots

    top = list(reversed(d.top(n)))
    fig, ax = subplots(8, max(2.5, 0.3 * len(top) + 1.2))
    finite = [t.drift for t in top if math.isfinite(t.drift)]
    cap = max(finite, default=1.0) or 1.0
    if top:
        ax.barh([t.name + (" (was all zero)" if not math.isfinite(t.drift) else "") for t in top],
                [t.drift if math.isfinite(t.drift) else cap for t in top],
                color=["#1565c0" if math.isfinite(t.drift) else "#c62828" for t in top])
        ax.set_xlabel("relative L2 change ||b - a|| / ||a|| of the tensor")
        ax.tick_params(axis="y", labelsize=8)
        ax.set_title(f"The {len(top)} weight tensors that moved most")
    else:
        ax.text(0.5, 0.5, "no tensor in both models with the same shape", ha="center", va="center")
        ax.set_axis_off()
    return figure_svg(fig, "policy weight drift")
