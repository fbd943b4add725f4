"""A model that never answers or answers NaN, run in-process by `policy heldout` and `policy inspect` (issue 35,
item 3): every run is bounded as `policy serve` bounds it (`[policy] timeout`), SIGTERM and Ctrl-C end the
process while a model runs, a table with failed compiles fails in one line, and inspect runs the model once on
a probe. Real `mlgo-farm` processes, real clang-22, real ONNX models built with onnx.helper."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from farm import hold, progress
from tests.policyhost.conftest import write_onnx_nan_logit, write_onnx_policy
from tests.policyhost.test_policy_server import write_onnx_loop
from tests.servers import end_with_signal, sigint_default, wait_until

MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([MLGO_FARM, *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def one_second(monkeypatch: pytest.MonkeyPatch) -> None:
    """`[policy] timeout`, the bound of every model run (and of a silent compiler), small."""
    monkeypatch.setenv("MLGO_FARM_POLICY_TIMEOUT", "1")


def test_heldout_of_a_model_that_never_answers_ends_and_fails_in_one_line(
        packages: dict[str, Path], tmp_path: Path, one_second: None) -> None:
    """Each run stops at the deadline and fails its compile; a package whose compiles failed has no ratio, so the
    table says so and the command fails (it ran for ever: two threads at 100 %, until SIGKILL)."""
    model = write_onnx_loop(tmp_path / "endless.onnx", bounded_by_feature=False)
    res = cli("policy", "heldout", str(model), "--evaluation", f"gamma={packages['gamma']}")
    assert res.returncode == 1, res.stderr
    row = next(ln for ln in res.stdout.splitlines() if ln.startswith("gamma "))
    assert row.split()[4] == "-" and "(3 of 3 failed to compile: no ratio)" in row, res.stdout
    assert "1.0000" not in res.stdout and "worst" not in res.stdout, res.stdout
    [line] = [ln for ln in res.stderr.strip().splitlines() if not progress.LINE.match(ln)]  # farm/progress.py
    assert line.startswith("mlgo-farm: error: the held-out table has no ratio for gamma: 3 of 3 modules failed to "
                           "compile (first, "), line
    assert line.endswith(": policy model endless.onnx gave no advice within 1s (observation 0); its run was "
                         "stopped)"), line


def test_heldout_of_a_model_answering_nan_is_no_ratio_and_exits_non_zero(
        packages: dict[str, Path], tmp_path: Path) -> None:
    """Every compile fails on NaN advice: the table showed `0 modules ... 1.0000 (3 failed)` and exited 0."""
    model = write_onnx_nan_logit(tmp_path / "nan.onnx")
    res = cli("policy", "heldout", str(model), "--evaluation", f"gamma={packages['gamma']}", "--json")
    assert res.returncode == 1, res.stderr
    import json

    table = json.loads(res.stdout)
    [row] = table["packages"]
    assert row["ratio"] is None and len(row["failed"]) == 3 and table["geomean"] is None and table["worst"] is None
    assert all("gave non-finite advice [nan]" in why for why in row["errors"].values()), row
    [line] = [ln for ln in res.stderr.strip().splitlines() if not progress.LINE.match(ln)]  # farm/progress.py
    assert "has no ratio for gamma: 3 of 3 modules failed to compile" in line and "non-finite advice" in line, line


@pytest.mark.parametrize(("sig", "code", "said"), [(signal.SIGTERM, 143, "terminated"),
                                                    (signal.SIGINT, 130, "interrupted")])
def test_a_signal_ends_heldout_while_a_model_that_never_answers_runs(
        packages: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sig: int, code: int,
        said: str) -> None:
    """The runs are bounded by an hour here, so only the signal can end them: the compiles with the model are held
    (farm/hold.py) until the test lets them go into the endless run, then the signal comes. It was caught and
    ignored (the main thread waited for threads that never returned); now the runs in flight are stopped."""
    monkeypatch.setenv("MLGO_FARM_POLICY_TIMEOUT", "3600")
    gate = tmp_path / "hold"
    gate.touch()
    monkeypatch.setenv(hold.ENV, str(gate))
    model = write_onnx_loop(tmp_path / "endless.onnx", bounded_by_feature=False)
    p = subprocess.Popen([MLGO_FARM, "policy", "heldout", str(model), "--evaluation", f"gamma={packages['gamma']}"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    try:
        wait_until(lambda: hold.held_marker(gate).exists() or p.poll() is not None, 120,
                   "a compile with the model to start and be held")
        assert p.poll() is None
    except BaseException:
        end_with_signal(p, signal.SIGKILL)
        raise
    gate.unlink()  # the held compiles go on into the model's endless run
    out, err = end_with_signal(p, sig)
    assert p.returncode == code, err
    assert [ln for ln in err.splitlines() if "by the test file" not in ln] == [f"mlgo-farm: error: {said}"], err
    assert out == ""


def test_inspect_runs_the_model_once_so_one_that_never_answers_or_answers_nan_does_not_pass(
        tmp_path: Path, one_second: None) -> None:
    """Both bound to this LLVM's header like any good model and passed; now each answers the probe compile's first
    decision under the bound of every model run, or fails validation in one line."""
    endless = write_onnx_loop(tmp_path / "endless.onnx", bounded_by_feature=False)
    res = cli("policy", "inspect", str(endless))
    assert res.returncode == 5 and res.stdout == "", res.stderr
    assert res.stderr.strip().splitlines() == [
        "mlgo-farm: error: policy model endless.onnx gave no advice within 1s (observation 0); its run was stopped "
        "(the probe compile's first decision)"]
    nan = write_onnx_nan_logit(tmp_path / "nan.onnx")
    res = cli("policy", "inspect", str(nan))
    assert res.returncode == 5 and res.stdout == "", res.stderr
    assert res.stderr.strip().splitlines() == [
        f"mlgo-farm: error: policy model {nan} gave non-finite advice [nan] on observation 0; refusing to guess a "
        "decision (the probe compile's first decision)"]
    good = write_onnx_policy(tmp_path / "good.onnx", "callee_basic_block_count", "Less", 3)
    res = cli("policy", "inspect", str(good))
    assert res.returncode == 0 and '"checked_against_llvm": true' in res.stdout, res.stderr
