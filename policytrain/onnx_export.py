"""A policy network (policytrain/mlp.py) as the ONNX model the farm publishes for `policy-cc` and LLVM users.

The graph is built with `onnx.helper` from the network's own arrays rather than traced from a framework, one step
per step of `Mlp.logits` (scaling, layers, the lean on LLVM's decision, the guard and floor): what is published
computes what training measured, and a network always yields the same bytes, which the farm signs.
tests/policytrain/test_onnx_export.py holds it to both."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from policytrain.mlp import DEFAULT, Mlp
from policytrain.problem import INLINE_SIZE

__all__ = ["OUTPUT_NAME", "to_onnx"]

#: the output policyhost/runnable.py's OnnxPolicy reads: two float logits per row, [no inline, inline]
OUTPUT_NAME = INLINE_SIZE.advice
#: the element type of each feature's input, as LLVM sends it
_ELEM = {"int64": TensorProto.INT64, "float32": TensorProto.FLOAT}


def to_onnx(net: Mlp, metadata: dict[str, str] | None = None) -> bytes:
    """`net` as an ONNX model: one input per feature (batch first), output `inlining_decision` of two float logits
    per row (the contract of policyhost/runnable.py's OnnxPolicy); `metadata` becomes its metadata_props."""
    inputs = [helper.make_tensor_value_info(n, _ELEM[d], ["batch", w]) for n, w, d in net.features]
    nodes, inits = _scaled(net)
    z = _layers(net, nodes, inits)
    z = _lean(net, z, nodes, inits)
    z = _limits(net, z, nodes, inits)
    nodes.append(helper.make_node("Identity", [z], [OUTPUT_NAME]))
    output = helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", 2])
    return serialised(helper.make_graph(nodes, "mlgo_inline_policy", inputs, [output], inits), metadata)


def serialised(graph: onnx.GraphProto, metadata: dict[str, str] | None = None) -> bytes:
    """`graph` as a checked ONNX model every policy host here loads (opset 17, IR version 8, onnxruntime's), with
    `metadata` as its metadata_props: the inliner's and the eviction scorer's alike."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="mlgo-farm")
    model.ir_version = 8
    for k, v in (metadata or {}).items():
        model.metadata_props.add(key=k, value=str(v))
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _t(name: str) -> str:
    """An internal tensor's name: never a feature's name."""
    return f"_mlp_{name}"


def _const(name: str, value: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=np.float32), name)


def _scaled(net: Mlp) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Every feature as float, side by side, then `sign(x) * log(1 + |x|)` standardised: `Mlp.logits`' scaling.
    Each feature's float copy stays `_t("in_<name>")`, which the lean and the limits read."""
    names = [f[0] for f in net.features]
    nodes = [helper.make_node("Cast", [n], [_t(f"in_{n}")], to=TensorProto.FLOAT) for n in names]
    nodes.append(helper.make_node("Concat", [_t(f"in_{n}") for n in names], [_t("x")], axis=1))
    nodes += [helper.make_node("Abs", [_t("x")], [_t("ax")]),
              helper.make_node("Add", [_t("ax"), _t("one")], [_t("ax1")]),
              helper.make_node("Log", [_t("ax1")], [_t("lx")]), helper.make_node("Sign", [_t("x")], [_t("sx")]),
              helper.make_node("Mul", [_t("sx"), _t("lx")], [_t("s")]),
              helper.make_node("Sub", [_t("s"), _t("mean")], [_t("c")]),
              helper.make_node("Div", [_t("c"), _t("std")], [_t("h0")])]
    inits = [_const(_t("one"), np.array(1.0)), _const(_t("mean"), net.mean), _const(_t("std"), net.std)]
    return nodes, inits


def _layers(net: Mlp, nodes: list, inits: list) -> str:
    """The layers (ReLU between them) after `_scaled`; returns the logits' tensor."""
    last = len(net.ws) - 1
    for i, (w, b) in enumerate(zip(net.ws, net.bs, strict=True)):
        gemm_out = _t("z") if i == last else _t(f"g{i + 1}")
        nodes.append(helper.make_node("Gemm", [_t(f"h{i}"), _t(f"w{i}"), _t(f"b{i}")], [gemm_out]))
        inits += [_const(_t(f"w{i}"), w), _const(_t(f"b{i}"), b)]
        if i < last:
            nodes.append(helper.make_node("Relu", [gemm_out], [_t(f"h{i + 1}")]))
    return _t("z")


def _lean(net: Mlp, z: str, nodes: list, inits: list) -> str:
    """`z + no + inlining_default * slope` (`Mlp.lean`), or `z` itself for a network that does not lean."""
    if net.lean is None:
        return z
    no, slope = net.lean
    nodes += [helper.make_node("Mul", [_t(f"in_{DEFAULT}"), _t("slope")], [_t("ds")]),
              helper.make_node("Add", [z, _t("ds")], [_t("zd")]),
              helper.make_node("Add", [_t("zd"), _t("no")], [_t("zl")])]
    inits += [_const(_t("slope"), slope), _const(_t("no"), no)]
    return _t("zl")


def _limits(net: Mlp, z: str, nodes: list, inits: list) -> str:
    """`z` plus each limit's push where it holds (`Mlp.pinned`: `Mlp.guard`, `Mlp.floor`)."""
    if net.limits:
        nodes.append(helper.make_node("Sub", [_t("in_cost_estimate"), _t("in_threshold")], [_t("gap")]))
    for lim in net.limits:
        k = lim.name
        nodes += [helper.make_node("Mul", [_t("gap"), _t(f"{k}_side")], [_t(f"{k}_gap")]),
                  helper.make_node("Greater", [_t(f"{k}_gap"), _t(k)], [_t(f"{k}_beyond")]),
                  helper.make_node("Equal", [_t(f"in_{DEFAULT}"), _t(f"{k}_keeps")], [_t(f"{k}_said")]),
                  helper.make_node("And", [_t(f"{k}_beyond"), _t(f"{k}_said")], [_t(f"{k}_at")]),
                  helper.make_node("Cast", [_t(f"{k}_at")], [_t(f"{k}_atf")], to=TensorProto.FLOAT),
                  helper.make_node("Mul", [_t(f"{k}_atf"), _t(f"{k}_push")], [_t(f"{k}_pushed")]),
                  helper.make_node("Add", [z, _t(f"{k}_pushed")], [_t(f"z_{k}")])]
        inits += [_const(_t(f"{k}_side"), np.array(lim.side)), _const(_t(k), np.array(getattr(net, k))),
                  _const(_t(f"{k}_keeps"), np.array(lim.keeps)), _const(_t(f"{k}_push"), lim.push)]
        z = _t(f"z_{k}")
    return z
