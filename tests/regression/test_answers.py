"""`regress run --json`: one object on stdout with the fields the regression builders' step reads
(master/outputs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.cli import main
from farm.config import load_settings
from master.registry import REGISTRY, by_name
from master.stepspec import StepOutput
from regression import compare, report
from tests.conftest import CSRC

BUILDER = "regression-inliner-size"


def test_regress_run_answers_in_json_what_its_step_reads(compare_corpus: Path, capsys: pytest.CaptureFixture) -> None:
    code = main(["regress", "run", "--corpus", str(compare_corpus), "--policy", "never", "--builder", BUILDER,
                 "--run-id", "j1", "--opt=-Oz", "--fail-on-regression", "--no-publish", "--bench-dir", str(CSRC),
                 "--bench-arg", "3000", "--repeats", "0", "--json"])
    captured = capsys.readouterr()
    (line,) = captured.out.splitlines()  # the report's text and the other lines went to stderr
    got = json.loads(line)
    history = compare.open_history()
    run = history.run("j1", BUILDER)
    assert code == got["exit_code"] == (10 if run.verdict == "regression" else 0)
    assert (got["run_id"], got["builder"], got["verdict"]) == ("j1", BUILDER, run.verdict)
    assert f"mlgo-farm regression run j1 on builder {BUILDER}" in captured.err
    headline = report.headline(report.table_rows(history.verdicts(run)), run.verdict, history.skipped(run))
    (step,) = by_name(REGISTRY)[BUILDER].steps
    said = StepOutput(step).feed(captured.out)
    assert said.summary() == headline
    assert said.properties(0) == {"report": f"{load_settings().var_dir}/regression/runs/{BUILDER}/j1/report"}
    assert said.links() == [("report", f"store/regression/{BUILDER}/j1/index.html"),
                            ("history", f"regression/{BUILDER}/")]
