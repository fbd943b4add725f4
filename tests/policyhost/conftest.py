"""Fixtures and model files for the policy-side tests (also imported by the comparison side)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from tests.conftest import CSRC

__all__ = [
    "CSRC",
    "VOCAB_DIM",
    "cmake_build",
    "ir2vec_vocab",
    "process_running",
    "publish_vocab",
    "write_onnx_first_masked_out",
    "write_onnx_nan_logit",
    "write_onnx_policy",
]
VOCAB_DIM = 8


@pytest.fixture(scope="session")
def ir2vec_vocab(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> Path:
    """A valid IR2Vec vocabulary (LLVM's three sections) over the entity names `llvm-ir2vec entities` prints.

    Vectors are deterministic (seeded); `llvm-ir2vec` lists opcodes, then types (`...Ty`), then
    operand kinds and predicates, which gives each name its section.
    """
    import numpy as np

    out = tmp_path_factory.mktemp("vocab")
    toolchain.run("llvm-ir2vec", ["entities", "-o", out / "entities.txt"])
    names = [ln.split("\t")[0] for ln in (out / "entities.txt").read_text().splitlines()[1:] if ln.strip()]
    rng = np.random.default_rng(7)
    sections: dict[str, dict[str, list[float]]] = {"Opcodes": {}, "Types": {}, "Arguments": {}}
    section = "Opcodes"
    for name in names:
        if name.endswith("Ty"):
            section = "Types"
        elif section == "Types":
            section = "Arguments"
        sections[section][name] = [round(float(v), 5) for v in rng.standard_normal(VOCAB_DIM)]
    assert all(sections.values()), "llvm-ir2vec entities changed its layout"
    path = out / "vocab.json"
    path.write_text(json.dumps(sections))
    return path


def write_onnx_policy(path: Path, feature: str, op: str, value: float, *, width: int = 1,
                      input_type: str = "int64") -> Path:
    """A real ONNX model file: advice = (feature[0] OP value) as int64, one input named `feature`.

    `op` is an ONNX comparison (`Less`, `Greater`, `Equal`, ...); `Mul` with value 0 gives a
    constant 0 ("never inline"). Built with onnx.helper and checked by onnx.checker.
    """
    import onnx
    from onnx import TensorProto, helper

    elem = {"int64": TensorProto.INT64, "float": TensorProto.FLOAT}[input_type]
    const = helper.make_tensor("k", elem, [], [value])
    nodes = [
        helper.make_node("Slice", [feature, "zero", "one", "one"], ["first"]),
        helper.make_node(op, ["first", "k"], ["cmp"]),
        helper.make_node("Cast", ["cmp"], ["inlining_decision"], to=TensorProto.INT64),
    ]
    inits = [const] + [helper.make_tensor(n, TensorProto.INT64, [1], [v]) for n, v in (("zero", 0), ("one", 1))]
    graph = helper.make_graph(
        nodes, "test_policy",
        [helper.make_tensor_value_info(feature, elem, ["batch", width])],
        [helper.make_tensor_value_info("inlining_decision", TensorProto.INT64, ["batch", 1])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def write_onnx_nan_logit(path: Path, feature: str = "callee_basic_block_count") -> Path:
    """A real ONNX inliner model whose float logit is NaN for every input (feature x NaN)."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Cast", [feature], ["f"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["f", "nan"], ["inlining_decision"])],
        "nan_policy",
        [helper.make_tensor_value_info(feature, TensorProto.INT64, ["batch", 1])],
        [helper.make_tensor_value_info("inlining_decision", TensorProto.FLOAT, ["batch", 1])],
        initializer=[helper.make_tensor("nan", TensorProto.FLOAT, [], [float("nan")])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def write_onnx_first_masked_out(path: Path, width: int = 33) -> Path:
    """A real ONNX eviction model with an integer output: the index of the first candidate whose `mask` is 0.

    `ArgMin` over the mask (int64, one row of `width`): a policy that ignores what the compiler allows.
    """
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("ArgMin", ["mask"], ["index_to_evict"], axis=1, keepdims=0, select_last_index=0)],
        "first_masked_out",
        [helper.make_tensor_value_info("mask", TensorProto.INT64, ["batch", width])],
        [helper.make_tensor_value_info("index_to_evict", TensorProto.INT64, ["batch"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def cmake_build(toolchain: Toolchain, tmp_path: Path, launcher: str) -> Path:
    """Configure and build `prog` from the test C sources with CMake, through `launcher`; the build dir."""
    import shutil
    import subprocess

    src, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(CSRC, src)
    names = " ".join(p.name for p in sorted(CSRC.glob("*.c")))
    (src / "CMakeLists.txt").write_text(
        f"cmake_minimum_required(VERSION 3.20)\nproject(bench C)\nadd_executable(prog {names})\n"
        "target_link_libraries(prog m)\n"
    )
    cfg = subprocess.run(["cmake", "-S", src, "-B", build, f"-DCMAKE_C_COMPILER={toolchain.path('clang')}",
                          "-DCMAKE_C_FLAGS=-Oz", f"-DCMAKE_C_COMPILER_LAUNCHER={launcher}", "-DCMAKE_BUILD_TYPE="],
                         capture_output=True, text=True, timeout=120)
    assert cfg.returncode == 0, cfg.stderr
    b = subprocess.run(["cmake", "--build", build, "-j2"], capture_output=True, text=True, timeout=120)
    assert b.returncode == 0, b.stdout + b.stderr
    return build


def process_running(pid: int, marker: str) -> bool:
    """Whether `pid` runs and has `marker` in its command line (not exited, not a zombie, not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return marker.encode() in cmdline and state != "Z"


def publish_vocab(data: bytes, dimension: int = VOCAB_DIM, when: float | None = None,
                  awaiting_policy: bool = False) -> str:
    """Publish `data` as an IR vocabulary of the configured store, signed by this farm; its version.

    A stand-in for a trained and validated vocabulary: the validation record is written as
    `vocab publish` would after asking LLVM (the policy tests use LLVM with it themselves). It
    becomes `latest` at once unless `awaiting_policy`: then, as the nightly chain publishes it, it
    waits for the size check of the policy retrained with it.
    """
    import dataclasses

    from farm.objectstore import store_from_settings
    from farm.signing import farm_key, sign
    from farm.vocabfile import sha256
    from vocabgen.gate import gate_from_settings
    from vocabgen.publish import publish

    # every key trained, as a real training records it: the promotion gate lets it become `latest`
    coverage = {s: {"trained": len(keys), "total": len(keys), "filler": []} for s, keys in json.loads(data).items()}
    manifest = sign(data, {"kind": "ir", "dimension": dimension, "sha256": sha256(data), "lineage": {},
                           "coverage": coverage}, farm_key())
    manifest["validation"] = {"ok": True, "sha256": sha256(data)}
    gate = dataclasses.replace(gate_from_settings(), policy_size=awaiting_policy)
    return publish(store_from_settings(), data, manifest, when=when, gate=gate)["version"]


def signed_policy_manifest(data: bytes, features: list[str], **extra) -> dict:
    """A policy manifest as policyhost/release.py's manifest_for writes it (signed by this farm's key) for
    a model's bytes: a stand-in for the validated warm start in tests about the store and its users."""
    import hashlib

    from farm.signing import farm_key, sign

    digest = hashlib.sha256(data).hexdigest()
    manifest = {"advisor": "inline", "sha256": digest, "features": features, "vocab_version": None,
                "llvm": {"llvm_version": "22.1.8"}, "metrics": {}, **extra}
    return {**sign(data, manifest, farm_key()), "validation": {"ok": True, "sha256": digest}}


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> dict[str, Path]:
    """Three 'packages' of generated C, each its own corpus: train, validation, evaluation."""
    from tests.policyhost.callgraph import write_sources
    from workers.corpus import from_sources

    tmp = tmp_path_factory.mktemp("packages")
    return {name: from_sources(write_sources(tmp / f"{name}-src", files=3, per_file=12, seed=seed),
                               tmp / name, toolchain, jobs=2, level="Oz").path
            for name, seed in (("alpha", 11), ("beta", 12), ("gamma", 13))}
