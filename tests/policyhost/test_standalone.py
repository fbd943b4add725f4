"""The standalone policy host (policyhost/standalone/mlgo_cc.py), as a user without the farm gets it.

Its flags and wire format are copies of the farm's (it may import nothing of the farm): the first tests
compare them with policyhost/advisors.py, protocol.py, launcher.py and runnable.py, so they cannot drift.
Then, in a fresh virtualenv holding only numpy and onnxruntime (pinned by requirements.lock) and with the
files the policy page's "Use it" commands download from a live dashboard, it builds Debian's zlib with a
real ONNX policy (IR2Vec embeddings, LLVM's default decision, two scores) to the same `.text` per object
as the farm's `mlgo-farm policy-cc`, through `make CC=...` and CMake's compiler launcher.
"""

from __future__ import annotations

import ast
import hashlib
import html
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from farm.config import DASHBOARD_PATH, PolicyConfig, load_settings
from farm.objectstore import FileStore
from farm.toolchain import Toolchain
from policyhost import advisors, host, launcher, protocol, runnable, standalone
from tests.policyhost.conftest import CSRC, ir2vec_vocab, write_onnx_nan_logit  # noqa: F401 - a fixture
from tests.policyhost.test_cc import runtime_dir  # noqa: F401 - a fixture
from tests.policyhost.test_policy_server import write_onnx_loop

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PV, VV = "20261124-llvm22.1.8-inline-ir2vec-0123456789ab", "20261124-llvm22.1.8-ir-d8-0123456789ab"


def load_host():
    spec = importlib.util.spec_from_file_location("mlgo_cc_standalone", standalone.SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(cmd: list, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=kw.pop("timeout", 300), **kw)


# -- one source of truth -------------------------------------------------------------------------------------
def test_flags_and_wire_format_are_the_farms() -> None:
    sa, inline = load_host(), advisors.get(standalone.ADVISOR)
    farm = (inline.enable_flag, inline.channel_flag, inline.extra_flags, inline.vocab_flags, inline.advice,
            inline.default_feature)
    assert farm == (sa.ENABLE_FLAG, sa.CHANNEL_FLAG, sa.EXTRA_FLAGS, sa.VOCAB_FLAGS, sa.ADVICE, sa.DEFAULT_FEATURE)
    for vocab in (None, "/v/vocab.json"):
        assert sa.flags("/tmp/c/channel", vocab) == inline.flags("/tmp/c/channel", vocab)
    assert {k: np.dtype(v) for k, v in sa.ELEMENT_TYPES.items()} == {
        k: np.dtype("<" + code) for k, code in protocol.ELEMENT_TYPES.items()}
    assert sa.ONNX_TYPES == runnable._ONNX_TYPES and sa.SOURCE_SUFFIXES == launcher.SOURCE_SUFFIXES
    for args in (["-c", "a.c"], ["a.o", "-o", "a"], ["-o", "x.c", "a.o"], ["-x", "c", "-"], ["-MF", "d.c", "b.ll"],
                 ["-E", "z.cpp"], []):
        assert sa.compiles_source(args) == launcher.compiles_source(args), args
    assert all(sa.output_sizes(t) == runnable.output_sizes(t) for t in sa.ONNX_TYPES.values())
    assert (PolicyConfig().timeout, host.SILENCE_FACTOR) == (sa.TIMEOUT, sa.SILENCE_FACTOR)
    from vocabgen.layout import SECTIONS

    assert tuple(SECTIONS["ir"]) == sa.VOCAB_SECTIONS
    # a header and an observation as the farm encodes them decode to the same offsets and values
    header = protocol.Header([protocol.TensorSpec("a", "int64_t", (1,)), protocol.TensorSpec("e", "float", (3,)),
                              protocol.TensorSpec("inlining_default", "int64_t", (1,))],
                             protocol.TensorSpec("inlining_decision", "int64_t", (1,)))
    raw = b"".join(s.encode(v) for s, v in zip(header.features, (7, (0.5, -1.0, 2.0), 1), strict=True))
    decoded = list(sa.Decoder().feed(header.encode() + b'{"context":"f"}\n{"observation":0}\n' + raw + b"\n"))
    assert [(i, r) for _, i, r in decoded] == [(0, raw)]
    assert {k: (pos, s.count, s.nbytes) for k, (pos, s) in decoded[0][0].offsets.items()} == {
        k: (pos, s.count, s.nbytes) for k, (pos, s) in header.offsets.items()}


def test_it_imports_only_the_standard_library_numpy_and_onnxruntime() -> None:
    tree = ast.parse(standalone.SOURCE.read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names - sys.stdlib_module_names == {"numpy", "onnxruntime"}


def interpreters() -> list[str]:
    """The Pythons Debian 12 and Ubuntu 22.04/24.04 ship (3.10-3.12) that this machine has, by path."""
    found = []
    pyenv = shutil.which("pyenv")
    root = run([pyenv, "root"]).stdout.strip() if pyenv else ""
    for minor in (10, 11, 12):
        candidates = [shutil.which(f"python3.{minor}") or "", *map(str, Path(root or "/nonexistent").glob(
            f"versions/3.{minor}.*/bin/python3.{minor}"))]
        for c in candidates:
            if c and run([c, "-c", f"import sys; assert sys.version_info[:2] == (3, {minor})"]).returncode == 0:
                found.append(c)
                break
    return found


def test_it_runs_on_the_pythons_debian_and_ubuntu_ship(tmp_path: Path) -> None:
    ast.parse(standalone.SOURCE.read_text(), feature_version=(3, 10))
    pythons = interpreters()
    if len(pythons) < 2:
        pytest.skip(f"only {pythons} of Python 3.10-3.12 here")
    (tmp_path / "a.c").write_text("int main(void) { return 0; }\n")
    assert run(["clang-22", "-c", "a.c"], cwd=tmp_path).returncode == 0
    for py in pythons:  # what needs no numpy: options, and a link, which runs unchanged
        assert run([py, standalone.SOURCE, "--version"]).stdout == "mlgo-cc 1\n", py
        p = run([py, standalone.SOURCE, "--model", "none.onnx", "--", "clang-22", "-c", "a.c"], cwd=tmp_path)
        assert (p.returncode, p.stderr) == (2, "mlgo-cc: error: policy model none.onnx not found\n"), py
        (tmp_path / "model.onnx").write_bytes(b"not a model: never loaded for a link")
        p = run([py, standalone.SOURCE, "--model", "model.onnx", "--", "clang-22", "a.o", "-o", "a"], cwd=tmp_path)
        assert p.returncode == 0 and run([tmp_path / "a"]).returncode == 0, (py, p.stderr)


# -- a user without the farm -----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def host_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv (Debian's own python3 when there is one) with only numpy and onnxruntime, at the
    versions requirements.lock pins (their dependencies too): made once per session."""
    venv = tmp_path_factory.mktemp("standalone") / "venv"
    python = "/usr/bin/python3" if Path("/usr/bin/python3").is_file() else sys.executable
    p = run([python, "-m", "venv", venv])
    assert p.returncode == 0, p.stderr
    p = run([venv / "bin/pip", "install", "-q", "-c", ROOT / "requirements.lock", "numpy", "onnxruntime"], timeout=900)
    assert p.returncode == 0, p.stderr
    listed = {ln.split("==")[0].lower() for ln in run([venv / "bin/pip", "freeze"]).stdout.split()}
    assert {"numpy", "onnxruntime"} <= listed and not listed & {"mlgo-farm", "onnx", "torch", "buildbot"}, listed
    assert run([venv / "bin/python", "-c", "import farm"], cwd=venv.parent).returncode != 0, "the farm is not there"
    return venv


@pytest.fixture(scope="session")
def zlib_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from workers import debsrc

    return debsrc.fetch_source("zlib", tmp_path_factory.mktemp("debsrc"))


@pytest.fixture(scope="session")
def inline_model(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain, ir2vec_vocab: Path) -> Path:  # noqa: F811
    """A policy of the kind the farm publishes: an MLP (policytrain/mlp.py) over every feature LLVM sends,
    embeddings and `inlining_default` included, two scores out; seeded weights that depart from the heuristic."""
    from policyhost.release import llvm_header
    from policytrain.mlp import Mlp
    from policytrain.onnx_export import to_onnx

    feats = [(f.name, f.count, "float32" if f.is_float else "int64")
             for f in llvm_header(toolchain, "inline", ir2vec_vocab).features]
    assert {"callee_embedding", "caller_embedding", "inlining_default"} <= {f[0] for f in feats}
    rows = np.random.default_rng(3).integers(0, 40, (64, sum(f[1] for f in feats))).astype(float)
    path = tmp_path_factory.mktemp("model") / "model.onnx"
    path.write_bytes(to_onnx(Mlp.init(feats, rows, hidden=(16,), seed=5)))
    return path


@pytest.fixture
def dashboard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inline_model: Path, ir2vec_vocab: Path):  # noqa: F811
    """A live dashboard on loopback (under the master's prefix) whose store holds the model and its vocabulary."""
    from werkzeug.serving import make_server

    from master.dashboard.app import create_app

    store = FileStore(tmp_path / "store")
    vocab, model = ir2vec_vocab.read_bytes(), inline_model.read_bytes()
    vd, md = hashlib.sha256(vocab).hexdigest(), hashlib.sha256(model).hexdigest()
    when = "2026-11-24T00:00:00Z"
    store.put(f"vocab/ir/{VV}/vocab.json", vocab)
    store.put(f"vocab/ir/{VV}/manifest.json", json.dumps({"kind": "ir", "version": VV, "sha256": vd}).encode())
    store.put("vocab/index.json", json.dumps({"format": 1, "versions": [
        {"kind": "ir", "version": VV, "sha256": vd, "state": "latest", "published_at": when}]}).encode())
    store.put(f"policies/inline/{PV}/model.onnx", model)
    store.put(f"policies/inline/{PV}/manifest.json", json.dumps({
        "advisor": "inline", "version": PV, "sha256": md, "vocab_version": VV, "published_at": when,
        "llvm": {"llvm_version": "22.1.8"}}).encode())
    store.put("policies/index.json", json.dumps({"format": 1, "versions": [
        {"advisor": "inline", "version": PV, "sha256": md, "vocab_version": VV, "state": "latest",
         "published_at": when}]}).encode())
    apps: list = []
    prefix = "/" + DASHBOARD_PATH.rstrip("/")

    def wsgi(environ, start_response):  # the master mounts the app under its prefix
        path = environ["PATH_INFO"]
        if not path.startswith(prefix + "/"):
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not the dashboard\n"]
        environ["SCRIPT_NAME"], environ["PATH_INFO"] = prefix, path[len(prefix):]
        return apps[0](environ, start_response)

    server = make_server("127.0.0.1", 0, wsgi, threaded=True)
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WEB_URL", f"http://127.0.0.1:{server.server_port}/")
    apps.append(create_app(load_settings(), store=store, history=tmp_path / "no-history.sqlite"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield load_settings().buildbot.dashboard()
    server.shutdown()
    thread.join(timeout=30)


def use_it(base: str) -> dict[str, str]:
    """The policy page's "Use it" blocks, as a user copies them."""
    page = urllib.request.urlopen(f"{base}policies/inline/{PV}/", timeout=30).read().decode()
    return {b: html.unescape(page.split(f'<pre id="use-{b}">')[1].split("</pre>")[0])
            for b in ("fetch", "make", "cmake")}


def bash(script: str, cwd: Path) -> None:
    p = run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]


def texts(tree: Path) -> dict[str, int]:
    """Berkeley `text` of every object under `tree` (llvm-size), by path."""
    objects = sorted(str(p.relative_to(tree)) for p in tree.rglob("*.o"))
    out = run([Toolchain(Path("/usr/lib/llvm-22/bin")).path("llvm-size"), *objects], cwd=tree).stdout.splitlines()
    return {ln.split()[5]: int(ln.split()[0]) for ln in out[1:]}


def test_zlib_built_with_the_page_commands_has_the_farms_text(dashboard: str, host_venv: Path, zlib_tree: Path,
                                                              inline_model: Path, ir2vec_vocab: Path,  # noqa: F811
                                                              tmp_path: Path, runtime_dir: Path) -> None:  # noqa: F811
    use = use_it(dashboard)
    user = tmp_path / "user"
    user.mkdir()
    (user / "venv").symlink_to(host_venv)  # the page's own venv line, made once per session by the fixture
    fetch = [ln for ln in use["fetch"].splitlines() if not ln.startswith("python3 -m venv venv && ")]
    assert len(fetch) == len(use["fetch"].splitlines()) - 1
    trees = {name: shutil.copytree(zlib_tree, tmp_path / name) for name in ("standalone", "farm", "plain", "cmake")}
    configure = "CC=clang-22 ./configure --static >/dev/null"
    # the user: download, check, build zlib with make and with CMake, as the page says
    bash("\n".join([*fetch, f"cd {trees['standalone']}", configure, use["make"] + " -j2 libz.a"]), user)
    sa = texts(trees["standalone"])
    # Debian's zlib source lacks win32/zlib1.rc, which zlib's own CMakeLists needs: a project of the user's own
    (trees["cmake"] / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.20)\nproject(z C)\n"
                                                   f"add_library(z STATIC {' '.join(o[:-2] + '.c' for o in sa)})\n")
    bash("\n".join([f"mlgo={user}", configure, *use["cmake"].splitlines()]) + " -j2", trees["cmake"])
    assert sorted(p.name for p in user.iterdir()) == ["mlgo-cc.py", "mlgo-cc.py.sha256", "model.onnx",
                                                      "model.onnx.sha256", "venv", "vocab.json", "vocab.json.sha256"]
    assert (user / "mlgo-cc.py").read_bytes() == standalone.source()
    assert (user / "model.onnx").read_bytes() == inline_model.read_bytes()
    # the farm: its own launcher, the same model and vocabulary
    p = run([BIN / "mlgo-farm", "policy-cc", "--print-launcher", "--policy", inline_model, "--vocab", ir2vec_vocab])
    assert p.returncode == 0, p.stderr
    bash(f"{configure}\nmake -j2 libz.a CC='{p.stdout.strip()} clang-22' CFLAGS=-Oz", trees["farm"])
    bash(f"{configure}\nmake -j2 libz.a CC=clang-22 CFLAGS=-Oz", trees["plain"])
    farm, plain = texts(trees["farm"]), texts(trees["plain"])
    assert len(sa) >= 15 and sa == farm
    assert sum(sa[o] != plain[o] for o in sa) >= 3, "the policy decided differently from LLVM's heuristic"
    # CMake: the same compiles through the page's launcher list
    assert {Path(o).name.removesuffix(".c.o"): t for o, t in texts(trees["cmake"] / "build").items()} == {
        Path(o).stem: t for o, t in sa.items()}


# -- never stuck, never silent, never wrong --------------------------------------------------------------------
def host_cmd(venv: Path, model: Path, *compiler: object, vocab: Path | None = None, timeout: float = 60) -> list:
    return [venv / "bin/python", standalone.SOURCE, "--model", model, *(["--vocab", vocab] if vocab else []),
            "--timeout", timeout, "--", *compiler]


def test_non_finite_advice_and_missing_features_fail_in_one_line(host_venv: Path, inline_model: Path,
                                                                  tmp_path: Path) -> None:
    nan = write_onnx_nan_logit(tmp_path / "nan.onnx")
    p = run(host_cmd(host_venv, nan, "clang-22", "-Oz", "-c", CSRC / "sort.c", "-o", tmp_path / "s.o"))
    assert p.returncode == 2 and not (tmp_path / "s.o").exists()
    assert p.stderr == f"mlgo-cc: error: policy model {nan} gave non-finite advice [nan] on observation 0; " \
                       "refusing to guess a decision\n"
    p = run(host_cmd(host_venv, inline_model, "clang-22", "-Oz", "-c", CSRC / "sort.c", "-o", tmp_path / "s.o"))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "needs feature 'callee_embedding'" in p.stderr
    assert "pass the IR2Vec vocabulary with --vocab" in p.stderr


def test_a_model_that_never_answers_is_stopped(host_venv: Path, tmp_path: Path) -> None:
    loop = write_onnx_loop(tmp_path / "loop.onnx", bounded_by_feature=False)
    t0 = time.monotonic()
    p = run(host_cmd(host_venv, loop, "clang-22", "-Oz", "-c", CSRC / "sort.c", "-o", tmp_path / "s.o", timeout=1))
    assert p.returncode == 2 and time.monotonic() - t0 < 30
    assert p.stderr == "mlgo-cc: error: policy model loop.onnx gave no advice within 1s (observation 0); " \
                       "its run was stopped\n"


def stalling_compiler(tmp_path: Path) -> Path:
    """A "compiler" that opens the channel, sends a header, writes its pid to `pid` and sleeps: no data, no CPU."""
    header = protocol.Header([protocol.TensorSpec("inlining_default", "int64_t", (1,))],
                             protocol.TensorSpec("inlining_decision", "int64_t", (1,)))
    stall = tmp_path / "stall.py"
    stall.write_text("import os, sys, time\nbase = next(a.split('=', 1)[1] for a in sys.argv if "
                     "a.startswith('-inliner-interactive-channel-base='))\n"
                     f"fd = os.open(base + '.out', os.O_WRONLY)\nos.write(fd, {header.encode()!r})\n"
                     f"open({str(tmp_path / 'pid.tmp')!r}, 'w').write(str(os.getpid()))\n"
                     f"os.rename({str(tmp_path / 'pid.tmp')!r}, {str(tmp_path / 'pid')!r})\ntime.sleep(3600)\n")
    (tmp_path / "m.onnx").write_bytes(b"never loaded: no observation arrives")
    return stall


def test_a_compiler_that_stalls_is_killed(host_venv: Path, tmp_path: Path) -> None:
    stall, model = stalling_compiler(tmp_path), tmp_path / "m.onnx"
    t0 = time.monotonic()
    p = run(host_cmd(host_venv, model, sys.executable, stall, "x.c", timeout=1))
    assert p.returncode == 1 and 1 <= time.monotonic() - t0 < 30
    assert p.stderr.startswith("mlgo-cc: error: the compiler (pid ") and p.stderr.count("\n") == 1
    assert "no data and no CPU progress for 1s after 0 decisions; killed it" in p.stderr
    assert not Path(f"/proc/{(tmp_path / 'pid').read_text()}").exists(), "killed and reaped"


def test_sigterm_kills_the_compiler_and_removes_the_channel(host_venv: Path, tmp_path: Path) -> None:
    """make or CMake stopping a build: the host's compiler is killed and reaped, its FIFO pair removed."""
    import signal

    from tests.servers import wait_until

    stall, channels = stalling_compiler(tmp_path), tmp_path / "tmp"
    channels.mkdir()
    cmd = host_cmd(host_venv, tmp_path / "m.onnx", sys.executable, stall, "x.c")
    launcher = subprocess.Popen([str(c) for c in cmd], stderr=subprocess.PIPE,
                                env={**os.environ, "TMPDIR": str(channels)})
    try:
        wait_until(lambda: (tmp_path / "pid").exists(), 30, "the compiler to open its channel")
        assert list(channels.glob("mlgo-cc-*"))
        launcher.send_signal(signal.SIGTERM)
        _, err = launcher.communicate(timeout=30)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert launcher.returncode == 143 and err.decode() == "mlgo-cc: terminated\n"
    assert not Path(f"/proc/{(tmp_path / 'pid').read_text()}").exists(), "killed and reaped"
    assert not list(channels.iterdir())


def test_the_compilers_own_failure_keeps_its_message_and_code(host_venv: Path, inline_model: Path,
                                                              tmp_path: Path) -> None:
    bad = ROOT / "tests/data/bad/syntax_error.c"
    p = run(host_cmd(host_venv, inline_model, "clang-22", "-Oz", "-c", bad, "-o", tmp_path / "b.o"))
    plain = run(["clang-22", "-Oz", "-c", bad, "-o", tmp_path / "b.o"])
    assert p.returncode == plain.returncode == 1 and p.stderr == plain.stderr
    for argv, err in ((["--model"], "option --model needs a value"), (["--modle", "m", "--", "cc"], "unknown option"),
                      (["--model", inline_model, "--timeout", "0", "--", "cc", "a.c"], "--timeout must be a positive"),
                      (["--model", inline_model, "--vocab", inline_model, "--", "cc", "a.c"], "is not readable JSON")):
        p = run([host_venv / "bin/python", standalone.SOURCE, *argv])
        assert p.returncode == 2 and p.stderr.startswith("mlgo-cc: error: ") and p.stderr.count("\n") == 1
        assert err in p.stderr
