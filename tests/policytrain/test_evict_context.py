"""MIR2Vec function embeddings as an eviction policy's features (policytrain/evict_context.py), on real clang-22:
the sum read off the triplets, the embeddings of LLVM's own allocation, a scorer that reads them deciding through its
ONNX graph as its numpy forward (served by bench/evict_policies.py; policy-cc refuses it in one line), and a tiny
training with `--mir-vocab`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from farm.embeddings import placement
from farm.toolchain import Toolchain
from policyhost.launcher import run_compile
from policytrain.evict_context import FunctionEmbedder, function_sum
from policytrain.evict_model import CONTEXT, Scorer, teacher
from tests.policytrain.evictsrc import write_sources

ROOT = Path(__file__).resolve().parents[2]


def farm(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "farm.cli", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def random_vocab(toolchain: Toolchain, mir: Path, dim: int, seed: int) -> dict:
    """A vector for every MIR entity this LLVM lists, seeded."""
    from workers import mirtriplets

    rng = np.random.default_rng(seed)
    vocab: dict[str, dict] = {s: {} for s in ("Opcodes", "CommonOperands", "PhysicalRegisters", "VirtualRegisters")}
    for section, key in placement("mir", list(mirtriplets.vocabulary(toolchain, mir).names)):
        vocab[section][key] = rng.normal(size=dim).round(6).tolist()
    return vocab


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> dict[str, Path]:
    """Register-pressure C, its -O2 corpus, LLVM's own allocation of one file as MIR, a seeded 8-d vocabulary."""
    from workers.corpus import from_sources

    tmp = tmp_path_factory.mktemp("evict-context")
    src = write_sources(tmp / "src", files=2, seed=5)
    mir = tmp / "m0.mir"
    toolchain.run("clang", ["-O2", "-S", src / "m0.c", "-mllvm", "-stop-after=virtregrewriter", "-o", mir])
    vocab = tmp / "vocab.json"
    vocab.write_text(json.dumps(random_vocab(toolchain, mir, 8, seed=1)))
    other = write_sources(tmp / "other-src", files=2, seed=6)
    return {"src": src, "mir": mir, "vocab": vocab, "corpus": from_sources(src, tmp / "corpus", toolchain, jobs=2,
                                                                         level="O2").path,
            "other": from_sources(other, tmp / "other", toolchain, jobs=2, level="O2").path}


def test_a_functions_sum_counts_each_instruction_and_each_operand_once() -> None:
    table = np.eye(8)
    # two instructions: 1 (operands 5, 6) then 2 (operand 6); Next is relation 0, Arg0/Arg1 are 1/2
    got = function_sum([(1, 2, 0), (1, 5, 1), (1, 6, 2), (2, 6, 1)], table)
    assert got.tolist() == [0, 1, 1, 0, 0, 1, 2, 0]
    assert function_sum([(3, 5, 1)], table).tolist() == [0, 0, 0, 1, 0, 1, 0, 0]  # one instruction, no Next
    assert function_sum([], table).tolist() == [0] * 8


def test_each_function_gets_a_unit_vector_that_moves_only_with_the_entities_it_uses(work: dict[str, Path],
                                                                                  toolchain: Toolchain) -> None:
    from workers import mirtriplets

    vocab = json.loads(work["vocab"].read_text())
    got = FunctionEmbedder(vocab, "v").embed(toolchain, work["mir"])
    names = [ln.split(":", 1)[1].strip() for ln in work["mir"].read_text().splitlines() if ln.startswith("name:")]
    assert sorted(got) == sorted(names) and len(got) == 3
    assert all(abs(np.linalg.norm(v) - 1) < 1e-9 for v in got.values())
    assert len({tuple(v.round(6)) for v in got.values()}) == 3  # three functions, three mixes
    ids = mirtriplets.vocabulary(toolchain, work["mir"])
    keys = placement("mir", list(ids.names))
    triplets = mirtriplets.extract(ids, work["mir"].read_text()).functions[0].triplets
    used = {keys[h] for h, _, _ in triplets} | {keys[t] for _, t, _ in triplets}
    unused = next(k for k in keys if k[0] == "Opcodes" and k not in used)
    first = mirtriplets.extract(ids, work["mir"].read_text()).functions[0].name
    changed = json.loads(json.dumps(vocab))
    changed[unused[0]][unused[1]] = [9.0] * 8
    assert np.allclose(FunctionEmbedder(changed, "v").embed(toolchain, work["mir"])[first], got[first])
    section, key = sorted(used)[0]
    changed[section][key] = [9.0] * 8
    assert not np.allclose(FunctionEmbedder(changed, "v").embed(toolchain, work["mir"])[first], got[first])


def test_a_scorer_reading_embeddings_decides_through_onnx_as_its_numpy_forward(work: dict[str, Path],
                                                                              toolchain: Toolchain,
                                                                              tmp_path: Path) -> None:
    from bench.evict_policies import WithEmbeddings, launcher
    from policytrain.evict_onnx import to_onnx

    src = work["src"] / "m0.c"
    emb = FunctionEmbedder.load(work["vocab"]).embed(toolchain, work["mir"])
    logged = teacher(embeddings=emb, dim=8)
    out = run_compile(["clang", "-O2", "-c", str(src), "-o", str(tmp_path / "t.o")], logged, advisor="regalloc",
                      toolchain=toolchain, timeout=60)
    assert out.ok and out.decisions > 50 and logged.unknown == 0, out.error
    x, mask = np.stack(logged.xs), np.stack(logged.masks)
    assert x.shape[2] == 19 + 1 + 8 and logged.layout.names[-1] == CONTEXT  # 19 columns (not the mask), progress, 8
    scorer = Scorer.init(logged.layout, x[mask], (8,), seed=3)
    model = tmp_path / "ctx.onnx"
    model.write_bytes(to_onnx(scorer))

    class Twin(WithEmbeddings):
        apart = seen = 0

        def decide(self, obs) -> int:
            got = super().decide(obs)
            ctx = emb[obs.context]
            scores = scorer.scores(scorer.layout.matrix(obs.features, ctx)[None])[0]
            want = scorer.decide(obs.features, ctx)
            self.seen += 1
            self.apart += got != want and abs(scores[got] - scores[want]) > 1e-4 * (1 + abs(scores[want]))
            return got

    twin = Twin("twin", str(model), emb)
    out = run_compile(["clang", "-O2", "-c", str(src), "-o", str(tmp_path / "twin.o")], twin, advisor="regalloc",
                      toolchain=toolchain, timeout=60)
    assert out.ok and twin.seen == out.decisions and twin.apart == 0, out.error
    # the bench's launcher reads the same embeddings from its own run of LLVM's allocation: the same object
    argv = [*launcher(f"mir2vec:{model}:{work['vocab']}"), *toolchain.command("clang", ["-O2", "-c", str(src), "-o",
                                                                                       str(tmp_path / "l.o")])]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "l.o").read_bytes() == (tmp_path / "twin.o").read_bytes()
    # policy-cc cannot give the model what LLVM does not send: one line that says so
    res = farm(["policy-cc", "--advisor", "regalloc", "--policy", str(model), "--", "clang-22", "-O2", "-c",
                str(src), "-o", str(tmp_path / "cc.o")], timeout=120)
    assert res.returncode != 0
    assert res.stderr.strip().splitlines()[-1].endswith(
        "needs feature 'function_embedding', which the compiler does not send (a model trained with --mir-vocab reads "
        "its function's MIR2Vec embedding, which LLVM does not send: bench/evict_policies.py serves it, policy-cc "
        "cannot)")


def test_a_tiny_training_with_a_mir_vocabulary_reads_the_embeddings(work: dict[str, Path], tmp_path: Path) -> None:
    model = tmp_path / "evict.onnx"
    res = farm(["policy", "train-evict", "--recipe", "smoke", "--train", f"alpha={work['corpus']}", "--validation",
                f"beta={work['other']}", "-o", str(model), "--mir-vocab", str(work["vocab"])], timeout=600)
    assert res.returncode == 0, res.stderr
    record = json.loads(model.with_suffix(".json").read_text())
    assert record["mir_vocab"] == "vocab.json" and record["features"][-1] == CONTEXT
    assert record["failed_compiles"] == 0 and record["validation"] is not None
    import onnx

    inputs = {i.name: [d.dim_value or d.dim_param for d in i.type.tensor_type.shape.dim]
              for i in onnx.load(str(model)).graph.input}
    assert inputs[CONTEXT] == ["batch", 8]


def test_a_file_that_is_no_mir_vocabulary_is_one_line_and_exit_2(work: dict[str, Path], tmp_path: Path) -> None:
    ir = tmp_path / "ir.json"
    ir.write_text(json.dumps({"Opcodes": {"Add": [1.0]}, "Types": {"IntegerTy": [1.0]}, "Arguments": {}}))
    for bad, says in ((ir, "ir.json"), (tmp_path / "missing.json", "not a regular file")):
        res = farm(["policy", "train-evict", "--recipe", "smoke", "--train", f"alpha={work['corpus']}",
                    "--validation", f"beta={work['other']}", "-o", str(tmp_path / "e.onnx"), "--mir-vocab", str(bad)])
        assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and says in res.stderr, res.stderr


def test_a_module_without_functions_has_no_embeddings_and_is_no_failure(work: dict[str, Path], toolchain: Toolchain,
                                                                        tmp_path: Path) -> None:
    from workers import mirtriplets

    mirtriplets._vocab_cache.clear()  # the entity list is read once per process: read it from this module
    src = tmp_path / "data.c"
    src.write_text("const int table[4] = {1, 2, 3, 4};\n")
    mir = tmp_path / "data.mir"
    toolchain.run("clang", ["-O2", "-S", src, "-mllvm", "-stop-after=virtregrewriter", "-o", mir])
    assert FunctionEmbedder.load(work["vocab"]).embed(toolchain, mir) == {}
