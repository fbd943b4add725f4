"""`mlgo-farm regress history` as a user runs it (a real subprocess): a mistyped builder is one line and a
non-zero exit, and the table's columns line up whatever the values' lengths."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from regression.history import History

MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))


def _history(path: Path) -> History:
    h = History(path)
    for run_id, builder, policy in (("r1", "regression-inliner-size", "20261123-llvm22.1.8-inline-ir2vec-44c187bef393"),
                                    ("a-much-longer-run-id-than-the-others-2", "b", "never")):
        run = h.start_run(run_id, builder, llvm_version="22.1.8", llvm_commit=None, policy_id=policy,
                          vocab_version=None)
        h.fail_run(run, "stopped")
    return h


def _history_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([MLGO_FARM, "regress", "history", *args], capture_output=True, text=True, timeout=60)


def test_an_unknown_builder_is_one_line_and_a_registered_one_without_runs_is_not(tmp_path: Path) -> None:
    db = _history(tmp_path / "h.sqlite").path
    got = _history_cli("--history", str(db), "--builder", "nope")
    assert got.returncode == 2 and got.stdout == "", got
    assert got.stderr == (f"mlgo-farm: error: unknown builder 'nope': no runs in {db} and the master registers no "
                          "such builder (builders with runs: b, regression-inliner-size)\n")
    assert _history_cli("--history", str(db), "--builder", "nope", "--json").returncode == 2
    quiet = _history_cli("--history", str(db), "--builder", "regression-regalloc-speed")  # registered, never run
    assert (quiet.returncode, quiet.stdout) == (0, "no runs of builder regression-regalloc-speed\n"), quiet.stderr
    assert _history_cli("--history", str(db), "--builder", "b").returncode == 0


def test_history_columns_line_up(tmp_path: Path) -> None:
    db = _history(tmp_path / "h.sqlite").path
    got = _history_cli("--history", str(db))
    assert got.returncode == 0, got.stderr
    head, *rows = got.stdout.splitlines()
    assert len(rows) == 2
    starts = [head.index(name) for name in ("builder", "status", "verdict", "policy", "vocab", "llvm", "ratios")]
    for row in rows:
        for at in starts:  # every value starts where its heading does, after a gap
            assert row[at - 2:at] == "  " and row[at] != " ", (at, head, row)
