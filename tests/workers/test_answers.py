"""The worker verbs a builder step runs answer `--json` with one object on stdout, and the registry's declarations
(master/outputs.py) read from it the properties, summaries and links the real products call for."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from master.registry import REGISTRY, Step, by_name
from master.stepspec import StepOutput
from tests.conftest import CSRC, DATA
from workers import corpus, dataset

CLI = [sys.executable, "-m", "farm.cli"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=300)


def answer(*args: str, env: dict[str, str] | None = None) -> tuple[dict[str, Any], subprocess.CompletedProcess]:
    """Run a verb with --json: its stdout must be exactly one JSON object, on one line."""
    p = run(*args, "--json", env=env)
    lines = p.stdout.splitlines()
    assert len(lines) == 1, (args, p.stdout, p.stderr)
    got = json.loads(lines[0])
    assert isinstance(got, dict) and got["exit_code"] == p.returncode, got
    return got, p


def read(builder: str, step: str, stdout: str) -> StepOutput:
    """What the master makes of a step's stdout, with that registry step's declarations."""
    spec: Step = next(s for s in by_name(REGISTRY)[builder].steps if s.name == step)
    assert spec.answers  # so the master runs it with --json
    return StepOutput(spec).feed(stdout)


def test_worker_step_verbs_answer_in_json_what_the_master_reads(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for f in ("sort.c", "hash.c"):
        shutil.copy(CSRC / f, src / f)
    shutil.copy(DATA / "bad" / "syntax_error.c", src / "broken.c")

    got, p = answer("corpus", "sources", str(src), "-o", str(tmp_path / "corpus"))
    assert p.returncode == 0, p.stderr
    assert (got["modules"], got["skipped"]) == (2, 1) and got["skipped_modules"][0]["module"] == "broken.c"
    assert got["digest"] == corpus.load(tmp_path / "corpus").digest  # all 64 digits, the sentence prints 16
    assert read("triplets-ir", "corpus", p.stdout).summary() == "2 modules, 1 skipped"

    got, p = answer("triplets", "ir", str(tmp_path / "corpus"), "-o", str(tmp_path / "ds"), "--opt-levels", "O0")
    assert p.returncode == 0, p.stderr
    m = dataset.read_manifest(tmp_path / "ds")
    assert (got["dataset"], got["kind"], got["unique"], got["raw"]) == (
        m["id"], "ir", m["triplets"]["unique"], m["triplets"]["raw"])
    assert read("triplets-ir", "triplets-ir", p.stdout).summary() == \
        f"{m['triplets']['unique']:,} unique triplets ({len(m['skipped'])} skipped)"

    store = tmp_path / "store"
    env = {"MLGO_FARM_STORE_URL": store.as_uri()}
    got, p = answer("dataset", "publish", str(tmp_path / "ds"), env=env)
    assert p.returncode == 0, p.stderr
    assert got == {"dataset": m["id"], "kind": "ir", "url": f"{store.as_uri()}/datasets/ir/{m['id']}/",
                   "revision": None, "exit_code": 0}  # a directory of sources has no revision
    said = read("triplets-ir", "publish", p.stdout)
    assert said.properties(0) == {"dataset": m["id"]} and said.summary() == f"published {m['id']}"
    assert said.links() == [("dataset", f"datasets/ir/{m['id']}/")]
    assert json.loads((store / "datasets" / "ir" / "latest.json").read_text())["id"] == m["id"]

    # a fanned-out run: each shard's part, uploaded, merged into the same dataset, the parts dropped
    parts = []
    for i in (1, 2):
        got, p = answer("triplets", "ir", str(tmp_path / "corpus"), "-o", str(tmp_path / f"part{i}"),
                        "--opt-levels", "O0", "--shard", f"{i}/2")
        assert p.returncode == 0 and got["shard"] == f"{i}/2", p.stderr
        assert read("triplets-ir", "triplets-ir", p.stdout).summary() == \
            f"shard {i}/2: {got['modules']:,} modules, {got['raw']:,} triplets"
        parts.append(got["modules"])
        got, p = answer("dataset", "put-shard", str(tmp_path / f"part{i}"), "--run", "r1", env=env)
        assert p.returncode == 0 and (got["shard"], got["run"]) == (f"{i}/2", "r1"), p.stderr
    assert sum(parts) == 2
    got, p = answer("dataset", "merge", "--run", "r1", "--shards", "2", "-o", str(tmp_path / "merged"), env=env)
    assert p.returncode == 0 and got["dataset"] == m["id"], p.stderr  # the bytes one unsharded run makes
    got, p = answer("dataset", "drop-shards", "--run", "r1", env=env)
    assert p.returncode == 0 and got["run"] == "r1" and got["deleted"] > 0, p.stderr


def test_publish_answers_the_debian_version_of_the_corpus_as_the_builds_revision(tmp_path: Path) -> None:
    # an unpacked source package, as `apt-get source` leaves it (a tree already there is reused: no network)
    tree = tmp_path / "debsrc" / "mlgo-demo-1.2"
    (tree / "debian").mkdir(parents=True)
    (tree / "debian" / "changelog").write_text("mlgo-demo (1.2-3+deb12u1) bookworm; urgency=medium\n")
    shutil.copy(CSRC / "sort.c", tree / "sort.c")
    got, p = answer("corpus", "debian", "mlgo-demo", "--debsrc", str(tmp_path / "debsrc"), "-o",
                    str(tmp_path / "corpus"), "-j", "1")
    assert p.returncode == 0 and got["revision"] == "1.2-3+deb12u1", p.stderr
    got, p = answer("triplets", "ir", str(tmp_path / "corpus"), "-o", str(tmp_path / "ds"), "--opt-levels", "O0")
    assert p.returncode == 0, p.stderr
    assert dataset.read_manifest(tmp_path / "ds")["corpus"]["lineage"]["version"] == "1.2-3+deb12u1"

    got, p = answer("dataset", "publish", str(tmp_path / "ds"), env={"MLGO_FARM_STORE_URL": (tmp_path / "s").as_uri()})
    assert p.returncode == 0 and got["revision"] == "1.2-3+deb12u1", p.stderr
    said = read("triplets-ir", "publish", p.stdout)  # the registry's publish step: Buildbot's got_revision
    assert said.properties(0) == {"dataset": got["dataset"], "got_revision": "1.2-3+deb12u1"}


def test_failures_under_json_are_one_object_with_the_same_exit_code(tmp_path: Path) -> None:
    for args, code, kind, text in (
        (("triplets", "ir", str(tmp_path / "nope"), "-o", str(tmp_path / "o")), 2, "input", "is not a corpus"),
        (("triplets", "ir", str(DATA), "-o", str(tmp_path / "o"), "--llvm-bin", str(tmp_path)), 3, "tool",
         "not found in"),
        (("triplets", "ir"), 2, "input", "the following arguments are required"),  # a usage error
    ):
        got, p = answer(*args)
        assert p.returncode == code == run(*args).returncode, (args, p.stderr)
        assert got["error_kind"] == kind and text in got["error"], got
        assert set(got) == {"error", "error_kind", "exit_code"}
        # people still get their one line on stderr
        assert p.stderr.count("\n") == 1 and text in p.stderr, p.stderr
        assert not (tmp_path / "o").exists()
    # the human output is untouched by the option's existence
    p = run("triplets", "ir", str(tmp_path / "nope"), "-o", str(tmp_path / "o"))
    assert p.stdout == "" and p.stderr.startswith("mlgo-farm: error: ")
