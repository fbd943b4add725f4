"""The lean launcher (policyhost/cc.py): byte-identical heuristic builds, a real `make -j2` through it,
what a compile imports, ONNX policies through one shared `policy serve`, one-line errors, a silent server."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from policyhost.cc import launcher_command, parse_args
from policyhost.protocol import Observation
from tests.policyhost.conftest import CSRC, cmake_build, process_running, publish_vocab, write_onnx_policy

SOURCES = sorted(CSRC.glob("*.c"))
BIN = Path(sys.executable).parent
BAD_SOURCE = Path(__file__).parents[1] / "data/bad/syntax_error.c"


@pytest.fixture
def runtime_dir(monkeypatch: pytest.MonkeyPatch):
    """A private XDG_RUNTIME_DIR, so shared policy servers of this test live (and are found) there.

    Short, under /tmp: a Unix socket path must fit in 108 bytes.
    """
    rt = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(rt))
    yield rt
    stop_servers(rt)
    shutil.rmtree(rt, ignore_errors=True)


def run(cmd: list, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120, **kw)


def mute_server(path: str) -> tuple[socket.socket, list[socket.socket]]:
    """A Unix socket server that accepts one client and never answers; close both when done."""
    mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mute.bind(path)
    mute.listen(4)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(mute.accept()[0]), daemon=True).start()
    return mute, held


def plain(toolchain: Toolchain, src: Path, out: Path) -> bytes:
    toolchain.run("clang", ["-Oz", "-c", src, "-o", out])
    return out.read_bytes()


def server_pids(rt: Path) -> list[int]:
    """Pids of the shared servers started under `rt`, from the line each writes to its log."""
    pids = []
    for log in rt.glob("mlgo-farm-*/*.sock.log"):
        for line in log.read_text().splitlines():
            if "(pid " in line:
                pids.append(int(line.rsplit("(pid ", 1)[1].rstrip(")")))
    return pids


def alive(pid: int, rt: Path) -> bool:
    """Whether `pid` is still a policy server of `rt`."""
    return process_running(pid, str(rt))


def stop_servers(rt: Path) -> None:
    """SIGTERM the servers this test's compiles started (checked by command line, never a reused pid)."""
    for pid in server_pids(rt):
        if alive(pid, rt):
            os.kill(pid, signal.SIGTERM)


def test_heuristic_objects_are_byte_identical(toolchain: Toolchain, tmp_path: Path) -> None:
    stats = tmp_path / "stats.jsonl"
    prefix = launcher_command("heuristic", stats=str(stats))
    assert prefix[1:3] == ["-I", "-S"] and prefix[-1] == "--"
    for i, src in enumerate(SOURCES):
        obj = tmp_path / f"{src.stem}.o"
        # the lean file, the console script and the documented verb run the same code
        entry = [prefix, [BIN / "mlgo-farm-cc", "--policy", "heuristic", "--stats", stats, "--"],
                 [BIN / "mlgo-farm", "policy-cc", "--policy", "heuristic", "--stats", stats, "--"]][i % 3]
        p = run([*entry, "clang", "-Oz", "-c", src, "-o", obj])
        assert p.returncode == 0 and p.stderr == "", p.stderr
        assert obj.read_bytes() == plain(toolchain, src, tmp_path / "plain.o"), src.name
    import json

    lines = [json.loads(ln) for ln in stats.read_text().splitlines()]
    assert len(lines) == len(SOURCES) and all(s["ok"] for s in lines)
    assert sum(s["decisions"] for s in lines) > 0
    assert all(len(s["response_times"]) == s["decisions"] for s in lines)


def test_make_j2_through_the_printed_launcher(toolchain: Toolchain, tmp_path: Path) -> None:
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    p = run([BIN / "mlgo-farm", "policy-cc", "--print-launcher", "--policy", "heuristic", "--stats",
             tmp_path / "ml" / "stats.jsonl"])
    assert p.returncode == 0, p.stderr
    launcher = p.stdout.strip()
    assert shlex.split(launcher)[1:4] == ["-I", "-S", str(Path(__file__).parents[2] / "policyhost/cc_script.py")]
    for d, cc in (("ml", f"{launcher} clang"), ("plain", str(toolchain.path("clang")))):
        shutil.copytree(CSRC, tmp_path / d)
        (tmp_path / d / "Makefile").write_text(
            "CFLAGS = -Oz\nOBJS = " + " ".join(f"{s.stem}.o" for s in SOURCES) + "\n"
            "prog: $(OBJS)\n\t$(CC) -o $@ $(OBJS) -lm\n"
        )
        p = run(["make", "-j2", f"CC={cc}"], cwd=tmp_path / d)
        assert p.returncode == 0, p.stderr
        assert "argument unused" not in p.stderr  # the link step ran without the interactive flags
    for s in SOURCES:
        assert (tmp_path / "ml" / f"{s.stem}.o").read_bytes() == (tmp_path / "plain" / f"{s.stem}.o").read_bytes()
    outs = [run([tmp_path / d / "prog", "5000"]) for d in ("ml", "plain")]
    assert outs[0].returncode == 0 and outs[0].stdout == outs[1].stdout
    assert len((tmp_path / "ml" / "stats.jsonl").read_text().splitlines()) == len(SOURCES) + 1  # and the link


def imported_modules(cmd: list) -> tuple[subprocess.CompletedProcess, set[str]]:
    p = run([cmd[0], "-X", "importtime", *cmd[1:]])
    mods = {ln.split("|")[-1].strip() for ln in p.stderr.splitlines() if ln.startswith("import time:")}
    return p, mods


HEAVY = {"numpy", "onnxruntime", "onnx", "farm.config", "farm.toolchain", "subprocess", "json", "re",
         "dataclasses", "pathlib", "typing", "tempfile", "shutil", "socket", "enum", "argparse", "site"}


def test_a_compile_imports_no_heavy_module(tmp_path: Path, runtime_dir: Path) -> None:
    prefix = launcher_command("heuristic")
    p, mods = imported_modules([*prefix, "clang", "-Oz", "-c", CSRC / "sort.c", "-o", tmp_path / "s.o"])
    assert p.returncode == 0 and "policyhost.host" in mods and "policyhost.protocol" in mods
    assert not mods & HEAVY, sorted(mods & HEAVY)
    model = write_onnx_policy(tmp_path / "m.onnx", "callee_basic_block_count", "Less", 3)
    onnx_compile = [*launcher_command(str(model)), "clang", "-Oz", "-c", CSRC / "sort.c", "-o", tmp_path / "m.o"]
    assert run(onnx_compile).returncode == 0  # the first compile of a build starts the shared server
    p, mods = imported_modules(onnx_compile)
    assert p.returncode == 0, p.stderr
    assert "policyhost.policy_client" in mods and not mods & HEAVY, sorted(mods & HEAVY)


def test_onnx_policy_is_served_once_for_parallel_compiles(toolchain: Toolchain, tmp_path: Path, runtime_dir: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from policyhost.launcher import run_compile

    monkeypatch.setenv("MLGO_FARM_POLICY_SHARED_IDLE_EXIT", "2")
    model = write_onnx_policy(tmp_path / "small.onnx", "callee_basic_block_count", "Less", 3)
    prefix = launcher_command(str(model), stats=str(tmp_path / "stats.jsonl"))
    (tmp_path / "ml").mkdir()

    def one(src: Path) -> subprocess.CompletedProcess:
        return run([*prefix, "clang", "-Oz", "-c", src, "-o", tmp_path / "ml" / f"{src.stem}.o"])

    try:
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(one, SOURCES))
        assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
        pids = server_pids(runtime_dir)
        assert len(pids) == 1, "parallel compiles of one model share one server"
        # the same decisions as the model loaded in this process
        for src in SOURCES:
            out = run_compile(["clang", "-Oz", "-c", str(src), "-o", str(tmp_path / "direct.o")], str(model),
                              toolchain=toolchain, timeout=30)
            assert out.ok, out.error
            assert (tmp_path / "ml" / f"{src.stem}.o").read_bytes() == (tmp_path / "direct.o").read_bytes()
        # unused for 2 seconds, the server goes away and removes its socket
        deadline = time.monotonic() + 30
        while alive(pids[0], runtime_dir) and time.monotonic() < deadline:
            time.sleep(0.1)  # polling interval of a deadline loop
        assert not alive(pids[0], runtime_dir)
        assert not list(runtime_dir.glob("mlgo-farm-*/*.sock*")), "socket, start lock and log are removed"
        # the next compile starts a new one
        assert one(SOURCES[0]).returncode == 0
        assert len(set(server_pids(runtime_dir)) - {pids[0]}) == 1
    finally:
        stop_servers(runtime_dir)


@pytest.mark.parametrize(
    ("options", "command", "code", "message"),
    [
        (["--policy", "smart"], ["clang", "-c", "x.c"], 2, "unknown policy 'smart'"),
        (["--policy", "heuristic"], ["gcc", "-c", "x.c"], 2, "cannot launch 'gcc'"),
        (["--policy", "heuristic", "--bin-dir", "/nonexistent"], ["clang", "-c", "x.c"], 3,
         "LLVM tool 'clang' not found in /nonexistent"),
        (["--policy", "heuristic", "--frobnicate", "1"], ["clang", "-c", "x.c"], 2, "unknown option '--frobnicate'"),
        (["--policy", "heuristic"], [], 2, "no compiler command given"),
        (["--policy", "heuristic", "--timeout", "soon"], ["clang", "-c", "x.c"], 2,
         "--timeout must be a positive number of seconds, not 'soon'"),
        (["--policy", "heuristic", "--max-silence", "0"], ["clang", "-c", "x.c"], 2,
         "--max-silence must be a positive number of seconds, not '0'"),
        (["--policy", "heuristic", "--advisor", "regalloc"], ["clang", "-O2", "-c", str(CSRC / "sort.c")], 2,
         "policy heuristic answers the inline advisor, not regalloc"),
        (["--policy", "spill"], ["clang", "-Oz", "-c", str(CSRC / "sort.c")], 2,
         "policy spill answers the regalloc advisor, not inline"),
        (["--policy", "heuristic", "--advisor", "unroll"], ["clang", "-c", "x.c"], 2, "unknown advisor 'unroll'"),
        (["--policy", "MISSING.onnx"], ["clang", "-Oz", "-c", str(CSRC / "sort.c")], 2, "MISSING.onnx not found"),
        (["--policy", "heuristic", "--vocab", "MISSING.json"], ["clang", "-Oz", "-c", str(CSRC / "sort.c")], 2,
         "IR2Vec vocabulary MISSING.json not found"),
    ],
)
def test_bad_arguments_are_one_line_errors(tmp_path: Path, options: list[str], command: list[str], code: int,
                                           message: str) -> None:
    options = [o.replace("MISSING", str(tmp_path / "missing")) for o in options]
    prefix = launcher_command("heuristic")[:4]  # python -I -S cc_script.py, without the resolved options
    p = run([*prefix, "--bin-dir", Toolchain.from_settings().bin_dir, "--timeout", "30", *options, "--", *command],
            cwd=tmp_path)
    assert p.returncode == code, p.stderr
    assert p.stderr.startswith("mlgo-farm: error: ")
    assert message.replace("MISSING", str(tmp_path / "missing")) in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not list(tmp_path.glob("*.o"))


def test_broken_model_is_the_servers_one_line_error(tmp_path: Path, runtime_dir: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage that is not protobuf \xff\xfe")
    p = run([*launcher_command(str(bad)), "clang", "-Oz", "-c", CSRC / "sort.c", "-o", tmp_path / "s.o"])
    assert p.returncode == 2
    assert p.stderr.startswith(f"mlgo-farm: error: policy model {bad} is not a valid ONNX model")
    assert len(p.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s.o").exists()


def test_compiler_errors_pass_through_with_their_exit_code(tmp_path: Path) -> None:
    p = run([*launcher_command("heuristic"), "clang", "-Oz", "-c", BAD_SOURCE, "-o", tmp_path / "x.o"])
    assert p.returncode == 1 and "syntax_error.c:1:" in p.stderr and "mlgo-farm: error" not in p.stderr


def test_silent_policy_server_fails_the_compile_within_the_timeout(tmp_path: Path) -> None:
    """A server that accepts and never answers: the compile ends with one line, the compiler is not left behind."""
    path = str(tmp_path / "mute.sock")
    mute, held = mute_server(path)
    try:
        prefix = [*launcher_command("heuristic", timeout=2)[:4], "--bin-dir", Toolchain.from_settings().bin_dir,
                  "--timeout", "2", "--server", path, "--"]
        t0 = time.monotonic()
        p = run([*prefix, "clang", "-Oz", "-c", CSRC / "sort.c", "-o", tmp_path / "s.o"])
        elapsed = time.monotonic() - t0
    finally:
        for s in (*held, mute):
            s.close()
    assert p.returncode == 1
    assert p.stderr.startswith(f"mlgo-farm: error: server {path} failed: timed out")
    assert len(p.stderr.strip().splitlines()) == 1
    assert elapsed < 30
    assert not (tmp_path / "s.o").exists()


def test_launcher_and_toolchain_share_one_rule_for_tools_and_settings(toolchain: Toolchain, tmp_path: Path) -> None:
    """The lean launcher finds clang and reads its settings with the modules farm.config and Toolchain use."""
    import policyhost.cc as cc
    from farm import envvalues, toolpath
    from farm.config import load_settings
    from farm.errors import FarmError

    assert cc.tool_path is toolpath.tool_path
    assert cc.tool_path(toolchain.bin_dir, "clang") == str(toolchain.path("clang"))
    env = {"MLGO_FARM_POLICY_TIMEOUT": "-1"}
    with pytest.raises(FarmError) as lean:
        envvalues.from_env(env, "policy", "timeout", 0.0)
    with pytest.raises(FarmError) as farm:
        load_settings(tmp_path / "none.toml", env=env)
    assert str(lean.value) == str(farm.value) == "MLGO_FARM_POLICY_TIMEOUT: must be greater than 0, got -1.0"


def test_parse_args() -> None:
    opts = parse_args(["--policy=never", "--timeout", "5", "--", "clang", "--version"])
    assert (opts.policy, opts.timeout, opts.command) == ("never", 5.0, ["clang", "--version"])
    assert opts.max_silence is None
    assert parse_args(["--timeout=2.5", "--max-silence", "7.5", "clang"]).max_silence == 7.5
    opts = parse_args(["--bin-dir", "/x", "clang", "-c", "--policy", "a.c"])  # options end at the compiler
    assert opts.bin_dir == "/x" and opts.command == ["clang", "-c", "--policy", "a.c"] and opts.policy is None


@pytest.mark.parametrize("mixed", [False, True])
def test_onnx_feeds_from_raw_bytes_match_decoded_features(tmp_path: Path, mixed: bool) -> None:
    """The server feeds a model slices of LLVM's raw bytes; decisions equal those from decoded features."""
    import random

    from policyhost.protocol import Header, StreamDecoder, TensorSpec, encode_observation
    from policyhost.runnable import OnnxPolicy

    feats = [TensorSpec("callee_basic_block_count", "int64_t", (1,)), TensorSpec("cost_estimate", "int64_t", (1,))]
    if mixed:
        feats.insert(0, TensorSpec("callee_embedding", "float", (3,)))
    header = Header(feats, TensorSpec("inlining_decision", "int64_t", (1,)))
    models = [write_onnx_policy(tmp_path / "int.onnx", "callee_basic_block_count", "Less", 3),
              write_onnx_policy(tmp_path / "float.onnx", "cost_estimate", "Greater", 2.5, input_type="float")]
    if mixed:
        models.append(write_onnx_policy(tmp_path / "emb.onnx", "callee_embedding", "Greater", 0.0, width=3,
                                        input_type="float"))
    rng = random.Random(3)
    stream = header.encode()
    for i in range(40):
        values = {"callee_basic_block_count": (rng.randint(0, 6),), "cost_estimate": (rng.randint(-5, 9),),
                  "callee_embedding": tuple(rng.uniform(-1, 1) for _ in range(3))}
        stream += encode_observation(header, Observation(i, None, {f.name: values[f.name] for f in feats}))
    decoded = list(StreamDecoder().feed(stream))
    assert len(decoded) == 40 and all(o.raw is not None for o in decoded)
    for model in models:
        pol = OnnxPolicy(model)
        pol.bind(header)
        from_raw = [pol.decide(o) for o in decoded]
        from_features = [pol.decide(Observation(o.index, None, dict(o.features))) for o in decoded]
        assert from_raw == from_features
        assert 0 < sum(from_raw) < 40, "the inputs must make the model answer both ways"


def test_cmake_build_through_the_printed_launcher(toolchain: Toolchain, tmp_path: Path) -> None:
    if not shutil.which("cmake"):
        pytest.skip("cmake is not installed")
    import json

    stats = tmp_path / "stats.jsonl"
    p = run([BIN / "mlgo-farm", "policy-cc", "--print-launcher", "cmake", "--policy", "heuristic", "--stats", stats])
    assert p.returncode == 0, p.stderr
    launcher = p.stdout.strip()
    assert launcher.split(";")[1:3] == ["-I", "-S"]
    cmake_build(toolchain, tmp_path, launcher)
    compiles = [json.loads(ln) for ln in stats.read_text().splitlines() if '"-c"' in ln]
    assert len(compiles) == len(SOURCES) and all(c["ok"] for c in compiles)
    assert sum(c["decisions"] for c in compiles) > 0
    for src_file in SOURCES:  # CMake's objects are the plain compiler's, byte for byte
        obj = next((tmp_path / "build").rglob(f"{src_file.name}.o"))
        args = next(c["argv"] for c in compiles if str(src_file.name) in " ".join(c["argv"]))
        plain_argv = [str(toolchain.path("clang")), *args[1:]]
        out_i = plain_argv.index("-o") + 1
        plain_argv[out_i] = str(tmp_path / "plain.o")
        subprocess.run(plain_argv, check=True, cwd=tmp_path / "build", capture_output=True, timeout=120)
        assert obj.read_bytes() == (tmp_path / "plain.o").read_bytes(), src_file.name


def test_sigterm_kills_the_compiler_and_removes_the_channel(tmp_path: Path) -> None:
    """make stopping a build: the launcher's compiler is killed and reaped, its FIFO pair removed."""
    path = str(tmp_path / "mute.sock")
    mute, held = mute_server(path)
    channels = tmp_path / "tmp"
    channels.mkdir()
    prefix = [*launcher_command("heuristic")[:4], "--bin-dir", Toolchain.from_settings().bin_dir,
              "--timeout", "60", "--server", path, "--"]
    cmd = [str(c) for c in [*prefix, "clang", "-Oz", "-c", CSRC / "sort.c", "-o", tmp_path / "s.o"]]
    launcher = subprocess.Popen(cmd, stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": str(channels)})
    try:
        deadline = time.monotonic() + 30
        compiler = None
        while compiler is None and time.monotonic() < deadline:  # the compiler waits for the mute server's advice
            kids = Path(f"/proc/{launcher.pid}/task/{launcher.pid}/children").read_text().split()
            compiler = int(kids[0]) if kids and held else None
            time.sleep(0.05)  # polling interval of a deadline loop
        assert compiler is not None and list(channels.glob("mlgo-channel-*"))
        launcher.send_signal(signal.SIGTERM)
        _, err = launcher.communicate(timeout=30)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        for s in (*held, mute):
            s.close()
    assert launcher.returncode == 143 and err.decode().strip() == "mlgo-farm: terminated"
    assert not Path(f"/proc/{compiler}").exists(), "the compiler was killed and reaped"
    assert not list(channels.iterdir()) and not (tmp_path / "s.o").exists()


def test_policy_timeout_from_the_environment_may_have_a_fraction(tmp_path: Path) -> None:
    """MLGO_FARM_POLICY_TIMEOUT=2.5 bounds the wait on a mute server; garbage there is a one-line error."""
    path = str(tmp_path / "mute.sock")
    mute, held = mute_server(path)
    prefix = [*launcher_command("heuristic")[:4], "--server", path, "--"]  # bin dir and timeout from the settings
    compile_cmd = [*prefix, "clang", "-Oz", "-c", CSRC / "sort.c", "-o", tmp_path / "s.o"]
    try:
        t0 = time.monotonic()
        p = run(compile_cmd, env={**os.environ, "MLGO_FARM_POLICY_TIMEOUT": "2.5"})
        elapsed = time.monotonic() - t0
    finally:
        for s in (*held, mute):
            s.close()
    assert p.returncode == 1 and p.stderr.startswith(f"mlgo-farm: error: server {path} failed: timed out"), p.stderr
    assert 2.5 <= elapsed < 30  # the configured default would be 60 s
    p = run(compile_cmd, env={**os.environ, "MLGO_FARM_POLICY_TIMEOUT": "soon"})
    # the same one line `mlgo-farm` itself gives for that setting (farm.envvalues is the one reader)
    assert p.returncode == 1
    assert p.stderr == "mlgo-farm: error: MLGO_FARM_POLICY_TIMEOUT='soon': expected a number\n"
    assert not (tmp_path / "s.o").exists()


def test_printed_launcher_pins_the_published_vocabulary(toolchain: Toolchain, tmp_path: Path,
                                                        ir2vec_vocab: Path, capsys: pytest.CaptureFixture) -> None:
    """`--vocab store:latest` is resolved once, when the launcher is printed: a later publication changes nothing."""
    import json

    from farm.cli import main

    assert main(["policy-cc", "--print-launcher", "--vocab", "store:latest"]) == 6  # NothingPublished
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no ir vocabulary has been published" in err[0]

    first = publish_vocab(ir2vec_vocab.read_bytes(), when=time.time() - 60)
    prefix = launcher_command("heuristic", vocab="store:latest")
    pinned = Path(prefix[prefix.index("--vocab") + 1])
    assert pinned.is_absolute() and pinned.name == f"{first}.json"
    assert pinned.read_bytes() == ir2vec_vocab.read_bytes()
    newer = json.loads(ir2vec_vocab.read_text())
    newer["Opcodes"] = {k: [-v for v in vec] for k, vec in newer["Opcodes"].items()}
    second = publish_vocab(json.dumps(newer).encode(), when=time.time())
    assert second != first
    p = run([*prefix, "clang", "-Oz", "-c", CSRC / "sort.c", "-o", tmp_path / "s.o"])
    assert p.returncode == 0, p.stderr
    assert [c.name for c in pinned.parent.glob("*.json")] == [f"{first}.json"], "the compile did not look again"
    assert (tmp_path / "s.o").read_bytes() == plain(toolchain, CSRC / "sort.c", tmp_path / "plain.o")


def test_policy_cc_limits_are_checked_and_printed(capsys: pytest.CaptureFixture) -> None:
    from farm.cli import main

    assert main(["policy-cc", "--timeout", "0", "--", "clang", "-c", "x.c"]) == 2
    assert capsys.readouterr().err == "mlgo-farm: error: --timeout must be a positive number of seconds, not '0'\n"
    assert main(["policy-cc", "--print-launcher", "--policy", "spill", "--advisor", "regalloc", "--timeout", "2.5",
                 "--max-silence", "30"]) == 0
    prefix = shlex.split(capsys.readouterr().out)
    assert prefix[prefix.index("--timeout") + 1] == "2.5" and prefix[prefix.index("--max-silence") + 1] == "30"
    assert parse_args([*prefix[4:], "clang", "-c", "x.c"]).max_silence == 30.0


def test_help_describes_every_option_the_launcher_takes() -> None:
    """`mlgo-farm-cc --help` is a help, not only the usage line: every option it parses, with what it does."""
    from policyhost.cc import _VALUED, OPTIONS, USAGE

    got = subprocess.run([str(BIN / "mlgo-farm-cc"), "--help"], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0 and got.stderr == ""
    lines = got.stdout.splitlines()
    assert lines[0] == USAGE and len(lines) > 20
    assert {name.replace("-", "_") for name, _, _ in OPTIONS} == set(_VALUED)
    for name, metavar, _ in OPTIONS:
        i = lines.index(f"  --{name} {metavar}")
        assert lines[i + 1].startswith("        ") and len(lines[i + 1].split()) > 3, lines[i:i + 2]
    assert "  --version" in lines and any(line.startswith("exit status") for line in lines)
