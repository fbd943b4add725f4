"""Policies: built-ins, real ONNX model files (valid and malformed), masks."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import InputError
from farm.toolchain import Toolchain
from policyhost.launcher import run_compile
from policyhost.protocol import Header, Observation, TensorSpec
from policyhost.published import load_policy
from policyhost.runnable import HeuristicPolicy, OnnxPolicy, masked_argmax
from tests.policyhost.conftest import CSRC, write_onnx_nan_logit, write_onnx_policy

REGALLOC_HEADER = Header(
    (TensorSpec("mask", "int64_t", (1, 4)), TensorSpec("progress", "float", (1,))),
    TensorSpec("index_to_evict", "int64_t", (1,)),
)


def test_unknown_names_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"unknown policy 'smart': use heuristic, never, always, spill"):
        load_policy("smart")
    with pytest.raises(InputError, match=r"policy model .*nothere.onnx not found"):
        load_policy(str(tmp_path / "nothere.onnx"))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is not a valid ONNX model"),
        (b"\x08\x07garbage that is not protobuf \xff\xfe", "is not a valid ONNX model"),
    ],
)
def test_malformed_model_files(tmp_path: Path, content: bytes, message: str) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(content)
    with pytest.raises(InputError, match=message) as e:
        load_policy(str(bad))
    assert "\n" not in str(e.value)


def test_truncated_model_file(tmp_path: Path) -> None:
    good = write_onnx_policy(tmp_path / "good.onnx", "callee_basic_block_count", "Less", 3)
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(InputError, match=r"cut\.onnx is not a valid ONNX model"):
        load_policy(str(cut))


def test_model_needing_a_feature_the_compiler_lacks(toolchain: Toolchain, tmp_path: Path) -> None:
    model = write_onnx_policy(tmp_path / "m.onnx", "no_such_feature", "Less", 1)
    out = run_compile(["clang", "-Oz", "-c", str(CSRC / "sort.c"), "-o", str(tmp_path / "s.o")], str(model),
                      toolchain=toolchain, timeout=30)
    assert not out.ok and out.host_error is not None
    assert "needs feature 'no_such_feature', which the compiler does not send" in out.error
    assert not (tmp_path / "s.o").exists()  # nothing half built


def test_embedding_model_without_vocabulary_says_so(toolchain: Toolchain, tmp_path: Path) -> None:
    model = write_onnx_policy(tmp_path / "e.onnx", "callee_embedding", "Greater", 0.0, width=8, input_type="float")
    out = run_compile(["clang", "-Oz", "-c", str(CSRC / "sort.c"), "-o", str(tmp_path / "s.o")], str(model),
                      toolchain=toolchain, timeout=30)
    assert not out.ok and "pass the IR2Vec vocabulary with --vocab" in out.error


def test_model_with_wrong_feature_shape(tmp_path: Path) -> None:
    model = write_onnx_policy(tmp_path / "w.onnx", "callee_basic_block_count", "Less", 3, width=5)
    pol = OnnxPolicy(model)
    header = Header((TensorSpec("callee_basic_block_count", "int64_t", (1,)),), TensorSpec("a", "int64_t", (1,)))
    with pytest.raises(InputError, match=r"input 'callee_basic_block_count' has shape \['batch', 5\]"):
        pol.bind(header)


def test_onnx_policy_decides_from_named_feature(tmp_path: Path) -> None:
    pol = OnnxPolicy(write_onnx_policy(tmp_path / "t.onnx", "callee_basic_block_count", "Less", 3))
    header = Header((TensorSpec("callee_basic_block_count", "int64_t", (1,)), TensorSpec("x", "int64_t", (1,))),
                    TensorSpec("inlining_decision", "int64_t", (1,)))
    pol.bind(header)
    decide = [pol.decide(Observation(0, None, {"callee_basic_block_count": (n,), "x": (9,)})) for n in (1, 2, 3, 7)]
    assert decide == [1, 1, 0, 0]


def test_model_answering_nan_is_refused_not_read_as_no(tmp_path: Path) -> None:
    pol = OnnxPolicy(write_onnx_nan_logit(tmp_path / "nan.onnx"))
    pol.bind(Header((TensorSpec("callee_basic_block_count", "int64_t", (1,)),),
                    TensorSpec("inlining_decision", "int64_t", (1,))))
    with pytest.raises(InputError, match=r"^policy model .*nan\.onnx gave non-finite advice \[nan\] on observation 4;"):
        pol.decide(Observation(4, None, {"callee_basic_block_count": (3,)}))


def test_heuristic_refuses_regalloc_and_spill_respects_mask() -> None:
    with pytest.raises(InputError, match="inliner-interactive-include-default"):
        HeuristicPolicy().bind(REGALLOC_HEADER)
    spill = load_policy("spill")
    spill.bind(REGALLOC_HEADER)
    assert spill.decide(Observation(0, "f", {"mask": (1, 0, 1, 1), "progress": (0.5,)})) == 3
    assert spill.decide(Observation(1, "f", {"mask": (0, 1, 0, 0), "progress": (0.5,)})) == 1
    with pytest.raises(InputError, match="answers inlining decisions"):
        load_policy("never").bind(REGALLOC_HEADER)


def test_built_in_policies_name_the_advisor_they_answer() -> None:
    from policyhost.runnable import check_advisor

    for name in ("heuristic", "never", "always"):
        check_advisor(name, "inline")
        with pytest.raises(InputError, match=f"^policy {name} answers the inline advisor, not regalloc "
                                             r"\(built-in regalloc policies: spill; or an \.onnx model\)$"):
            check_advisor(name, "regalloc")
    check_advisor("spill", "regalloc")
    with pytest.raises(InputError, match=r"^policy spill answers the regalloc advisor, not inline"):
        check_advisor("spill", "inline")
    check_advisor("model.onnx", "regalloc")  # a model is checked against the compiler's header


def test_policy_server_socket_that_cannot_be_made_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from farm.cli import main

    assert main(["policy", "serve", "--policy", "heuristic", "--socket", "/nonexistent/dir/p.sock"]) == 2
    err = capsys.readouterr().err
    assert err == "mlgo-farm: error: cannot listen on /nonexistent/dir/p.sock: No such file or directory\n"
    kept = tmp_path / "notes.txt"
    kept.write_text("mine")
    assert main(["policy", "serve", "--policy", "heuristic", "--socket", str(kept)]) == 2
    assert capsys.readouterr().err == f"mlgo-farm: error: cannot listen on {kept}: it exists and is not a socket\n"
    assert kept.read_text() == "mine"


def test_masked_argmax() -> None:
    assert masked_argmax([0.1, 5.0, 0.3], [1, 0, 1]) == 2
    assert masked_argmax([0.1, 5.0, 0.3], None) == 1
    with pytest.raises(InputError, match="excludes every candidate"):
        masked_argmax([1.0, 2.0], [0, 0])


def test_policy_server_answers_like_the_model_it_serves(toolchain: Toolchain, tmp_path: Path) -> None:
    from policyhost.policy_server import PolicyServer, RemotePolicy

    model = write_onnx_policy(tmp_path / "t.onnx", "callee_basic_block_count", "Less", 3)
    server = PolicyServer(tmp_path / "p.sock", load_policy(str(model)))
    server.start()
    try:
        objs = {}
        for tag, pol in (("direct", str(model)), ("server", RemotePolicy(tmp_path / "p.sock"))):
            obj = tmp_path / f"{tag}.o"
            out = run_compile(["clang", "-Oz", "-c", str(CSRC / "hash.c"), "-o", str(obj)], pol,
                              toolchain=toolchain, timeout=30)
            assert out.ok and out.decisions > 0, out.error
            objs[tag] = obj.read_bytes()
        assert objs["direct"] == objs["server"]
        with pytest.raises(InputError, match="already listens"):
            PolicyServer(tmp_path / "p.sock", load_policy("heuristic"))
        # a model the compiler cannot feed fails that compile with the server's reason, not a hang
        remote_bad = PolicyServer(tmp_path / "bad.sock", load_policy(
            str(write_onnx_policy(tmp_path / "b.onnx", "no_such_feature", "Less", 1))))
        remote_bad.start()
        try:
            out = run_compile(["clang", "-Oz", "-c", str(CSRC / "hash.c"), "-o", str(tmp_path / "b.o")],
                              RemotePolicy(tmp_path / "bad.sock"), toolchain=toolchain, timeout=30)
            assert not out.ok and "needs feature 'no_such_feature'" in out.error
        finally:
            remote_bad.stop()
    finally:
        server.stop()
    assert not (tmp_path / "p.sock").exists()
    with pytest.raises(InputError, match="is not reachable"):
        RemotePolicy(tmp_path / "p.sock")


def write_onnx_scores(path: Path, feature: str, width: int, input_width: int = 1) -> Path:
    """A real ONNX model giving `width` float scores per observation (the feature's values, broadcast)."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Cast", [feature], ["f"], to=TensorProto.FLOAT),
         helper.make_node("Expand", ["f", "shape"], ["inlining_decision"])],
        "scores",
        [helper.make_tensor_value_info(feature, TensorProto.INT64, ["batch", input_width])],
        [helper.make_tensor_value_info("inlining_decision", TensorProto.FLOAT, ["batch", width])],
        initializer=[helper.make_tensor("shape", TensorProto.INT64, [2], [1, width])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def test_an_inliner_model_giving_five_scores_is_refused_at_bind(tmp_path: Path) -> None:
    header = Header((TensorSpec("callee_basic_block_count", "int64_t", (1,)),),
                    TensorSpec("inlining_decision", "int64_t", (1,)))
    five = OnnxPolicy(write_onnx_scores(tmp_path / "five.onnx", "callee_basic_block_count", 5))
    with pytest.raises(InputError, match=r"output 'inlining_decision' has shape \['batch', 5\], 5 values per "
                                         r"observation; the advisor takes one logit or two scores"):
        five.bind(header)
    two = OnnxPolicy(write_onnx_scores(tmp_path / "two.onnx", "callee_basic_block_count", 2))
    two.bind(header)  # no, yes: the higher wins (equal scores: the first, no)
    assert two.decide(Observation(0, None, {"callee_basic_block_count": (3,)})) == 0
    evict = OnnxPolicy(write_onnx_scores(tmp_path / "evict.onnx", "mask", 4, input_width=4))
    evict.bind(REGALLOC_HEADER)  # one score per candidate of the mask
    with pytest.raises(InputError, match="the advisor takes one score for each of the 4 candidates"):
        OnnxPolicy(write_onnx_scores(tmp_path / "e5.onnx", "progress", 5)).bind(REGALLOC_HEADER)


@pytest.mark.parametrize(("make", "code", "says"), [
    (lambda d: write_onnx_policy(d / "good.onnx", "callee_basic_block_count", "Less", 3), 0, None),
    (lambda d: write_onnx_scores(d / "five.onnx", "callee_basic_block_count", 5), 5,
     "5 values per observation; the advisor takes one logit or two scores (no, yes) per inlining decision"),
    (lambda d: write_onnx_policy(d / "alien.onnx", "no_such_feature", "Less", 3), 5,
     "needs feature 'no_such_feature', which this LLVM does not send"),
    (lambda d: write_onnx_policy(d / "wide.onnx", "callee_basic_block_count", "Less", 3, width=5), 5,
     "input 'callee_basic_block_count' has shape ['batch', 5], the compiler sends 1 values"),
])
def test_policy_inspect_exits_0_only_for_a_model_this_llvm_can_use(tmp_path: Path, make, code: int,
                                                                   says: str | None) -> None:
    import json
    import subprocess
    import sys

    model = make(tmp_path)
    p = subprocess.run([sys.executable, "-m", "farm.cli", "policy", "inspect", str(model)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == code, p.stderr
    if code == 0:
        assert json.loads(p.stdout)["checked_against_llvm"] is True
    else:
        assert p.stdout == "" and p.stderr.count("\n") == 1 and says in p.stderr, p.stderr
