"""`master start` and `master reconfig` say why the master gave up, in one line read from twistd.log
(Buildbot's own commands only say "see twistd.log"), and a master that failed to start is not left running."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from farm.config import load_settings
from farm.errors import FarmError
from master import control
from master.control import RECONFIG_ABORTED, STARTUP_ABORTED, master_failure
from tests.servers import free_port

STAMP = "2026-11-25 00:12:01+0000 [-] "


def _log(tmp_path: Path, *lines: str) -> Path:
    log = tmp_path / "twistd.log"
    log.write_text("".join(f"{STAMP}{ln}\n" for ln in lines))
    return log


def test_a_start_that_cannot_listen_says_so_from_the_traceback(tmp_path):
    log = _log(tmp_path, "Loading configuration from '/m/master.cfg'", "while starting BuildMaster",
               "Traceback (most recent call last):", "--- <exception caught here> ---",
               "twisted.internet.error.CannotListenError: Couldn't listen on 127.0.0.1:8010: "
               "[Errno 98] Address already in use.", "BuildMaster startup failed", "Main loop terminated.")
    reason = master_failure(log, 0, STARTUP_ABORTED)
    assert reason == ("twisted.internet.error.CannotListenError: Couldn't listen on 127.0.0.1:8010: "
                      "[Errno 98] Address already in use.")
    assert master_failure(log, 0, RECONFIG_ABORTED) is None  # a start's failure is not a reconfig's


def test_a_start_refused_for_its_configuration_names_the_error(tmp_path):
    log = _log(tmp_path, "Loading configuration from '/m/master.cfg'", "Configuration Errors:",
               "  builder 'x' has no workers", "Halting master.")
    assert master_failure(log, 0, STARTUP_ABORTED) == "builder 'x' has no workers"


def test_only_what_was_logged_after_the_offset_counts(tmp_path):
    log = _log(tmp_path, "Loading configuration from '/m/master.cfg'", "old reason", "BuildMaster startup failed")
    assert master_failure(log, 0, STARTUP_ABORTED) == "old reason"
    offset = log.stat().st_size
    with open(log, "a") as f:
        f.write(f"{STAMP}Loading configuration from '/m/master.cfg'\n{STAMP}BuildMaster is running\n")
    assert master_failure(log, offset, STARTUP_ABORTED) is None  # this start went well: no reason to give
    assert master_failure(tmp_path / "missing.log", 0, STARTUP_ABORTED) is None


def test_a_real_master_whose_web_port_is_taken_fails_in_one_line_and_is_not_left_running(tmp_path, monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv("MLGO_FARM_BUILDBOT_WWW_PORT", str(port))
        monkeypatch.setenv("MLGO_FARM_BUILDBOT_PB_PORT", str(free_port()))
        s = load_settings()
        with pytest.raises(FarmError) as e:
            control.start(s)
    line = str(e.value)
    assert "\n" not in line
    assert line.startswith("buildbot start failed: ") and f"127.0.0.1:{port}" in line, line
    assert "Address already in use" in line, line
    assert control.running(s) is None
