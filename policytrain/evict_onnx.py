"""An eviction `Scorer` (policytrain/evict_model.py) as the ONNX model `policy-cc --advisor regalloc` serves.

The graph is built with `onnx.helper` from the scorer's own arrays, one step per step of `Scorer.scores`: each
per-candidate feature becomes a column, each per-decision scalar is repeated on every candidate's row, the rows are
scaled and standardised as `Mlp.logits` does, and the layers run on every candidate at once (MatMul over the last
axis). The output, `index_to_evict`, is one float score per candidate (batch, 33): the contract of
policyhost/runnable.py's OnnxPolicy, which takes the highest score among the candidates the `mask` allows. The
mask is not an input: the host applies it, so the model cannot pick what LLVM forbids.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from policytrain.evict_model import BOUND, CONTEXT, Scorer
from policytrain.onnx_export import serialised
from policytrain.problem import EVICT_SPEED

#: the output the host reads: LLVM's advice name
OUTPUT_NAME = EVICT_SPEED.advice
_ELEM = {"int64": TensorProto.INT64, "float32": TensorProto.FLOAT}


def _t(name: str) -> str:
    """An internal tensor's name: never a feature's name."""
    return f"_ev_{name}"


def _const(name: str, value, dtype=np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def to_onnx(scorer: Scorer, metadata: dict[str, str] | None = None) -> bytes:
    """`scorer` as an ONNX model (see the module docstring); `metadata` becomes its metadata_props."""
    lay, net = scorer.layout, scorer.net
    w = lay.width
    inputs = [helper.make_tensor_value_info(n, _ELEM[d], ["batch", w]) for n, d in lay.columns]
    inputs += [helper.make_tensor_value_info(n, _ELEM[d], ["batch", 1]) for n, d in lay.scalars]
    if lay.context:  # the function's embedding (batch, D): one more per-decision group, after the scalars
        inputs.append(helper.make_tensor_value_info(CONTEXT, TensorProto.FLOAT, ["batch", lay.context]))
    nodes, cols = [], []
    inits = [_const(_t("axis2"), [2], np.int64), _const(_t("zeros"), np.zeros((1, w, 1))),
             _const(_t("one"), 1.0), _const(_t("zero"), 0.0), _const(_t("lo"), -BOUND), _const(_t("hi"), BOUND),
             _const(_t("mean"), net.mean), _const(_t("std"), net.std)]
    for n, _ in lay.columns + lay.scalars:
        nodes += [helper.make_node("Cast", [n], [_t(f"f_{n}")], to=TensorProto.FLOAT),
                  helper.make_node("Unsqueeze", [_t(f"f_{n}"), _t("axis2")], [_t(f"u_{n}")])]
        cols.append(_t(f"u_{n}"))
    for n, _ in lay.scalars:  # (batch, 1, 1) + zeros (1, width, 1): the scalar on every candidate's row
        nodes.append(helper.make_node("Add", [_t(f"u_{n}"), _t("zeros")], [_t(f"r_{n}")]))
        cols[cols.index(_t(f"u_{n}"))] = _t(f"r_{n}")
    if lay.context:  # (batch, 1, D) + zeros (1, width, 1): the embedding on every candidate's row
        nodes += [helper.make_node("Unsqueeze", [CONTEXT, _t("axis1")], [_t("u_ctx")]),
                  helper.make_node("Add", [_t("u_ctx"), _t("zeros")], [_t("r_ctx")])]
        inits.append(_const(_t("axis1"), [1], np.int64))
        cols.append(_t("r_ctx"))
    nodes += [helper.make_node("Concat", cols, [_t("raw")], axis=2),  # then `clean`: NaN as 0, clipped to BOUND
              helper.make_node("IsNaN", [_t("raw")], [_t("nan")]),
              helper.make_node("Where", [_t("nan"), _t("zero"), _t("raw")], [_t("num")]),
              helper.make_node("Clip", [_t("num"), _t("lo"), _t("hi")], [_t("x")]),
              helper.make_node("Abs", [_t("x")], [_t("ax")]),
              helper.make_node("Add", [_t("ax"), _t("one")], [_t("ax1")]),
              helper.make_node("Log", [_t("ax1")], [_t("lx")]), helper.make_node("Sign", [_t("x")], [_t("sx")]),
              helper.make_node("Mul", [_t("sx"), _t("lx")], [_t("s")]),
              helper.make_node("Sub", [_t("s"), _t("mean")], [_t("c")]),
              helper.make_node("Div", [_t("c"), _t("std")], [_t("h0")])]
    last = len(net.ws) - 1
    for i, (wt, b) in enumerate(zip(net.ws, net.bs, strict=True)):
        nodes += [helper.make_node("MatMul", [_t(f"h{i}"), _t(f"w{i}")], [_t(f"m{i}")]),
                  helper.make_node("Add", [_t(f"m{i}"), _t(f"b{i}")], [_t(f"z{i}")])]
        inits += [_const(_t(f"w{i}"), wt), _const(_t(f"b{i}"), b)]
        if i < last:
            nodes.append(helper.make_node("Relu", [_t(f"z{i}")], [_t(f"h{i + 1}")]))
    nodes.append(helper.make_node("Squeeze", [_t(f"z{last}"), _t("axis2")], [OUTPUT_NAME]))
    output = helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", w])
    return serialised(helper.make_graph(nodes, "mlgo_evict_policy", inputs, [output], inits), metadata)
