"""A network leaves the process unchanged: its npz file and JSON bring back the same network, and its ONNX graph
computes what numpy computes, for every kind of network the trainer publishes (leaning, guarded, floored, averaged)."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from policytrain import mlp_io
from policytrain.mlp import Mlp, average
from policytrain.onnx_export import OUTPUT_NAME, to_onnx

FEATURES = [("cost_estimate", 1, "int64"), ("threshold", 1, "int64"), ("inlining_default", 1, "int64"),
            ("callee_embedding", 2, "float32")]


def _rows(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.integers(-3000, 3000, (n, 1)), rng.integers(-50, 50, (n, 1)),
                           (np.arange(n) % 2)[:, None], rng.normal(0, 3, (n, 2)).astype(np.float32)], axis=1)


def _feeds(x: np.ndarray) -> dict[str, np.ndarray]:
    return {"cost_estimate": x[:, 0:1].astype(np.int64), "threshold": x[:, 1:2].astype(np.int64),
            "inlining_default": x[:, 2:3].astype(np.int64), "callee_embedding": x[:, 3:5].astype(np.float32)}


def _nets() -> dict[str, Mlp]:
    x = _rows(60, 1)
    plain = Mlp.init(FEATURES, x, (8, 6), seed=4)
    return {"plain": plain, "leaning": replace(plain, stick=2.5, hold_no=0.75), "guarded": replace(plain, guard=100.0),
            "floored": replace(plain, floor=37.5),
            "every limit": replace(plain, stick=1.0, hold_no=50.0, guard=12.0, floor=0.0),
            "linear": Mlp.init(FEATURES, x, (), seed=1),
            "averaged": average([Mlp.init(FEATURES, x, (4,), seed=s) for s in range(3)])}


NETS = _nets()


def assert_same_network(got: Mlp, want: Mlp) -> None:
    for f in fields(Mlp):
        a, b = getattr(got, f.name), getattr(want, f.name)
        if f.name in ("ws", "bs"):
            assert len(a) == len(b), f.name
            assert all(np.array_equal(p, q) and p.dtype == q.dtype for p, q in zip(a, b, strict=True)), f.name
        elif f.name in ("mean", "std"):
            assert np.array_equal(a, b) and a.dtype == b.dtype, f.name
        else:
            assert a == b and type(a) is type(b), f.name


def _saved(net: Mlp, tmp_path: Path) -> Path:
    mlp_io.save(net, tmp_path / "net.npz")
    return tmp_path / "net.npz"


@pytest.mark.parametrize("name", NETS)
def test_npz_round_trip_gives_back_the_same_network_and_the_same_file(name: str, tmp_path: Path) -> None:
    net = NETS[name]
    mlp_io.save(net, tmp_path / "a.npz")
    back = mlp_io.load(tmp_path / "a.npz")
    assert_same_network(back, net)
    mlp_io.save(back, tmp_path / "b.npz")
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    assert not list(tmp_path.glob("*.tmp")), "the temporary file is renamed into place, never left behind"


@pytest.mark.parametrize("name", NETS)
def test_json_through_a_message_gives_back_the_same_network(name: str) -> None:
    net = NETS[name]
    text = json.dumps(mlp_io.as_json(net))
    back = mlp_io.from_json(json.loads(text))
    assert_same_network(back, net)
    assert json.dumps(mlp_io.as_json(back)) == text


def test_files_and_messages_from_before_the_leans_and_limits_load_without_them(tmp_path: Path) -> None:
    net = NETS["plain"]
    old = {k: v for k, v in mlp_io.as_json(net).items() if k not in ("stick", "hold_no", "guard", "floor")}
    assert_same_network(mlp_io.from_json(old), net)
    with np.load(_saved(net, tmp_path)) as z:
        arrays = {k: z[k] for k in z.files if k not in ("stick", "hold_no")}
    np.savez(tmp_path / "old.npz", **arrays)
    assert_same_network(mlp_io.load(tmp_path / "old.npz"), net)


@pytest.mark.parametrize("name", NETS)
def test_onnx_computes_what_numpy_computes_and_survives_the_round_trip(name: str, tmp_path: Path) -> None:
    net = NETS[name]
    x = _rows(300, 2)
    model = to_onnx(net, {"mlgo.kind": "test"})
    sess = ort.InferenceSession(model)
    assert [i.name for i in sess.get_inputs()] == [f[0] for f in FEATURES]
    assert [o.name for o in sess.get_outputs()] == [OUTPUT_NAME]
    assert sess.get_modelmeta().custom_metadata_map == {"mlgo.kind": "test"}
    out = sess.run(None, _feeds(x))[0]
    np.testing.assert_allclose(out, net.logits(x), rtol=1e-4, atol=1e-3)
    assert ((out[:, 1] > out[:, 0]) == (net.margin(x) > 0)).mean() > 0.99
    assert to_onnx(mlp_io.load(_saved(net, tmp_path))) == to_onnx(net), "what is reloaded publishes the same bytes"
    assert to_onnx(mlp_io.from_json(mlp_io.as_json(net))) == to_onnx(net)
    assert onnx.load_from_string(to_onnx(net)).opset_import[0].version == 17
