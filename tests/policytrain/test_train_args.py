"""`policy train` (and `policy heldout`) check every argument before anything compiles (issue 35, item 8): each
mistake is one line and exit 2 within seconds, with nothing fetched, compiled or written. They were accepted
(one corpus under two names in two splits trained), or refused late (`-o` naming a directory after the whole
training, `--train x=/etc` after 34 s of preparing the other splits). Real `mlgo-farm` processes on real -Oz
corpora."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from farm.toolchain import Toolchain

MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> dict[str, Path]:
    """Three one-module -Oz corpora, and a copy of the first in another directory."""
    from workers.corpus import from_sources

    tmp = tmp_path_factory.mktemp("corpora")
    out = {}
    for name, body in (("one", "int f(int x) { return x * 3; }\n"), ("two", "int g(int y) { return y - 1; }\n"),
                       ("three", "int h(int z) { return z << 2; }\n")):
        (tmp / f"{name}-src").mkdir()
        (tmp / f"{name}-src" / f"{name}.c").write_text(body)
        out[name] = from_sources(tmp / f"{name}-src", tmp / name, toolchain, jobs=1, level="Oz").path
    out["copy"] = Path(shutil.copytree(out["one"], tmp / "copy-of-one"))
    # the first's modules and one more (the third's): a superset, whose whole-corpus digest is not the first's
    (tmp / "extra-src").mkdir()
    (tmp / "extra-src" / "extra.c").write_text("int k(int w) { return w ^ 5; }\n")
    extra = from_sources(tmp / "extra-src", tmp / "extra", toolchain, jobs=1, level="Oz").path
    out["superset"] = Path(shutil.copytree(out["one"], tmp / "superset"))
    shutil.copy(extra / "extra.c.bc", out["superset"] / "extra.c.bc")
    desc = json.loads((out["superset"] / "corpus_description.json").read_text())
    desc["modules"].append("extra.c")
    (out["superset"] / "corpus_description.json").write_text(json.dumps(desc))
    return out


def refused(args: list[str], tmp_path: Path) -> str:
    """The command's one error line, after checking it exited 2 quickly and left nothing behind."""
    res = subprocess.run([MLGO_FARM, *args], capture_output=True, text=True, timeout=60)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and res.stdout == "" and len(lines) == 1, res
    var = tmp_path / "var"  # tests/conftest.py: this test's var directory
    assert not (var / "debsrc").exists() and not (var / "policy").exists(), sorted(var.rglob("*"))
    assert not list(tmp_path.glob("out*")), "nothing is written"
    return lines[0].removeprefix("mlgo-farm: error: ")


def test_one_corpus_under_two_names_is_refused_by_directory_and_by_digest(corpora: dict[str, Path],
                                                                         tmp_path: Path) -> None:
    """Names alone let one corpus train as `a` and validate as `b` (its numbers then say how well the policy fits,
    not how it does on new code): directories are compared resolved, and a copy by its corpus digest."""
    from workers.corpus import load

    out = str(tmp_path / "out.onnx")
    same = tmp_path / "same"
    same.symlink_to(corpora["one"])
    line = refused(["policy", "train", "--train", f"a={corpora['one']}", "--validation", f"b={same}/.",
                    "--evaluation", f"c={corpora['two']}", "-o", out], tmp_path)
    assert line == (f"package b (validation) is the corpus of package a (train): the same directory, "
                    f"{corpora['one'].resolve()}; a corpus is one package in one split"), line
    digest = load(corpora["one"]).digest[:12]
    line = refused(["policy", "train", "--train", f"a={corpora['one']}", "--validation", f"b={corpora['two']}",
                    "--evaluation", f"c={corpora['copy']}", "-o", out], tmp_path)
    assert line == (f"package c (evaluation) is the corpus of package a (train): the same modules (corpus digest "
                    f"{digest}); a corpus is one package in one split"), line


def test_a_corpus_holding_another_splits_modules_and_more_is_refused(corpora: dict[str, Path],
                                                                      tmp_path: Path) -> None:
    """Validation = the training modules plus one file was accepted: corpora were compared by whole-corpus digest,
    which one more module changes. Now module by module, by the digest of each module's bitcode."""
    import hashlib

    sha = hashlib.sha256((corpora["one"] / "one.c.bc").read_bytes()).hexdigest()
    out = str(tmp_path / "out.onnx")
    line = refused(["policy", "train", "--train", f"a={corpora['one']}", "--validation", f"b={corpora['superset']}",
                    "--evaluation", f"c={corpora['two']}", "-o", out], tmp_path)
    assert line == (f"package b (validation) holds a module of package a (train): module one.c is the same bitcode "
                    f"(sha256 {sha[:12]}); a corpus is one package in one split"), line
    # and the other way round: training on the superset, evaluating on the subset
    line = refused(["policy", "train", "--train", f"a={corpora['superset']}", "--validation", f"b={corpora['two']}",
                    "--evaluation", f"c={corpora['one']}", "-o", out], tmp_path)
    assert line.startswith("package c (evaluation) holds a module of package a (train): module one.c "), line


def test_an_output_that_is_a_directory_is_refused_before_training(corpora: dict[str, Path], tmp_path: Path) -> None:
    taken = tmp_path / "model.onnx"
    taken.mkdir()
    line = refused(["policy", "train", "--recipe", "smoke", "--train", f"a={corpora['one']}", "--validation",
                    f"b={corpora['two']}", "--evaluation", f"c={corpora['three']}", "-o", str(taken)], tmp_path)
    assert line == (f"output {taken} is a directory: -o names the model's file (MODEL.onnx; MODEL.json, "
                    "MODEL.npz and MODEL.weights are written beside it)"), line
    assert list(taken.iterdir()) == []


def test_a_fifo_beside_the_model_is_refused_before_training(corpora: dict[str, Path], tmp_path: Path) -> None:
    """The model and its native weights are a pair: a FIFO at MODEL.weights was found when the files were written,
    after the training, with MODEL.onnx already there (a model beside no weights of its own)."""
    import os

    out = tmp_path / "model.onnx"
    os.mkfifo(out.with_suffix(".weights"))
    line = refused(["policy", "train", "--recipe", "smoke", "--train", f"a={corpora['one']}", "--validation",
                    f"b={corpora['two']}", "--evaluation", f"c={corpora['three']}", "-o", str(out)], tmp_path)
    assert line == (f"output {out.with_suffix('.weights')} is a FIFO: the files model.onnx, model.json, model.npz, "
                    "model.weights are written together, each a regular file"), line
    assert not out.exists()


def test_an_empty_evaluation_list_is_not_the_declared_split(corpora: dict[str, Path], tmp_path: Path) -> None:
    """`--evaluation ""` names nothing: one line, for `policy train` (whose unseen-evaluation experiment is
    `--no-evaluation`) and for `policy heldout` (a table of no packages passed with a geomean of nan)."""
    line = refused(["policy", "train", "--train", f"a={corpora['one']}", "--validation", f"b={corpora['two']}",
                    "--evaluation", "", "-o", str(tmp_path / "out.onnx")], tmp_path)
    assert line == ("--evaluation '' names no packages: name them, leave it out for the declared split, or "
                    "--no-evaluation to train without a held-out table"), line
    line = refused(["policy", "heldout", str(tmp_path / "m.onnx"), "--evaluation", " , "], tmp_path)
    assert line == "--evaluation ' , ' names no packages: name them, or leave it out for the evaluation split", line


def test_a_directory_that_is_no_corpus_is_found_before_the_debian_packages_are_prepared(
        corpora: dict[str, Path], tmp_path: Path) -> None:
    """`--train x=/etc` beside the declared validation and evaluation splits (Debian packages, whose sources the
    overlap check fetches and whose corpora are compiled): refused before any of that, at once."""
    line = refused(["policy", "train", "--train", "x=/etc", "-o", str(tmp_path / "out.onnx")], tmp_path)
    assert line == "package x: /etc is not a corpus directory (no corpus_description.json)", line
    line = refused(["policy", "train", "--train", f"a={corpora['one']},x=/etc", "-o", str(tmp_path / "out.onnx")],
                   tmp_path)
    assert line == "package x: /etc is not a corpus directory (no corpus_description.json)", line
