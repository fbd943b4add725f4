"""`policy serve` bounds every model run: a model that never returns fails its compile, and the server
neither spins on nor stops answering (issue 18, item 3). Real `policy serve` processes, real ONNX models
with an endless `Loop` built with onnx.helper, real clang through the launcher."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from farm.errors import FarmError
from policyhost.cc import launcher_command
from policyhost.protocol import Header, Observation, TensorSpec
from tests.policyhost.conftest import CSRC
from tests.policyhost.test_cc import alive, run, runtime_dir, server_pids, stop_servers  # noqa: F401 - fixture
from tests.servers import wait_until

FEATURE = "callee_basic_block_count"


def write_onnx_loop(path: Path, *, bounded_by_feature: bool) -> Path:
    """An inliner model whose `Loop` has a condition that stays true: it never ends, or (bounded_by_feature)
    ends after as many iterations as the feature's value. Advice: 1 once the loop is done."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper

    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["v", "one"], ["v_out"])],
        "body",
        [helper.make_tensor_value_info("i", T.INT64, []), helper.make_tensor_value_info("cond_in", T.BOOL, []),
         helper.make_tensor_value_info("v", T.INT64, [1, 1])],
        [helper.make_tensor_value_info("cond_out", T.BOOL, []),
         helper.make_tensor_value_info("v_out", T.INT64, [1, 1])],
        [helper.make_tensor("one", T.INT64, [], [1])],
    )
    nodes = [helper.make_node("Constant", [], ["forever"], value=helper.make_tensor("t", T.BOOL, [], [True]))]
    if bounded_by_feature:
        nodes.append(helper.make_node("ReduceMax", [FEATURE], ["trips"], keepdims=0))
    nodes += [
        helper.make_node("Mul", [FEATURE, "zero"], ["start"]),
        helper.make_node("Loop", ["trips" if bounded_by_feature else "", "forever", "start"], ["count"], body=body),
        helper.make_node("Greater", ["count", "zero"], ["any"]),
        helper.make_node("Cast", ["any"], ["inlining_decision"], to=T.INT64),
    ]
    graph = helper.make_graph(
        nodes, "loop_policy",
        [helper.make_tensor_value_info(FEATURE, T.INT64, ["batch", 1])],
        [helper.make_tensor_value_info("inlining_decision", T.INT64, ["batch", 1])],
        [helper.make_tensor("zero", T.INT64, [], [0])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def test_a_model_that_never_returns_fails_the_compile_and_the_shared_server_goes_idle_and_exits(
        tmp_path: Path, runtime_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("MLGO_FARM_POLICY_SHARED_IDLE_EXIT", "1")
    model = write_onnx_loop(tmp_path / "endless.onnx", bounded_by_feature=False)
    try:
        p = run([*launcher_command(str(model), timeout=2), "clang", "-Oz", "-c", CSRC / "sort.c",
                 "-o", tmp_path / "s.o"])
        # Two deadlines race here: the server stops the model run at 2 s and says why, the launcher's socket gives
        # up a grace later (policy_client.ANSWER_GRACE). On a quiet machine the server's reason arrives first; on a
        # loaded one the socket's may fire first. Either way the compile fails in one line naming the cause.
        assert p.returncode == 1, p.stderr
        [line] = p.stderr.strip().splitlines()
        assert re.fullmatch(r"mlgo-farm: error: (.*policy model endless\.onnx gave no advice within 2s.*"
                            r"|server \S+ failed: timed out.*)", line), line
        assert not (tmp_path / "s.o").exists()
        [pid] = server_pids(runtime_dir)
        # the run is stopped at the compile's deadline: the server is idle, so its idle exit comes
        wait_until(lambda: not alive(pid, runtime_dir), 30,
                   "the shared server to stop running the model that never returns and exit when idle")
    finally:
        stop_servers(runtime_dir)


def test_a_stopped_run_leaves_policy_serve_answering(tmp_path: Path) -> None:
    from policyhost.policy_client import RemotePolicy

    model = write_onnx_loop(tmp_path / "loop.onnx", bounded_by_feature=True)
    sock = tmp_path / "p.sock"
    # the limit is the compile's: [policy] timeout, here from the environment
    server = subprocess.Popen([sys.executable, "-m", "farm.cli", "policy", "serve", "--policy", str(model),
                               "--socket", str(sock)], env={**os.environ, "MLGO_FARM_POLICY_TIMEOUT": "1"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: sock.is_socket() or server.poll() is not None, 60, "policy serve to listen")
        assert sock.is_socket() and server.poll() is None
        spec = TensorSpec(FEATURE, "int64_t", (1,))
        header = Header([spec], TensorSpec("inlining_decision", "int64_t", (1,)))
        client = RemotePolicy(sock, timeout=30)
        client.bind(header)

        def decide(trips: int) -> int:
            return client.decide(Observation(0, None, {FEATURE: (trips,)}, None, header))[0]

        assert decide(3) == 1
        # years of iterations: the server's 1 s deadline ends the run (the client would wait 30 s, a margin no
        # load closes), and says so; how long it took is the machine's business, not the test's
        with pytest.raises(FarmError, match=r"gave no advice within 1s .*its run was stopped"):
            decide(10**18)
        assert decide(2) == 1, "the same connection is answered again after the stopped run"
        other = RemotePolicy(sock, timeout=30)
        other.bind(header)
        assert other.decide(Observation(0, None, {FEATURE: (1,)}, None, header)) == (1,)
        other.close()
        client.close()
        assert server.poll() is None
    finally:
        server.terminate()
        server.wait(30)
