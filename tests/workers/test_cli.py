"""The worker verbs as a builder step runs them: exit codes, summaries, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import DATA

CLI = [sys.executable, "-m", "farm.cli"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env={**os.environ, **(env or {})})


def test_corpus_then_triplets_then_publish(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for f in ("sort.c", "hash.c"):
        (src / f).write_text((DATA / "csrc" / f).read_text())
    (src / "broken.c").write_text((DATA / "bad" / "syntax_error.c").read_text())
    p = run("corpus", "sources", str(src), "-o", str(tmp_path / "corpus"))
    assert p.returncode == 0, p.stderr
    assert "2 modules (-O2), 1 skipped" in p.stdout and "skipped broken.c: clang exited with code 1" in p.stdout

    p = run("triplets", "ir", str(tmp_path / "corpus"), "-o", str(tmp_path / "ds"), "--opt-levels", "O0,O1")
    assert p.returncode == 0, p.stderr
    m = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    assert f"dataset {m['id']} in" in p.stdout
    assert f"{m['triplets']['raw']} triplets -> {m['triplets']['unique']} unique" in p.stdout
    assert "skipped broken.c (corpus)" in p.stdout

    store = tmp_path / "store"
    p = run("dataset", "publish", str(tmp_path / "ds"), env={"MLGO_FARM_STORE_URL": store.as_uri()})
    assert p.returncode == 0, p.stderr
    assert json.loads((store / "datasets" / "ir" / "latest.json").read_text())["id"] == m["id"]
    # the line names where it went, kind included: the Buildbot step links the dataset's page from it
    assert f"published dataset {m['id']} to {store.as_uri()}/datasets/ir/{m['id']}/\n" in p.stdout


def test_errors_are_one_line_and_non_zero(tmp_path: Path) -> None:
    cases = [
        (("triplets", "ir", str(tmp_path / "nope"), "-o", str(tmp_path / "o")), 2, "is not a corpus"),
        (("triplets", "ir", str(DATA), "-o", str(tmp_path / "o"), "--llvm-bin", str(tmp_path)), 3,
         "not found in"),
        (("corpus", "debian", "Not A Package!", "-o", str(tmp_path / "o")), 2, "invalid Debian package name"),
        (("llvm-build", "--src", "s", "--build", "b", "--rev=-bad", "--dry-run"), 2,
         "invalid git revision"),
    ]
    for args, code, text in cases:
        p = run(*args)
        assert p.returncode == code, (args, p.stderr)
        assert p.stderr.count("\n") == 1 and p.stderr.startswith("mlgo-farm: error: ") and text in p.stderr
        assert not (tmp_path / "o").exists()
