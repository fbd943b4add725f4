"""A real master and worker, the worker SIGKILLed as a build starts (tests/master/held.py lands the kill where
Buildbot 4.3.0 wedged the build): the build ends RETRY with one line saying why, and runs again once the
worker is back; with Buildbot's own Build (the bug left in), the watchdog ends it past its deadline and mails."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from farm.config import load_settings
from master import buildbot_worker
from master.layout import worker_dir
from master.rest import MasterAPI
from master.watchdog import WATCHDOG
from tests.master.test_master_live import _properties, live  # noqa: F401  (the live master fixture)
from tests.servers import wait_until

RETRY = 5


def _held_cfg(tmp_path: Path, gate: Path, plain: bool) -> Path:
    cfg = tmp_path / "held.cfg"
    cfg.write_text("from pathlib import Path\nfrom master.buildmaster import build_config\n"
                   "from tests.master.held import hold_first_build\nfrom tests.master.triggered import PIPELINE\n"
                   f"BuildmasterConfig = hold_first_build(build_config(registry=PIPELINE), Path({str(gate)!r}), "
                   f"plain={plain!r})\n")
    return cfg


def _kill_worker_as_the_build_starts(api: MasterAPI, gate: Path) -> tuple[dict, float]:
    """Force `flavoured`, SIGKILL the worker while its build holds; the build and the time of the kill."""
    s = load_settings()
    api.force("flavoured")
    wait_until(lambda: (gate / "reached").exists(), 60, "the build to start")
    (build,) = api.get("builds")["builds"]
    assert not build["complete"] and build["state_string"] in ("created", "worker_preparation"), build
    os.kill(buildbot_worker.running(worker_dir(s)), signal.SIGKILL)
    killed = time.monotonic()
    wait_until(lambda: (gate / "released").exists(), 30, "the master to detach the killed worker")
    return build, killed


def _ended(api: MasterAPI, buildid: int, timeout: float) -> dict:
    return wait_until(lambda: next((b for b in api.get(f"builds/{buildid}")["builds"] if b["complete"]), None),
                      timeout, f"build {buildid} to end")


def _preparation(api: MasterAPI, buildid: int) -> dict:
    (step,) = [st for st in api.get(f"builds/{buildid}/steps")["steps"] if st["name"] == "worker_preparation"]
    return step


def _worker_back_and_the_request_runs_again(api: MasterAPI, build: dict) -> None:
    """The worker started again (as the stack's supervisor does): the same request builds and succeeds."""
    s = load_settings()
    buildbot_worker.start(s, worker_dir(s))
    api.wait_workers(["local"], timeout=60)
    api.wait_idle(timeout=120, poll=0.25)
    again = api.get("builds", buildrequestid=build["buildrequestid"], order="buildid")["builds"]
    assert [b["results"] for b in again] == [RETRY, 0], again


def test_a_worker_sigkilled_as_its_build_starts_leaves_the_build_retried_at_once(live, tmp_path):  # noqa: F811
    start, _ = live
    gate = tmp_path / "gate"
    gate.mkdir()
    api = start(_held_cfg(tmp_path, gate, plain=False))
    build, killed = _kill_worker_as_the_build_starts(api, gate)
    ended = _ended(api, build["buildid"], timeout=30)  # today it stays `created` until the master restarts
    print(f"\nworker SIGKILL at build start to the build ended RETRY: {time.monotonic() - killed:.2f}s")
    line = "worker local left while the build started; retried"
    assert (ended["results"], ended["state_string"]) == (RETRY, line)
    step = _preparation(api, build["buildid"])
    assert (step["results"], step["state_string"]) == (RETRY, line)
    assert _properties(api, build["buildid"])[WATCHDOG] == line
    _worker_back_and_the_request_runs_again(api, build)


def test_the_watchdog_retries_a_build_buildbot_left_wedged_and_mails(live, tmp_path, monkeypatch):  # noqa: F811
    start, mailbox = live
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_START_DEADLINE", "3")
    gate = tmp_path / "gate"
    gate.mkdir()
    api = start(_held_cfg(tmp_path, gate, plain=True))  # Buildbot's own Build: the AttributeError happens
    build, killed = _kill_worker_as_the_build_starts(api, gate)
    ended = _ended(api, build["buildid"], timeout=60)
    print(f"\nworker SIGKILL at build start to the watchdog's RETRY (deadline 3s): {time.monotonic() - killed:.2f}s")
    assert ended["results"] == RETRY, ended
    line = ended["state_string"]
    assert line.startswith("mlgo-farm watchdog: no step started ") and "worker local gone, deadline 3s" in line, line
    assert line.endswith("; retry (1 of 2)"), line
    assert _preparation(api, build["buildid"])["state_string"] == line
    assert _properties(api, build["buildid"])[WATCHDOG] == line
    (mail,) = wait_until(lambda: [m for m in mailbox.messages if "watchdog" in m["Subject"]], 60, "the alert")
    assert "flavoured" in mail["Subject"] and mail.get_payload(decode=True).decode().strip() == line
    _worker_back_and_the_request_runs_again(api, build)

