"""The native host (policyhost/standalone/mlgo-policy-host.c) serving a regalloc eviction scorer: the same scores as
onnxruntime bit for bit on LLVM's own observations and on hostile ones (NaN, infinities, huge values), the same
objects as the farm's host on real compiles, and bad weights or features one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from farm.toolchain import Toolchain
from policyhost import protocol
from policyhost.launcher import run_compile
from policytrain.evict_model import EvictPolicy, Scorer, rebuilt_default
from tests.policyhost.test_native_host import native, native_host, run  # noqa: F401 - the session fixture
from tests.policytrain.evictsrc import write_sources


class Recorder(EvictPolicy):
    """The rebuilt default rule answering, every observation kept as LLVM sent it."""

    def __init__(self) -> None:
        super().__init__("rec", lambda f, _c: rebuilt_default(f), log=True)
        self.header: protocol.Header | None = None
        self.rows: list[dict] = []

    def bind(self, header) -> None:
        super().bind(header)
        self.header = header

    def decide(self, obs) -> int:
        self.rows.append(dict(obs.features))
        return super().decide(obs)


@pytest.fixture(scope="module")
def scorer(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain):
    """(sources, model.onnx, model.weights, LLVM's header, its observations): an untrained scorer (decides unlike
    LLVM) fitted to the features of a real compile, exported both ways."""
    from policytrain.evict_onnx import to_onnx
    from policytrain.native_export import to_weights

    tmp = tmp_path_factory.mktemp("native-evict")
    src = write_sources(tmp / "src", files=2, seed=21)
    rec = Recorder()
    out = run_compile(["clang", "-O2", "-c", str(src / "m0.c"), "-o", str(tmp / "r.o")], rec, advisor="regalloc",
                      toolchain=toolchain, timeout=60)
    assert out.ok and out.decisions > 50, out.error
    x, mask = np.stack(rec.xs), np.stack(rec.masks)
    sc = Scorer.init(rec.layout, x[mask], (16, 8), seed=4)
    model = tmp / "evict.onnx"
    model.write_bytes(to_onnx(sc))
    weights = tmp / "evict.weights"
    weights.write_bytes(to_weights(sc.net))
    return src, model, weights, rec.header, rec.rows


def onnx_scores(model: Path, rows: list[dict]) -> np.ndarray:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    s = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    types = {i.name: np.float32 if i.type == "tensor(float)" else np.int64 for i in s.get_inputs()}
    return np.array([s.run(None, {n: np.array([r[n]], dtype=t) for n, t in types.items()})[0][0] for r in rows],
                    dtype=np.float32)


def hostile(rows: list[dict], header: protocol.Header, seed: int) -> list[dict]:
    """LLVM's rows with some float features NaN, infinite, huge or tiny."""
    rng = np.random.default_rng(seed)
    floats = [f.name for f in header.features if f.is_float and f.count > 1]
    out = []
    for row in rows[:40]:
        r = dict(row)
        for name in rng.choice(floats, 3, replace=False):
            v = list(r[name])
            for i in rng.choice(len(v), 4, replace=False):
                v[i] = float(rng.choice([np.nan, np.inf, -np.inf, 3e38, -2e35, 1e-30]))
            r[name] = tuple(v)
        out.append(r)
    return out


def test_same_scores_as_onnxruntime_bit_for_bit(native_host: Path, scorer) -> None:  # noqa: F811
    _, model, weights, header, rows = scorer
    rows = rows + hostile(rows, header, seed=1)
    got = np.frombuffer(native(native_host, weights, header, rows, "--logits"), dtype="<f4").reshape(len(rows), -1)
    want = onnx_scores(model, rows)
    assert got.shape == want.shape == (len(rows), 33)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    choices = np.frombuffer(native(native_host, weights, header, rows), dtype="<i8")
    masks = np.array([r["mask"] for r in rows], dtype=bool)
    assert all(masks[i, c] for i, c in enumerate(choices))
    assert choices.tolist() == [int(np.argmax(np.where(m, s, -np.inf))) for m, s in zip(masks, want, strict=True)]


def test_a_real_compile_gives_the_farm_hosts_objects(native_host: Path, scorer, toolchain: Toolchain,  # noqa: F811
                                                     tmp_path: Path) -> None:
    src, model, weights, _, _ = scorer
    for f in sorted(src.glob("*.c")):
        farm_host = run_compile(["clang", "-O2", "-c", str(f), "-o", str(tmp_path / f"{f.stem}.farm.o")], str(model),
                                advisor="regalloc", toolchain=toolchain, timeout=60)
        assert farm_host.ok, farm_host.error
        p = run([native_host, "--weights", weights, "--", toolchain.path("clang"), "-O2", "-c", f, "-o",
                 tmp_path / f"{f.stem}.native.o"])
        assert p.returncode == 0, p.stderr.decode()
        assert (tmp_path / f"{f.stem}.native.o").read_bytes() == (tmp_path / f"{f.stem}.farm.o").read_bytes()
    plain = run([toolchain.path("clang"), "-O2", "-c", src / "m0.c", "-o", tmp_path / "plain.o"])
    assert plain.returncode == 0
    assert (tmp_path / "plain.o").read_bytes() != (tmp_path / "m0.native.o").read_bytes()  # the scorer decided


@pytest.mark.parametrize(("case", "says"), [
    ("vocab", "an IR2Vec vocabulary does not apply to an eviction policy"),
    ("inliner-stream", "these weights answer regalloc evictions, not inlining_decision"),
    ("wide-feature", "feature 'progress': the compiler sends 1 values, the weights take 2"),
])
def test_bad_use_is_one_line(native_host: Path, scorer, toolchain: Toolchain, tmp_path: Path,  # noqa: F811
                             case: str, says: str) -> None:
    from policytrain.native_export import to_weights

    src, _, weights, header, rows = scorer
    if case == "vocab":
        vocab = tmp_path / "v.json"
        vocab.write_text("{}")
        p = run([native_host, "--weights", weights, "--vocab", vocab, "--", toolchain.path("clang"), "-O2", "-c",
                 src / "m0.c", "-o", tmp_path / "x.o"])
    else:
        if case == "inliner-stream":
            header = protocol.Header.parse(header.encode().replace(b'"index_to_evict"', b'"inlining_decision"'))
        else:  # a scalar the weights take two of
            from policytrain.evict_model import Layout
            from policytrain.mlp import Mlp

            base = Scorer.init(Layout.of(header), np.ones((4, 20)), (4,), seed=1).net
            feats = tuple((n, 2 if n == "progress" else 1, d) for n, _, d in base.features)
            net = Mlp(feats, np.zeros(21), np.ones(21), (np.ones((21, 4)), np.ones((4, 1))),
                      (np.zeros(4), np.zeros(1)))
            weights = tmp_path / "wide.weights"
            weights.write_bytes(to_weights(net))
        stream = header.encode() + protocol.encode_observation(header, protocol.Observation(0, None, rows[0]))
        p = run([native_host, "--weights", weights, "--decide"], input=stream)
    lines = p.stderr.decode().strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and says in lines[0], p.stderr.decode()
