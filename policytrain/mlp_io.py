"""A policy network (policytrain/mlp.py) kept outside the process: the npz file published beside each model
(policytrain/trainer.py `train_to`; read back by bench/bench_policy_reach.py), and JSON for the Celery messages
that hand a base policy to exploration and sizing workers (policytrain/fanout.py), which carry plain JSON only.

Both formats are read leniently: a file or message written before `stick`, `hold_no`, `guard` or `floor` existed
still loads, as a network without them. Only the limits a network has go into npz (a missing key reads as None), every
limit into JSON (None when unset)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from policytrain.mlp import LIMITS, Mlp, checked_features

__all__ = ["as_json", "from_json", "load", "save"]


def save(net: Mlp, path: Path) -> None:
    """`net` as an npz file at `path`, replaced whole (a reader never sees half a network)."""
    arrays = {"mean": net.mean, "std": net.std, "names": np.array([f[0] for f in net.features]),
              "widths": np.array([f[1] for f in net.features]), "dtypes": np.array([f[2] for f in net.features])}
    arrays["stick"], arrays["hold_no"] = np.array(net.stick), np.array(net.hold_no)
    arrays.update({lim.name: np.array(getattr(net, lim.name)) for lim in net.limits})
    arrays.update({f"w{i}": w for i, w in enumerate(net.ws)})
    arrays.update({f"b{i}": b for i, b in enumerate(net.bs)})
    with tempfile.NamedTemporaryFile(dir=Path(path).parent, suffix=".tmp", delete=False) as f:
        np.savez(f, **arrays)
    os.replace(f.name, path)


def load(path: Path) -> Mlp:
    """The network `save` wrote at `path` (fields a file predates take their defaults)."""
    with np.load(path) as z:
        n = sum(1 for k in z.files if k.startswith("w") and k[1:].isdigit())
        feats = checked_features(zip(z["names"], z["widths"], z["dtypes"], strict=True))
        return Mlp(feats, z["mean"], z["std"], tuple(z[f"w{i}"] for i in range(n)),
                   tuple(z[f"b{i}"] for i in range(n)), float(z["stick"]) if "stick" in z.files else 0.0,
                   float(z["hold_no"]) if "hold_no" in z.files else 0.0,
                   *(float(z[lim.name]) if lim.name in z.files else None for lim in LIMITS))


def as_json(net: Mlp) -> dict:
    """`net` as plain JSON values, for a Celery message (`from_json` rebuilds it)."""
    return {"features": [list(f) for f in net.features], "mean": net.mean.tolist(), "std": net.std.tolist(),
            "ws": [w.tolist() for w in net.ws], "bs": [b.tolist() for b in net.bs], "stick": net.stick,
            "hold_no": net.hold_no, **{lim.name: getattr(net, lim.name) for lim in LIMITS}}


def from_json(d: dict) -> Mlp:
    """The network `as_json` described (fields a message predates take their defaults)."""
    return Mlp(checked_features(d["features"]), np.asarray(d["mean"], dtype=np.float64),
               np.asarray(d["std"], dtype=np.float64), tuple(np.asarray(w, dtype=np.float64) for w in d["ws"]),
               tuple(np.asarray(b, dtype=np.float64) for b in d["bs"]), float(d.get("stick", 0.0)),
               float(d.get("hold_no", 0.0)),
               *(None if d.get(lim.name) is None else float(d[lim.name]) for lim in LIMITS))
