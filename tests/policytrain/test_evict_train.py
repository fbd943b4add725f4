"""The regalloc eviction trainer end to end on real clang-22 (policytrain/evict_train.py, evict_model.py,
evict_onnx.py, evict_data.py): the problem record, the scorer's ONNX graph deciding as its numpy forward through
`policy-cc`, a tiny training through `mlgo-farm policy train-evict` whose model the host serves, a failing compile
counted and skipped, and every bad argument one line and exit 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from farm.progress import LINE
from farm.toolchain import Toolchain
from policyhost.launcher import run_compile
from policyhost.runnable import OnnxPolicy
from policytrain.evict_model import Scorer, teacher
from policytrain.problem import EVICT_SPEED, INLINE_SIZE, saving
from policytrain.units import Unit
from tests.policytrain.evictsrc import write_sources

ROOT = Path(__file__).resolve().parents[2]


def farm(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    """This tree's `mlgo-farm` (the venv's entry point may be another checkout's)."""
    return subprocess.run([sys.executable, "-m", "farm.cli", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> dict[str, Path]:
    """Two -O2 packages of register-pressure C (two modules each), their sources, and an -Oz corpus."""
    from workers.corpus import from_sources

    tmp = tmp_path_factory.mktemp("evict")
    out = {}
    for name, seed, level in (("alpha", 1, "O2"), ("beta", 2, "O2"), ("small", 3, "Oz")):
        src = write_sources(tmp / f"{name}-src", files=2 if level == "O2" else 1, seed=seed)
        out[f"{name}-src"] = src
        out[name] = from_sources(src, tmp / name, toolchain, jobs=2, level=level).path
    return out


def test_the_eviction_problem_is_a_record_beside_the_inliners() -> None:
    assert (EVICT_SPEED.advisor, EVICT_SPEED.level, EVICT_SPEED.advice) == ("regalloc", "O2", "index_to_evict")
    assert EVICT_SPEED.default_feature is None and INLINE_SIZE.default_feature == "inlining_default"
    assert EVICT_SPEED.reward(90.0, 100.0) == saving(90.0, 100.0) > 0 > EVICT_SPEED.reward(110.0, 100.0)
    assert EVICT_SPEED.reward(110.0, 100.0, 2.0) == pytest.approx(2 * EVICT_SPEED.reward(110.0, 100.0))
    assert INLINE_SIZE.reward(900, 1000, 3.0) == pytest.approx(0.1, abs=1e-4)  # a saving is paid once
    assert INLINE_SIZE.reward(1100, 1000, 3.0) == pytest.approx(-0.3, abs=1e-4)  # a growth growth_weight times


class Twin:
    """Answers with the ONNX model, as `policy-cc` does, and asks the numpy scorer the same observation."""

    def __init__(self, model: Path, scorer: Scorer) -> None:
        self.onnx, self.scorer, self.name = OnnxPolicy(model), scorer, "twin"
        self.seen = self.apart = 0

    def bind(self, header) -> None:
        self.onnx.bind(header)

    def decide(self, obs) -> int:
        got = self.onnx.decide(obs)
        scores = self.scorer.scores(self.scorer.layout.matrix(obs.features)[None])[0]
        want = self.scorer.decide(obs.features)
        self.seen += 1
        # float32 in the graph, float64 in numpy: only a near tie may go either way
        self.apart += got != want and abs(scores[got] - scores[want]) > 1e-4 * (1 + abs(scores[want]))
        return got


def test_an_exported_scorer_answers_policy_cc_as_its_numpy_forward(corpora: dict[str, Path], toolchain: Toolchain,
                                                                  tmp_path: Path) -> None:
    from policytrain.evict_onnx import to_onnx

    src = corpora["alpha-src"] / "m0.c"
    logged = teacher()
    out = run_compile(["clang", "-O2", "-c", str(src), "-o", str(tmp_path / "t.o")], logged, advisor="regalloc",
                      toolchain=toolchain, timeout=60)
    assert out.ok and out.decisions > 50, out.error
    x, mask = np.stack(logged.xs), np.stack(logged.masks)
    scorer = Scorer.init(logged.layout, x[mask], (8,), seed=3)  # untrained: decides unlike LLVM
    model = tmp_path / "model.onnx"
    model.write_bytes(to_onnx(scorer))
    res = farm(["policy-cc", "--advisor", "regalloc", "--policy", str(model), "--", "clang-22", "-O2", "-c", str(src),
                "-o", str(tmp_path / "cc.o")], timeout=120)
    assert res.returncode == 0 and (tmp_path / "cc.o").stat().st_size > 0, res.stderr
    twin = Twin(model, scorer)
    out = run_compile(["clang", "-O2", "-c", str(src), "-o", str(tmp_path / "twin.o")], twin, advisor="regalloc",
                      toolchain=toolchain, timeout=60)
    assert out.ok and twin.seen == out.decisions > 50, out.error
    assert twin.apart == 0
    assert (tmp_path / "twin.o").read_bytes() == (tmp_path / "cc.o").read_bytes()


def test_a_tiny_training_writes_a_model_the_host_serves(corpora: dict[str, Path], toolchain: Toolchain,
                                                        tmp_path: Path) -> None:
    model = tmp_path / "out" / "evict.onnx"
    res = farm(["policy", "train-evict", "--recipe", "smoke", "--train", f"alpha={corpora['alpha']}",
                "--validation", f"beta={corpora['beta']}", "-o", str(model), "--jobs", "2"], timeout=600)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "train on 2 modules of alpha; validate on beta"
    assert lines[1].startswith("bc: ") and "decisions of the default rule" in lines[1]
    assert [ln.split(":")[0] for ln in lines[2:4]] == ["es step 1/2", "es step 2/2"]
    assert lines[-1].startswith(f"wrote {model}: validation ")
    progress = [m for ln in res.stderr.splitlines() if (m := LINE.match(ln))]
    assert progress and progress[-1]["stage"] == "policy train-evict: training (bc and ES steps)"
    assert (progress[-1]["done"], progress[-1]["total"]) == ("3", "3")
    record = json.loads(model.with_suffix(".json").read_text())
    assert record["kind"] == "regalloc-es" and record["failed_compiles"] == 0
    assert record["chosen"] in ("bc", "es step 1", "es step 2") and len(record["history"]) == 3
    assert record["modules"] == {"train": 2, "validation": 2} and "progress" in record["features"]
    src = corpora["beta-src"] / "m1.c"
    out = run_compile(["clang", "-O2", "-c", str(src), "-o", str(tmp_path / "m.o")], str(model), advisor="regalloc",
                      toolchain=toolchain, timeout=60)
    assert out.ok and out.decisions > 50, out.error


def test_a_module_llvm_cannot_compile_is_counted_and_skipped(corpora: dict[str, Path], toolchain: Toolchain,
                                                            tmp_path: Path) -> None:
    from policytrain import evict_data
    from policytrain.corpora import Package
    from policytrain.evict_train import RECIPES, EvictTrainer

    bad = tmp_path / "bad.bc"
    bad.write_bytes(b"BC\xc0\xde not bitcode")
    good = evict_data.units("alpha", corpora["alpha"])
    lines: list[str] = []
    t = EvictTrainer(toolchain, (Package("alpha", (*good, Unit("broken", bad, ("-O2",)))),),
                     (Package("beta", tuple(evict_data.units("beta", corpora["beta"]))),), RECIPES["smoke"], jobs=2,
                     progress=lines.append)
    scorer, info = t.run()
    assert info["failed_compiles"] >= 2  # its cloning compile and its heuristic build, at least
    assert any(ln.startswith("skipped broken: ") for ln in lines) and info["validation"] is not None
    assert len(info["history"]) == 3 and scorer.layout.width == 33


@pytest.mark.parametrize(("args", "line"), [
    (["--train", "no-such-package-xyz", "--validation", "{beta}"],
     "package no-such-package-xyz: apt knows no Debian source package of that name (apt-cache showsrc)"),
    (["--train", "{alpha}", "--validation", "{beta}", "-o", "{tmp}/evict.onx"],
     "output {tmp}/evict.onx must end in .onnx"),
    (["--train", "{small}", "--validation", "{beta}"], None),
    (["--train", "{alpha}", "--validation", "{beta}", "--recipe", "huge"],
     "unknown eviction recipe 'huge': use one of small, smoke"),
    (["--train", "{alpha}", "--validation", "alpha"], "package alpha is in both the train and the validation split"),
], ids=["unknown-package", "not-onnx", "oz-corpus", "unknown-recipe", "both-splits"])
def test_bad_input_is_one_line_and_exit_2(corpora: dict[str, Path], tmp_path: Path, args: list[str],
                                          line: str | None) -> None:
    if "no-such-package-xyz" in args and shutil.which("apt-cache") is None:
        pytest.skip("no apt-cache: an unknown Debian name is found when its source is fetched")
    given = {"alpha": f"alpha={corpora['alpha']}", "beta": f"beta={corpora['beta']}",
             "small": f"small={corpora['small']}", "tmp": str(tmp_path)}
    argv = [a.format(**given) for a in args]
    if "-o" not in argv:
        argv += ["-o", str(tmp_path / "evict.onnx")]
    res = farm(["policy", "train-evict", *argv], timeout=60)
    err = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(err) == 1 and res.stdout == "", res
    if line is None:
        assert "needs -O2 bitcode" in err[0] and "--level O2" in err[0], err[0]
    else:
        assert err[0] == "mlgo-farm: error: " + line.format(tmp=tmp_path)
    assert not list(tmp_path.glob("evict.*"))
