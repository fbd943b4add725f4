"""A real master polling an llvm-project it cannot reach: every failed poll is one line of its log, with git's
reason, and no traceback (Buildbot's own GitPoller logs some forty lines at every poll, for ever)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from farm.config import load_settings
from master import control
from master.layout import master_dir
from tests.master import mailed
from tests.servers import free_port, stop_master, wait_until

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def master_only(monkeypatch: pytest.MonkeyPatch):
    """Start a master (no worker: the poller needs none) with the config file the test gives; stop it afterwards."""
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_PB_PORT", str(free_port()))
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WWW_PORT", str(free_port()))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    started = []

    def start(config_file: Path) -> Path:
        s = load_settings()
        control.start(s, config_file)
        started.append(s)
        return master_dir(s) / "twistd.log"

    yield start
    for s in started:
        stop_master(s)


def _polls(log: Path) -> list[str]:
    """The log's lines about the LLVM poller's polls: the farm's one line, or Buildbot's own first line."""
    return [ln for ln in log.read_text(errors="replace").splitlines()
            if "llvm-project: cannot poll" in ln or "while polling for changes" in ln]


def test_an_unreachable_repository_is_one_line_per_poll_and_no_traceback(master_only, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    repo = f"http://127.0.0.1:{free_port()}/llvm-project.git"  # nothing listens there
    monkeypatch.setenv("MLGO_FARM_LLVM_REPO", repo)
    monkeypatch.setenv("MLGO_FARM_LLVM_POLL_INTERVAL", "1")
    log = master_only(mailed.config(tmp_path / "llvm.cfg", str(tmp_path), "follows-llvm"))
    lines = wait_until(lambda: _polls(log) if len(_polls(log)) >= 3 else None, 120, "three failed polls")
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "Unhandled error" not in text, text[-3000:]
    port = repo.split(":")[2].split("/")[0]
    for line in lines:  # git's reason, whatever its milliseconds
        said = line.split(f"] llvm-project: cannot poll {repo} (branch main): ", 1)[1]
        assert said.startswith(f"fatal: unable to access '{repo}/': Failed to connect to 127.0.0.1 port {port} "), line
        assert said.endswith("Couldn't connect to server; next poll in 1 s"), line
