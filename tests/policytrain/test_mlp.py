"""The policy network: numpy forward pass, ONNX export and storage agree with each other exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from policytrain import mlp_io
from policytrain.mlp import Mlp
from policytrain.onnx_export import to_onnx

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
    sess = ort.InferenceSession(to_onnx(net, {"mlgo.kind": "test"}))
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
    sess = ort.InferenceSession(to_onnx(sticky))
    feeds = {"callee_users": x[:, 0:1].astype(np.int64), "inlining_default": x[:, 1:2].astype(np.int64),
             "callee_embedding": x[:, 2:5].astype(np.float32)}
    np.testing.assert_allclose(sess.run(None, feeds)[0], sticky.logits(x), rtol=1e-4, atol=1e-4)
    assert mlp_io.from_json(mlp_io.as_json(sticky)).stick == 3.0
    assert np.array_equal(sticky.flat(), net.flat()), "ES does not perturb it"


def test_flat_parameters_round_trip_and_perturb_every_weight(net: Mlp) -> None:
    theta = net.flat()
    assert theta.size == sum(w.size + b.size for w, b in zip(net.ws, net.bs, strict=True))
    same = net.with_flat(theta)
    np.testing.assert_array_equal(same.logits(_rows()), net.logits(_rows()))
    moved = net.with_flat(theta + 0.1)
    assert all(np.allclose(a, b + 0.1) for a, b in zip(moved.ws, net.ws, strict=True))


def test_storage_and_json_keep_the_network(net: Mlp, tmp_path: Path) -> None:
    mlp_io.save(net, tmp_path / "p.npz")
    loaded = mlp_io.load(tmp_path / "p.npz")
    assert loaded.features == net.features
    np.testing.assert_array_equal(loaded.logits(_rows()), net.logits(_rows()))
    back = mlp_io.from_json(mlp_io.as_json(net))
    np.testing.assert_array_equal(back.logits(_rows()), net.logits(_rows()))
    with pytest.raises(ValueError, match="neither int64 nor float32"):
        mlp_io.from_json({**mlp_io.as_json(net), "features": [["x", 1, "double"]]})


def _decisions() -> tuple[np.ndarray, dict]:
    """Rows whose `inlining_default` is a real decision (0 or 1), and their ONNX feeds."""
    x = _rows()
    x[:, 1] = np.arange(len(x)) % 2
    return x, {"callee_users": x[:, 0:1].astype(np.int64), "inlining_default": x[:, 1:2].astype(np.int64),
               "callee_embedding": x[:, 2:5].astype(np.float32)}


@pytest.mark.parametrize("stick", [0.0, 2.0])
def test_holding_llvms_no_only_ever_refuses_and_is_exported_too(net: Mlp, stick: float, tmp_path: Path) -> None:
    from dataclasses import replace

    x, feeds = _decisions()
    free = replace(net, stick=stick)
    held = replace(free, hold_no=50.0)
    no = x[:, 1] == 0
    np.testing.assert_allclose(held.margin(x)[~no], free.margin(x)[~no])  # LLVM's yes: the network's own answer
    np.testing.assert_allclose(held.margin(x)[no], free.margin(x)[no] - 50.0)
    assert not (held.margin(x)[no] > 0).any(), "never inlines where LLVM would not"
    assert (free.margin(x)[no] > 0).any(), "the rows must hold a departure for the test to mean anything"
    np.testing.assert_allclose(ort.InferenceSession(to_onnx(held)).run(None, feeds)[0], held.logits(x),
                               rtol=1e-4, atol=1e-4)
    mlp_io.save(held, tmp_path / "p.npz")
    assert mlp_io.load(tmp_path / "p.npz").hold_no == mlp_io.from_json(mlp_io.as_json(held)).hold_no == 50.0
    assert np.array_equal(held.flat(), net.flat()), "ES does not perturb it"


def test_an_average_of_networks_is_one_network_whose_logits_are_the_mean(tmp_path: Path) -> None:
    from dataclasses import replace

    from policytrain.mlp import average

    rng = np.random.default_rng(7)
    x = np.concatenate([rng.integers(-20, 500, (50, 2)), rng.normal(0, 2, (50, 3))], axis=1)
    nets = [Mlp.init(FEATURES, x, (8, 6), seed=s) for s in range(3)]
    both, feeds = _decisions()
    mean = np.mean([n.logits(both) for n in nets], axis=0)
    avg = average(nets)
    np.testing.assert_allclose(avg.logits(both), mean, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ort.InferenceSession(to_onnx(avg)).run(None, feeds)[0], mean, rtol=1e-4, atol=1e-4)
    assert [w.shape for w in avg.ws] == [(5, 24), (24, 18), (18, 2)]
    linear = [Mlp.init(FEATURES, x, (), seed=s) for s in range(2)]
    np.testing.assert_allclose(average(linear).logits(both), np.mean([n.logits(both) for n in linear], axis=0))
    # two retrains: normalised on other rows, leaning on LLVM's decision by other amounts; still exactly the mean
    other = replace(Mlp.init(FEATURES, x[:25], (8, 6), seed=5), stick=3.0, hold_no=1.0)
    assert not np.array_equal(other.mean, nets[0].mean)
    mixed = average([nets[0], other])
    want = (nets[0].logits(both) + other.logits(both)) / 2
    np.testing.assert_allclose(mixed.logits(both), want, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ort.InferenceSession(to_onnx(mixed)).run(None, feeds)[0], want, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="same inputs, depth, guard and floor"):
        average([nets[0], replace(nets[1], guard=300.0)])


def test_a_guard_keeps_llvms_no_far_above_its_threshold_and_is_exported_too(tmp_path: Path) -> None:
    """`Mlp.guard`: where LLVM refuses and its estimate is more than `guard` above its threshold, the network
    refuses too; everywhere else its answer is its own, in numpy and in the ONNX graph alike."""
    from dataclasses import replace

    feats = [("cost_estimate", 1, "int64"), ("threshold", 1, "int64"), ("inlining_default", 1, "int64")]
    rng = np.random.default_rng(5)
    n = 400
    x = np.stack([rng.integers(-2000, 3000, n), rng.integers(-50, 50, n), np.arange(n) % 2], axis=1)
    free = Mlp.init(feats, x, (8,), seed=1)
    free = replace(free, bs=(free.bs[0], np.array([-3.0, 3.0])))  # leans to inline, so it departs
    guarded = replace(free, guard=100.0)
    over = (x[:, 0] - x[:, 1] > 100) & (x[:, 2] == 0)
    assert (free.margin(x)[over] > 0).any(), "the rows must hold a guarded departure for the test to mean anything"
    assert not (guarded.margin(x)[over] > 0).any(), "never adds an inline far above the threshold"
    np.testing.assert_array_equal(guarded.margin(x)[~over], free.margin(x)[~over])
    feeds = {name: x[:, i:i + 1].astype(np.int64) for i, (name, _, _) in enumerate(feats)}
    out = ort.InferenceSession(to_onnx(guarded)).run(None, feeds)[0]
    assert ((out[:, 1] > out[:, 0]) == (guarded.margin(x) > 0)).all()
    np.testing.assert_allclose(out[~over], guarded.logits(x)[~over], rtol=1e-4, atol=1e-4)
    sticky = replace(guarded, stick=2.0, hold_no=1.0)  # the guard composes with the other leans
    out = ort.InferenceSession(to_onnx(sticky)).run(None, feeds)[0]
    np.testing.assert_allclose(out[~over], sticky.logits(x)[~over], rtol=1e-4, atol=1e-4)
    assert not (out[over, 1] > out[over, 0]).any()
    mlp_io.save(guarded, tmp_path / "g.npz")
    assert mlp_io.load(tmp_path / "g.npz").guard == mlp_io.from_json(mlp_io.as_json(guarded)).guard == 100.0
    mlp_io.save(free, tmp_path / "f.npz")
    assert mlp_io.load(tmp_path / "f.npz").guard is None and mlp_io.from_json(mlp_io.as_json(free)).guard is None
    assert np.array_equal(guarded.flat(), free.flat()), "ES does not perturb it"


def test_a_floor_keeps_llvms_yes_far_below_its_threshold_and_composes_with_the_guard(tmp_path: Path) -> None:
    """`Mlp.floor`, the guard's mirror: where LLVM inlines and its estimate is more than `floor` below its threshold,
    the network inlines too; everywhere else its answer is its own, in numpy and in the ONNX graph alike."""
    from dataclasses import replace

    from policytrain.mlp import average

    feats = [("cost_estimate", 1, "int64"), ("threshold", 1, "int64"), ("inlining_default", 1, "int64")]
    rng = np.random.default_rng(6)
    n = 400
    x = np.stack([rng.integers(-3000, 2000, n), rng.integers(-50, 50, n), np.arange(n) % 2], axis=1)
    free = Mlp.init(feats, x, (8,), seed=2)
    free = replace(free, bs=(free.bs[0], np.array([3.0, -3.0])))  # leans to refuse, so it departs
    floored = replace(free, floor=100.0)
    under = (x[:, 0] - x[:, 1] < -100) & (x[:, 2] == 1)
    assert (free.margin(x)[under] < 0).any(), "the rows must hold a floored refusal for the test to mean anything"
    assert (floored.margin(x)[under] > 0).all(), "never refuses an inline far below the threshold"
    np.testing.assert_array_equal(floored.margin(x)[~under], free.margin(x)[~under])
    both = replace(floored, guard=100.0, stick=1.0)
    over = (x[:, 0] - x[:, 1] > 100) & (x[:, 2] == 0)
    feeds = {name: x[:, i:i + 1].astype(np.int64) for i, (name, _, _) in enumerate(feats)}
    for net, pinned in ((floored, under), (both, under | over)):
        out = ort.InferenceSession(to_onnx(net)).run(None, feeds)[0]
        assert ((out[:, 1] > out[:, 0]) == (net.margin(x) > 0)).all()
        np.testing.assert_allclose(out[~pinned], net.logits(x)[~pinned], rtol=1e-4, atol=1e-4)
    assert not (both.margin(x)[over] > 0).any() and (both.margin(x)[under] > 0).all()
    mlp_io.save(both, tmp_path / "b.npz")
    assert mlp_io.load(tmp_path / "b.npz").floor == mlp_io.from_json(mlp_io.as_json(both)).floor == 100.0
    assert mlp_io.from_json(mlp_io.as_json(free)).floor is None
    assert np.array_equal(both.flat(), free.flat()), "ES does not perturb it"
    assert average([both, both]).floor == 100.0
    with pytest.raises(ValueError, match="guard and floor"):
        average([both, replace(both, floor=None)])
