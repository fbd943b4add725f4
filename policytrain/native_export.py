"""A policy network (policytrain/mlp.py) as the weights file the native host reads (`mlgo-policy-host`,
policyhost/standalone/mlgo-policy-host.c): the same float32 constants as the ONNX graph of onnx_export.py.

Why a second file beside the ONNX: distribution clang asks an outside process for every inlining decision, and an
interpreter with onnxruntime started per compile cost a `-Oz` build 1.84x plain clang. The native host is one C file
with no dependency, so it cannot read ONNX; it reads this flat, versioned binary instead (docs/policies.md, "The
weights file"). Every array is cast to float32 exactly as `onnx_export._const` casts it, so both files hold the same
numbers and the host, computing each node as onnxruntime does, takes the same decisions
(tests/policyhost/test_native_host.py holds it to that).

Format version 1, little-endian: `MLGOPOLW`, u32 version, u32 features, u32 layers, u32 lean (0/1), u32 limits;
per feature u32 name length, the UTF-8 name, u32 width, u32 dtype (0 int64, 1 float32); f32 mean[width],
f32 std[width]; per layer u32 in, u32 out, f32 w[in*out] (row-major, in x out), f32 b[out]; with lean f32 no[2],
f32 slope[2]; per limit f32 side, f32 limit, f32 keeps, f32 push[2]; then `END1`.
"""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

import numpy as np

from policytrain.mlp import Mlp

__all__ = ["FORMAT_VERSION", "MAGIC", "SUFFIX", "save_weights", "to_weights", "weights_from_onnx"]

MAGIC = b"MLGOPOLW"
FORMAT_VERSION = 1
#: the weights file's name beside `model.onnx`: `model.weights`
SUFFIX = ".weights"
_DTYPES = {"int64": 0, "float32": 1}


def _f32(value: object) -> bytes:
    return np.ascontiguousarray(np.asarray(value, dtype=np.float32), dtype="<f4").tobytes()


def to_weights(net: Mlp) -> bytes:
    """`net` in the native host's format (see the module docstring); the same network always gives the same bytes."""
    limits = [(lim.side, getattr(net, lim.name), lim.keeps, lim.push) for lim in net.limits]
    return _pack(net.features, net.mean, net.std, net.ws, net.bs, net.lean, limits)


def weights_from_onnx(model: bytes) -> bytes:
    """The weights of an ONNX policy `onnx_export.to_onnx` wrote, read from its graph's own constants: what a
    published `model.onnx` (whose network file stays on the farm) needs to run in the native host."""
    import onnx
    from onnx import TensorProto, numpy_helper

    graph = onnx.load_from_string(model).graph
    consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    if "_mlp_mean" not in consts:
        raise ValueError("not a policy network onnx_export.to_onnx wrote (no _mlp_mean constant)")
    dtypes = {TensorProto.INT64: "int64", TensorProto.FLOAT: "float32"}
    feats = [(i.name, i.type.tensor_type.shape.dim[1].dim_value, dtypes[i.type.tensor_type.elem_type])
             for i in graph.input]
    n = sum(1 for k in consts if k.startswith("_mlp_w") and k[6:].isdigit())
    lean = (consts["_mlp_no"], consts["_mlp_slope"]) if "_mlp_slope" in consts else None
    limits = [(consts[f"_mlp_{k}_side"], consts[f"_mlp_{k}"], consts[f"_mlp_{k}_keeps"], consts[f"_mlp_{k}_push"])
              for k in ("guard", "floor") if f"_mlp_{k}" in consts]  # in the graph's order (mlp.LIMITS)
    return _pack(feats, consts["_mlp_mean"], consts["_mlp_std"], [consts[f"_mlp_w{i}"] for i in range(n)],
                 [consts[f"_mlp_b{i}"] for i in range(n)], lean, limits)


def _pack(features, mean, std, ws, bs, lean, limits) -> bytes:
    """The file's bytes from the network's arrays (any float dtype: each is cast to float32 as the ONNX graph's)."""
    out = [MAGIC, struct.pack("<5I", FORMAT_VERSION, len(features), len(ws), lean is not None, len(limits))]
    for name, width, dtype in features:
        raw = name.encode()
        out += [struct.pack("<I", len(raw)), raw, struct.pack("<2I", int(width), _DTYPES[dtype])]
    out += [_f32(mean), _f32(std)]
    for w, b in zip(ws, bs, strict=True):
        out += [struct.pack("<2I", *np.shape(w)), _f32(w), _f32(b)]
    if lean is not None:
        out += [_f32(lean[0]), _f32(lean[1])]
    for side, limit, keeps, push in limits:
        out += [_f32([side, limit, keeps]), _f32(push)]
    out.append(b"END1")
    return b"".join(out)


def save_weights(net_or_onnx: Mlp | bytes, path: Path) -> Path:
    """Write the weights of a network, or of an ONNX policy's bytes, at `path` (usually `model.onnx` with SUFFIX),
    replaced whole; the path."""
    path = Path(path)
    data = weights_from_onnx(net_or_onnx) if isinstance(net_or_onnx, bytes) else to_weights(net_or_onnx)
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as f:
        f.write(data)
    os.chmod(f.name, 0o644)
    os.replace(f.name, path)
    return path


def main(argv: list[str] | None = None) -> int:
    """`python -m policytrain.native_export MODEL.onnx [-o MODEL.weights]`: the weights of a policy file."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m policytrain.native_export", description=main.__doc__)
    ap.add_argument("model", type=Path)
    ap.add_argument("-o", "--output", type=Path, help="default: MODEL with the suffix .weights")
    args = ap.parse_args(argv)
    try:
        out = save_weights(args.model.read_bytes(), args.output or args.model.with_suffix(SUFFIX))
    except (OSError, ValueError) as e:
        ap.exit(2, f"{ap.prog}: error: {args.model}: {e}\n")
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
