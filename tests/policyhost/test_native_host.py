"""The native policy host (policyhost/standalone/mlgo-policy-host.c) against onnxruntime, bit for bit.

Built with the documented line (the clang users have, `-lm`, nothing else), it reads the weights file
policytrain/native_export.py writes beside the ONNX model. These tests hold it to the ONNX policy run by onnxruntime:
the same two logits, bit for bit, on thousands of feature vectors in LLVM's own header (random ones, values at the
edge of the guard and floor, and pairs of adjacent floats on either side of the decision threshold); then the same
`.text` from a real `-Oz` compile through each host; then its failures: one line and a non-zero exit for a bad
weights file or a feature that does not match, and SIGTERM ending it with its compiler and channel.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from farm.toolchain import Toolchain
from policyhost import protocol, standalone
from tests.policyhost.conftest import CSRC, ir2vec_vocab  # noqa: F401 - a fixture
from tests.policyhost.test_standalone import stalling_compiler, zlib_tree  # noqa: F401 - a fixture

PY = Path(sys.executable)  # the farm's venv: numpy and onnxruntime, which the Python host needs


def run(cmd: list, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, timeout=kw.pop("timeout", 300), **kw)


@pytest.fixture(scope="session")
def native_host(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> Path:
    """The host built as docs/policies.md says: `clang -O2 -o mlgo-policy-host mlgo-policy-host.c -lm`."""
    exe = tmp_path_factory.mktemp("native") / standalone.NATIVE_NAME
    p = run([toolchain.path("clang"), "-O2", "-o", exe, standalone.NATIVE_SOURCE, "-lm"])
    assert p.returncode == 0 and not p.stderr, p.stderr.decode()
    return exe


@pytest.fixture(scope="session")
def policy(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain, ir2vec_vocab: Path):  # noqa: F811
    """(model.onnx, model.weights, LLVM's header) for a network of the kind the farm publishes: every feature LLVM
    sends (embeddings, `inlining_default`), a lean on LLVM's decision, a guard and a floor. The weights file is made
    from the ONNX model's bytes, as for a published policy."""
    from policyhost.release import llvm_header
    from policytrain.mlp import Mlp
    from policytrain.native_export import SUFFIX, save_weights
    from policytrain.onnx_export import to_onnx

    header = llvm_header(toolchain, "inline", ir2vec_vocab)
    feats = [(f.name, f.count, "float32" if f.is_float else "int64") for f in header.features]
    rows = np.random.default_rng(3).integers(0, 40, (64, sum(f[1] for f in feats))).astype(float)
    net = dataclasses.replace(Mlp.init(feats, rows, hidden=(16, 8), seed=5), stick=0.5, hold_no=0.25, guard=300.0,
                              floor=1000.0)
    model = tmp_path_factory.mktemp("model") / "model.onnx"
    model.write_bytes(to_onnx(net))
    return model, save_weights(model.read_bytes(), model.with_suffix(SUFFIX)), header


def onnx_logits(model: Path, header: protocol.Header, rows: list[dict]) -> np.ndarray:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1  # as every host of the farm runs it
    s = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    types = {i.name: np.float32 if i.type == "tensor(float)" else np.int64 for i in s.get_inputs()}
    return np.array([s.run(None, {n: np.array([r[n]], dtype=t) for n, t in types.items()})[0][0] for r in rows],
                    dtype=np.float32)


def native(exe: Path, weights: Path, header: protocol.Header, rows: list[dict], *extra: str) -> bytes:
    """The host's answers to `rows` sent as the compiler sends them (header, observation lines, raw tensors)."""
    stream = header.encode() + b"".join(protocol.encode_observation(header, protocol.Observation(i, None, r),
                                                                    with_context=i % 7 == 0)
                                        for i, r in enumerate(rows))
    p = run([exe, "--weights", weights, "--decide", *extra], input=stream)
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout


def random_rows(header: protocol.Header, n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        row = {}
        for f in header.features:
            if f.is_float:
                row[f.name] = tuple(rng.normal(0, rng.choice([0.01, 1, 30, 1e4]), f.count).astype(np.float32).tolist())
            else:
                hi = int(rng.choice([2, 50, 3000, 10**6, 2**62]))
                row[f.name] = tuple(rng.integers(-hi if rng.random() < 0.2 else 0, hi, f.count).tolist())
        row["inlining_default"] = (int(rng.integers(0, 2)),)
        rows.append(row)
    return rows


def limit_rows(base: dict) -> list[dict]:
    """`cost_estimate - threshold` on either side of the guard (300, LLVM said no) and the floor (-1000, yes)."""
    rows = []
    for gap, default in [(g, 0) for g in (299, 300, 301, 10**9)] + [(g, 1) for g in (-999, -1000, -1001, -10**9)]:
        rows.append({**base, "threshold": (45,), "cost_estimate": (45 + gap,), "inlining_default": (default,)})
    return rows


def threshold_rows(model: Path, header: protocol.Header, rows: list[dict], want: int) -> list[dict]:
    """Pairs of rows one float apart in one embedding value, on either side of the decision threshold: bisected with
    onnxruntime until the two values are adjacent floats (margins of about 1e-6 and less)."""
    emb = next(f for f in header.features if f.is_float).name
    out = []
    for row in rows:
        lo, hi = np.float32(-1e5), np.float32(1e5)

        def decision(v: np.float32, row: dict = row) -> bool:
            z = onnx_logits(model, header, [{**row, emb: (float(v), *row[emb][1:])}])[0]
            return bool(z[1] > z[0])

        if decision(lo) == decision(hi):
            continue
        while np.nextafter(lo, hi) != hi:
            mid = np.float32(lo / 2 + hi / 2)
            if mid in (lo, hi):
                mid = np.nextafter(lo, hi)
            if decision(mid) == decision(lo):
                lo = mid
            else:
                hi = mid
        out += [{**row, emb: (float(v), *row[emb][1:])} for v in (lo, hi)]
        if len(out) >= 2 * want:
            break
    return out


def test_same_logits_and_decisions_as_onnxruntime(native_host: Path, policy) -> None:
    model, weights, header = policy
    rows = random_rows(header, 3000, seed=1)
    rows += limit_rows(rows[0]) + limit_rows(rows[1])
    near = threshold_rows(model, header, rows[:400], want=12)
    assert len(near) >= 16, "too few rows whose decision an embedding value flips"
    rows += near
    want = onnx_logits(model, header, rows)
    got = np.frombuffer(native(native_host, weights, header, rows, "--logits"), dtype="<f4").reshape(-1, 2)
    assert got.shape == want.shape
    assert (got.view(np.uint32) == want.view(np.uint32)).all(), f"{(got != want).any(axis=1).sum()} rows differ"
    decisions = np.frombuffer(native(native_host, weights, header, rows), dtype="<i8")
    assert (decisions == (want[:, 1] > want[:, 0])).all()
    assert 0.05 < decisions.mean() < 0.95, "the network decides both ways"
    margins = np.abs(want[-len(near):, 1] - want[-len(near):, 0])
    assert margins.max() < 1e-3 and {int(d) for d in decisions[-len(near):]} == {0, 1}
    # the limits hold where the graph's do: LLVM's "no" beyond the guard, its "yes" beyond the floor
    assert decisions[3000:3016].tolist()[3::4] == [0, 1, 0, 1]


def test_a_wide_network_sums_as_onnxruntime_does(native_host: Path, tmp_path: Path) -> None:
    """Embeddings of 300 dimensions (601 inputs): onnxruntime's Gemm sums in chunks of 256 inputs, the host too."""
    from policytrain.mlp import Mlp
    from policytrain.native_export import save_weights
    from policytrain.onnx_export import to_onnx

    feats = [("cost_estimate", 1, "int64"), ("threshold", 1, "int64"), ("callee_embedding", 300, "float32"),
             ("caller_embedding", 300, "float32"), ("inlining_default", 1, "int64")]
    header = protocol.Header([protocol.TensorSpec(n, "float" if d == "float32" else "int64_t", (w,))
                              for n, w, d in feats], protocol.TensorSpec("inlining_decision", "int64_t", (1,)))
    rows = np.random.default_rng(4).normal(0, 3, (64, 603))
    net = dataclasses.replace(Mlp.init(feats, rows, hidden=(16,), seed=2), guard=300.0)
    model = tmp_path / "wide.onnx"
    model.write_bytes(to_onnx(net))
    weights = save_weights(net, tmp_path / "wide.weights")
    rows = random_rows(header, 400, seed=3)
    want = onnx_logits(model, header, rows)
    got = np.frombuffer(native(native_host, weights, header, rows, "--logits"), dtype="<f4").reshape(-1, 2)
    assert (got.view(np.uint32) == want.view(np.uint32)).all(), f"{(got != want).any(axis=1).sum()} rows differ"


def test_a_real_compile_gives_the_onnx_policys_text(native_host: Path, policy, ir2vec_vocab: Path,  # noqa: F811
                                                    zlib_tree: Path, toolchain: Toolchain,  # noqa: F811
                                                    tmp_path: Path) -> None:
    """Debian's zlib and the tests' own C files at -Oz through the Python host with onnxruntime and through the
    native host: the same objects, byte for byte; and not the heuristic's (the policy decides)."""
    model, weights, _ = policy
    sources = [*sorted(CSRC.glob("*.c")), *(zlib_tree / f for f in ("deflate.c", "inflate.c", "trees.c", "inftrees.c",
                                                                      "compress.c", "infback.c"))]
    clang, size = toolchain.path("clang"), toolchain.path("llvm-size")
    launchers = {"onnx": [PY, standalone.SOURCE, "--model", model, "--vocab", ir2vec_vocab, "--"],
                 "native": [native_host, "--weights", weights, "--vocab", ir2vec_vocab, "--"], "plain": []}
    texts = {}
    for name, prefix in launchers.items():
        (tmp_path / name).mkdir()
        for src in sources:
            p = run([*prefix, clang, "-Oz", "-w", "-I", zlib_tree, "-c", src, "-o", tmp_path / name / f"{src.stem}.o"])
            assert p.returncode == 0 and not p.stderr, (name, p.stderr.decode())
        objs = sorted((tmp_path / name).glob("*.o"))
        out = run([size, *objs]).stdout.decode().splitlines()[1:]
        texts[name] = {Path(ln.split()[5]).name: int(ln.split()[0]) for ln in out}
    assert len(texts["onnx"]) == len(sources) and texts["native"] == texts["onnx"]
    for o in texts["onnx"]:
        assert (tmp_path / "native" / o).read_bytes() == (tmp_path / "onnx" / o).read_bytes(), o
    assert texts["onnx"] != texts["plain"], "the policy decided differently from LLVM's heuristic"


def test_bad_weights_and_features_are_one_line(native_host: Path, policy, ir2vec_vocab: Path,  # noqa: F811
                                               toolchain: Toolchain, tmp_path: Path) -> None:
    import struct

    from policytrain.native_export import FORMAT_VERSION, MAGIC

    _, weights, header = policy
    data = weights.read_bytes()
    cases = {"truncated": (data[: len(data) // 2], "is truncated"),
             "version": (MAGIC + struct.pack("<I", FORMAT_VERSION + 1) + data[12:],
                         f"has format version {FORMAT_VERSION + 1}; this host reads version {FORMAT_VERSION}"),
             "onnx": (b"\x08\x08\x12\x09mlgo-farm", "is not an MLGO policy weights file"),
             "tail": (data + b"\0", "bad trailer")}
    compile_ = [toolchain.path("clang"), "-Oz", "-c", CSRC / "sort.c", "-o", tmp_path / "s.o"]
    for name, (content, message) in cases.items():
        bad = tmp_path / f"{name}.weights"
        bad.write_bytes(content)
        p = run([native_host, "--weights", bad, "--vocab", ir2vec_vocab, "--", *compile_])
        err = p.stderr.decode()
        assert p.returncode == 2 and err.count("\n") == 1 and message in err, (name, err)
        assert not (tmp_path / "s.o").exists()
    # a compile without the vocabulary sends no embeddings; a header whose embedding has another width
    p = run([native_host, "--weights", weights, "--", *compile_])
    assert p.returncode == 2 and p.stderr.decode() == (
        "mlgo-policy-host: error: the policy needs feature 'callee_embedding', which the compiler does not send "
        "(pass the IR2Vec vocabulary with --vocab)\n")
    spec = protocol.Header([protocol.TensorSpec(f.name, f.type, (3,)) if f.name == "callee_embedding" else f
                            for f in header.features], header.advice)
    row = {**random_rows(header, 1, seed=2)[0], "callee_embedding": (0.5, 1.0, 2.0)}
    p = run([native_host, "--weights", weights, "--decide"],
            input=spec.encode() + protocol.encode_observation(spec, protocol.Observation(0, None, row)))
    assert p.returncode == 2 and p.stderr.decode().count("\n") == 1
    assert "feature 'callee_embedding': the compiler sends 3 values, the weights take 8" in p.stderr.decode()
    p = run([native_host, "--weights", weights, "--decide"], input=b'{"features": [}\n')
    assert p.returncode == 1 and p.stderr.decode() == "mlgo-policy-host: error: protocol: bad header\n"


def test_sigterm_ends_it_with_its_compiler_and_channel(native_host: Path, policy, tmp_path: Path) -> None:
    from tests.servers import wait_until

    _, weights, _ = policy
    stall, channels = stalling_compiler(tmp_path), tmp_path / "tmp"
    channels.mkdir()
    host = subprocess.Popen([str(native_host), "--weights", str(weights), "--", sys.executable, str(stall), "x.c"],
                            stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": str(channels)})
    try:  # the compiler renames its pid file into place once it has opened the channel and sent its header
        wait_until(lambda: (tmp_path / "pid").exists(), 30, "the compiler to open its channel")
        assert list(channels.glob("mlgo-host-*"))
        host.send_signal(signal.SIGTERM)
        _, err = host.communicate(timeout=30)
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    assert host.returncode == 143 and err.decode() == "mlgo-policy-host: terminated\n"
    assert not Path(f"/proc/{(tmp_path / 'pid').read_text()}").exists(), "killed and reaped"
    assert not list(channels.iterdir())


def test_a_stalled_compiler_is_killed_and_a_link_runs_unchanged(native_host: Path, policy, tmp_path: Path,
                                                               toolchain: Toolchain) -> None:
    _, weights, _ = policy
    stall = stalling_compiler(tmp_path)
    p = run([native_host, "--weights", weights, "--timeout", "1", "--", sys.executable, stall, "x.c"], timeout=60)
    err = p.stderr.decode()
    assert p.returncode == 1 and err.count("\n") == 1, err
    assert "no data and no CPU progress for 1s after 0 decisions; killed it" in err
    assert not Path(f"/proc/{(tmp_path / 'pid').read_text()}").exists(), "killed and reaped"
    clang = toolchain.path("clang")
    assert run([clang, "-c", CSRC / "sort.c", "-o", tmp_path / "sort.o"]).returncode == 0
    (tmp_path / "m.c").write_text("int main(void) { return 0; }\n")
    assert run([clang, "-c", tmp_path / "m.c", "-o", tmp_path / "m.o"]).returncode == 0
    p = run([native_host, "--weights", weights, "--", clang, tmp_path / "m.o", "-o", tmp_path / "m"])
    assert p.returncode == 0 and run([tmp_path / "m"]).returncode == 0


def test_the_python_host_hands_compiles_to_a_built_native_host(native_host: Path, policy, ir2vec_vocab: Path,  # noqa: F811
                                                               toolchain: Toolchain, tmp_path: Path) -> None:
    """The page's launcher (`python3 mlgo-cc.py --model model.onnx`) with the native host built beside it and the
    weights beside the model: every compile runs natively, so a Python without onnxruntime compiles."""
    import shutil

    python = Path("/usr/bin/python3")
    if not python.is_file() or run([python, "-c", "import onnxruntime"]).returncode == 0:
        pytest.skip("needs a Python without onnxruntime")
    model, weights, _ = policy
    user = tmp_path / "user"
    user.mkdir()
    for f in (standalone.SOURCE, model, weights):
        shutil.copy(f, user / f.name)
    src = [toolchain.path("clang"), "-Oz", "-c", CSRC / "hash.c", "-o"]
    p = run([python, user / "mlgo_cc.py", "--model", user / model.name, "--vocab", ir2vec_vocab, "--", *src, "a.o"],
            cwd=tmp_path)
    assert p.returncode != 0 and b"No module named" in p.stderr, "without the native host: numpy, onnxruntime"
    shutil.copy(native_host, user / standalone.NATIVE_NAME)
    p = run([python, user / "mlgo_cc.py", "--model", user / model.name, "--vocab", ir2vec_vocab, "--", *src, "a.o"],
            cwd=tmp_path)
    assert p.returncode == 0 and not p.stderr, p.stderr.decode()
    p = run([native_host, "--weights", weights, "--vocab", ir2vec_vocab, "--", *src, "b.o"], cwd=tmp_path)
    assert p.returncode == 0 and (tmp_path / "a.o").read_bytes() == (tmp_path / "b.o").read_bytes()
