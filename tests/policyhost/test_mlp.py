"""The policy network: numpy forward pass, ONNX export and storage agree with each other exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from policyhost.mlp import Mlp

FEATURES = [("callee_users", 1, "int64"), ("inlining_default", 1, "int64"), ("callee_embedding", 3, "float32")]


@pytest.fixture
def net() -> Mlp:
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.integers(-20, 500, (50, 2)), rng.normal(0, 2, (50, 3))], axis=1)
    return Mlp.init(FEATURES, x, (8, 8), seed=3)


def _rows(n: int = 40) -> np.ndarray:
    rng = np.random.default_rng(11)
    return np.concatenate([rng.integers(-1000, 100_000, (n, 2)), rng.normal(0, 3, (n, 3)).astype(np.float32)], axis=1)


def test_onnx_export_computes_what_numpy_computes(net: Mlp) -> None:
    x = _rows()
    sess = ort.InferenceSession(net.to_onnx({"mlgo.kind": "test"}))
    feeds = {"callee_users": x[:, 0:1].astype(np.int64), "inlining_default": x[:, 1:2].astype(np.int64),
             "callee_embedding": x[:, 2:5].astype(np.float32)}
    out = sess.run(None, feeds)[0]
    assert out.shape == (len(x), 2)
    np.testing.assert_allclose(out, net.logits(x), rtol=1e-4, atol=1e-4)
    assert ((out[:, 1] > out[:, 0]) == (net.margin(x) > 0)).mean() > 0.99
    assert sess.get_modelmeta().custom_metadata_map == {"mlgo.kind": "test"}


def test_sticking_to_llvms_decision_is_exported_too(net: Mlp) -> None:
    from dataclasses import replace

    x = _rows()
    sticky = replace(net, stick=3.0)
    np.testing.assert_allclose(sticky.margin(x) - net.margin(x), 3.0 * (2 * x[:, 1] - 1))
    sess = ort.InferenceSession(sticky.to_onnx())
    feeds = {"callee_users": x[:, 0:1].astype(np.int64), "inlining_default": x[:, 1:2].astype(np.int64),
             "callee_embedding": x[:, 2:5].astype(np.float32)}
    np.testing.assert_allclose(sess.run(None, feeds)[0], sticky.logits(x), rtol=1e-4, atol=1e-4)
    assert Mlp.from_json(sticky.as_json()).stick == 3.0
    assert np.array_equal(sticky.flat(), net.flat()), "ES does not perturb it"


def test_flat_parameters_round_trip_and_perturb_every_weight(net: Mlp) -> None:
    theta = net.flat()
    assert theta.size == sum(w.size + b.size for w, b in zip(net.ws, net.bs, strict=True))
    same = net.with_flat(theta)
    np.testing.assert_array_equal(same.logits(_rows()), net.logits(_rows()))
    moved = net.with_flat(theta + 0.1)
    assert all(np.allclose(a, b + 0.1) for a, b in zip(moved.ws, net.ws, strict=True))


def test_storage_and_json_keep_the_network(net: Mlp, tmp_path: Path) -> None:
    net.save(tmp_path / "p.npz")
    loaded = Mlp.load(tmp_path / "p.npz")
    assert loaded.features == net.features
    np.testing.assert_array_equal(loaded.logits(_rows()), net.logits(_rows()))
    back = Mlp.from_json(net.as_json())
    np.testing.assert_array_equal(back.logits(_rows()), net.logits(_rows()))
    with pytest.raises(ValueError, match="neither int64 nor float32"):
        Mlp.from_json({**net.as_json(), "features": [["x", 1, "double"]]})
