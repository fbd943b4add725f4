"""What the policy hosts leave behind and what they hand the compiler (issue 35, item 7), with real parts.

A compiler the host kills (on timeout, or on the host's own SIGTERM, SIGINT or SIGHUP) takes the processes it
started with it: in the standalone host (policyhost/standalone/mlgo_cc.py, run as users run it), in the
farm's per-compile launcher (policyhost/cc.py) and in `run_compile` (policyhost/launcher.py). The compiler
is a real stand-in, a script that starts a child and sleeps; the child is found gone by its pid. The
standalone host says in one line, before any compiler runs, what is wrong with a vocabulary that LLVM would
refuse in four lines of its own or take and hand to the policy as inf.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from policyhost.cc import launcher_command
from policyhost.launcher import run_compile
from tests.policyhost.conftest import CSRC, VOCAB_DIM, ir2vec_vocab, process_running  # noqa: F401 - a fixture
from tests.policyhost.test_standalone import host_cmd, host_venv, load_host, run  # noqa: F401 - a fixture
from tests.servers import end_with_signal, sigint_default, wait_until

FORKING = """#!{python}
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", {marker!r}])
with open({pids!r} + ".tmp", "w") as f:
    f.write(f"{{os.getpid()}} {{child.pid}}")
os.rename({pids!r} + ".tmp", {pids!r})
time.sleep(3600)
"""


class Forking:
    """A compiler stand-in, `bin/clang` (the farm launchers take only clang from their bin directory): it
    starts a child, writes both pids, and sleeps without a word on the channel or any CPU."""

    def __init__(self, tmp_path: Path) -> None:
        self.dir, self.marker, self.pid_file = tmp_path / "bin", str(tmp_path), tmp_path / "pids"
        self.dir.mkdir()
        self.path = self.dir / "clang"
        self.path.write_text(FORKING.format(python=sys.executable, marker=self.marker, pids=str(self.pid_file)))
        self.path.chmod(0o755)

    def pids(self) -> list[int]:
        """The compiler's pid and its child's, once it has started both."""
        wait_until(self.pid_file.exists, 30, "the compiler stand-in to start its child")
        return [int(p) for p in self.pid_file.read_text().split()]

    def running(self) -> list[int]:
        if not self.pid_file.exists():
            return []
        return [p for p in self.pids() if process_running(p, self.marker)]

    def assert_gone(self) -> None:
        """Both are gone (or zombies) within a deadline: killed with the group, not left to run for an hour."""
        compiler, child = self.pids()
        assert not process_running(compiler, self.marker), "the host returned, its compiler still runs"
        wait_until(lambda: not process_running(child, self.marker), 30, f"the compiler's child {child} to die")


@pytest.fixture
def forking(tmp_path: Path):
    stand_in = Forking(tmp_path)
    yield stand_in
    for pid in stand_in.running():  # what this test started and the code under test left behind
        os.kill(pid, signal.SIGKILL)


def signal_host(cmd: list, forking: Forking, sig: int) -> tuple[int, str]:
    """Start a host on the stand-in, send it `sig` once the stand-in's child runs; its exit status and stderr."""
    host = subprocess.Popen([str(c) for c in cmd], stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    try:
        forking.pids()
    except BaseException:
        end_with_signal(host, signal.SIGKILL)
        raise
    _, err = end_with_signal(host, sig)
    return host.returncode, err


SIGNALS = [(signal.SIGTERM, "terminated", 143), (signal.SIGINT, "interrupted", 130), (signal.SIGHUP, "hung up", 129)]


# -- the standalone host ---------------------------------------------------------------------------------------
def test_standalone_kills_the_children_of_a_stalled_compiler(host_venv: Path, forking: Forking,  # noqa: F811
                                                             tmp_path: Path) -> None:
    (tmp_path / "m.onnx").write_bytes(b"never loaded: no observation arrives")
    # an orphan keeps the host's stderr open, so `run` (like make reading a job's output) would wait an hour
    p = run(host_cmd(host_venv, tmp_path / "m.onnx", forking.path, "x.c", timeout=1), timeout=60)
    assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
    assert "no data and no CPU progress for 1s after 0 decisions; killed it" in p.stderr
    forking.assert_gone()


@pytest.mark.parametrize(("sig", "said", "code"), SIGNALS, ids=lambda v: getattr(v, "name", None))
def test_standalone_killed_by_a_signal_kills_the_compilers_children(host_venv: Path, forking: Forking,  # noqa: F811
                                                                    tmp_path: Path, sig: int, said: str,
                                                                    code: int) -> None:
    (tmp_path / "m.onnx").write_bytes(b"never loaded")
    rc, err = signal_host(host_cmd(host_venv, tmp_path / "m.onnx", forking.path, "x.c"), forking, sig)
    assert (rc, err) == (code, f"mlgo-cc: {said}\n")
    forking.assert_gone()


# -- the farm's launchers --------------------------------------------------------------------------------------
def farm_cc(forking: Forking, timeout: float) -> list:
    """The printed launcher's interpreter and script, on the stand-in's bin directory."""
    return [*launcher_command("heuristic")[:4], "--bin-dir", forking.dir, "--timeout", timeout,
            "--policy", "heuristic", "--", "clang", "-Oz", "-c", "x.c"]


def test_farm_launcher_kills_the_children_of_a_stalled_compiler(forking: Forking) -> None:
    p = run(farm_cc(forking, 1), timeout=60)
    assert p.returncode != 0 and p.stderr.count("\n") == 1, p.stderr
    assert "no data and no CPU progress for 1s after 0 decisions; killed it" in p.stderr
    forking.assert_gone()


@pytest.mark.parametrize(("sig", "said", "code"), SIGNALS, ids=lambda v: getattr(v, "name", None))
def test_farm_launcher_killed_by_a_signal_kills_the_compilers_children(forking: Forking, sig: int, said: str,
                                                                       code: int) -> None:
    rc, err = signal_host(farm_cc(forking, 60), forking, sig)
    assert (rc, err) == (code, f"mlgo-farm: {said}\n")
    forking.assert_gone()


def test_run_compile_kills_the_children_of_a_stalled_compiler(forking: Forking) -> None:
    out = run_compile(["clang", "-Oz", "-c", "x.c"], "heuristic", timeout=1, toolchain=Toolchain(forking.dir))
    assert out.host_error is not None and "no data and no CPU progress for 1s" in out.host_error
    forking.assert_gone()


# -- vocabularies the standalone host refuses ------------------------------------------------------------------
def vocab_text(value: str) -> str:
    """A vocabulary LLVM would load, but for `value` as the first number of `Opcodes.Ret`."""
    rest = ", ".join(["0.5"] * (VOCAB_DIM - 1))
    return (f'{{"Opcodes": {{"Ret": [{value}, {rest}], "Add": [{rest}, 0.5]}}, "Types": {{"VoidTy": [{rest}, 1]}}, '
            f'"Arguments": {{"Constant": [{rest}, 2]}}}}')


DEEP = 100_000
BAD_VOCABULARIES = {  # what is in the file: the one line it gets
    "nan": (vocab_text("NaN"), 'Opcodes["Ret"] holds nan; the vectors must be finite numbers'),
    "1e400": (vocab_text("1e400"), 'Opcodes["Ret"] holds inf; the vectors must be finite numbers'),
    "10**400": (vocab_text(str(10**400)), 'Opcodes["Ret"] holds an integer of 401 digits; the vectors must be'),
    "1e39": (vocab_text("1e39"), 'holds 1e+39; the vectors must be finite numbers a float holds'),
    "deep array": (vocab_text("[" * DEEP + "]" * DEEP), "is not readable JSON: nested too deeply"),
    "nested array": (vocab_text("[" * 200 + "]" * 200), 'Opcodes["Ret"] holds an array, not a number'),
    "boolean": (vocab_text("true"), 'Opcodes["Ret"] holds a boolean, not a number'),
    "dimension": (vocab_text("1").replace(", 0.5]", "]", 1), f'"Add"] has dimension {VOCAB_DIM}, not {VOCAB_DIM - 1}'),
    "empty section": (vocab_text("1").replace('{"Constant"', '{}, "x": {"Constant"'),
                      "section Arguments is not a non-empty object of vectors"),
}


@pytest.mark.parametrize("case", BAD_VOCABULARIES)
def test_a_vocabulary_llvm_or_the_policy_cannot_use_is_one_line_before_the_compile(host_venv: Path,  # noqa: F811
                                                                                   tmp_path: Path, case: str) -> None:
    text, said = BAD_VOCABULARIES[case]
    vocab, ran = tmp_path / "vocab.json", tmp_path / "compiler-ran"
    vocab.write_text(text)
    compiler = tmp_path / "clang"  # clang itself, after leaving a mark that it ran
    compiler.write_text(f"#!/bin/sh\ntouch {ran}\nexec clang-22 \"$@\"\n")
    compiler.chmod(0o755)
    (tmp_path / "m.onnx").write_bytes(b"never loaded")
    p = run(host_cmd(host_venv, tmp_path / "m.onnx", compiler, "-Oz", "-c", CSRC / "sort.c", "-o", tmp_path / "s.o",
                     vocab=vocab))
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith(f"mlgo-cc: error: IR2Vec vocabulary {vocab}") and said in p.stderr, p.stderr
    assert not ran.exists() and not (tmp_path / "s.o").exists(), "the compiler ran"


def test_the_vocabulary_check_agrees_with_the_farms_and_llvms() -> None:
    """What the standalone host refuses, the farm refuses to publish; what LLVM takes (a section it does not
    read, integers) it takes."""
    from farm import vocabfile

    sa = load_host()

    def farm_refuses(data: dict) -> bool:
        try:
            vocabfile.check_schema("ir", data)
            vocabfile.check_magnitude(data, bound=sa.FLOAT32_MAX)  # the farm's own bound is tighter still
        except vocabfile.ValidationError:
            return True
        return False

    check = sa.vocab_problem
    for case, (text, _) in BAD_VOCABULARIES.items():
        if case != "deep array":  # not JSON to either of them
            data = json.loads(text)
            assert check(data) and farm_refuses(data), case
    good = json.loads(vocab_text("1"))
    assert not farm_refuses(good)
    assert check(good) is None and check({**good, "Notes": {"by": "hand"}}) is None


def write_onnx_embedding_sum(path: Path) -> Path:
    """A real ONNX inliner model whose logit is the sum of the callee's embedding (inf when it is)."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["callee_embedding", "axes"], ["inlining_decision"], keepdims=1)],
        "embedding_sum",
        [helper.make_tensor_value_info("callee_embedding", TensorProto.FLOAT, ["batch", VOCAB_DIM])],
        [helper.make_tensor_value_info("inlining_decision", TensorProto.FLOAT, ["batch", 1])],
        initializer=[helper.make_tensor("axes", TensorProto.INT64, [1], [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def test_inf_features_from_a_vocabulary_are_not_blamed_on_the_model(host_venv: Path, ir2vec_vocab: Path,  # noqa: F811
                                                                    tmp_path: Path) -> None:
    """Values a float holds, whose sums over an instruction's parts do not: the compiler sends inf."""
    big = {s: {k: [3e38] * len(v) for k, v in entries.items()} for s, entries in json.loads(
        ir2vec_vocab.read_text()).items()}
    (tmp_path / "big.json").write_text(json.dumps(big))
    model = write_onnx_embedding_sum(tmp_path / "sum.onnx")
    p = run(host_cmd(host_venv, model, "clang-22", "-Oz", "-c", CSRC / "sort.c", "-o", tmp_path / "s.o",
                     vocab=tmp_path / "big.json"))
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "the compiler sent non-finite 'callee_embedding' (an IR2Vec vocabulary whose sums overflow a float?)" \
        in p.stderr
