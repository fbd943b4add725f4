"""Real Buildbot master and worker on free loopback ports: forced, changed and triggered builds."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from farm.config import load_settings
from master import control
from master.layout import worker_password
from master.procs import farm_env, run, venv_tool
from master.rest import MasterAPI
from tests.master.pipeline import PIPELINE
from tests.servers import free_port
from workers import buildbot_worker

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mailbox):
    """Start a master (config file chosen by the test) and one local worker; stop both afterwards."""
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_PB_PORT", str(free_port()))
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WWW_PORT", str(free_port()))
    monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(mailbox.port))
    monkeypatch.setenv("MLGO_FARM_SMTP_RECIPIENTS", "farm-ops@example.org")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    started: list = []

    def start(config_file: Path = control.MASTER_CFG) -> MasterAPI:
        s = load_settings()
        control.start(s, config_file)
        started.append(lambda: control.stop(s))
        wdir = buildbot_worker.create(s)
        buildbot_worker.start(s, wdir)
        started.append(lambda: buildbot_worker.stop(s, wdir))
        api = MasterAPI(control.url(s))
        api.wait_workers(["local"], timeout=60)
        return api

    yield start, mailbox
    for stop in reversed(started):
        stop()


def _wait_for_build(api: MasterAPI, builder: str, after: int, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [b for b in api.builds_after(after) if b.builder == builder and b.result != "running"]
        if done:
            return done[0]
        time.sleep(0.25)
    raise AssertionError(f"no finished {builder} build within {timeout}s")


def _properties(api: MasterAPI, buildid: int) -> dict:
    (props,) = api.get(f"builds/{buildid}/properties")["properties"]
    return {k: v[0] for k, v in props.items()}


def test_real_master_cfg_runs_forced_and_on_change_builds(live, toolchain):
    start, _ = live
    api = start()
    assert "farm-selftest" in api.builders() and "llvm-tot" in api.builders()
    api.force("farm-selftest")
    api.wait_idle(timeout=120, poll=0.25)
    (build,) = api.builds_after(0)
    assert (build.builder, build.result) == ("farm-selftest", "success")
    assert ("toolchain", "success") in build.steps
    log = api.step_log_tail(build.buildid, "toolchain", lines=200)
    assert "argv: [b'mlgo-farm', b'-v', b'toolchain']" in log
    assert f'"llvm_version": "{toolchain.version}"' in log

    s = load_settings()
    run([venv_tool("buildbot"), "sendchange", "--master", f"127.0.0.1:{s.buildbot.pb_port}",
         "--auth", f"change:{worker_password(s)}", "--project", "mlgo-farm", "--who", "test",
         "--comments", "farm code changed", "master/registry.py"], farm_env(s), "buildbot sendchange")
    changed = _wait_for_build(api, "farm-selftest", after=build.buildid)
    assert changed.result == "success"
    assert _properties(api, changed.buildid)["scheduler"] == "change-farm-selftest"


def test_pipeline_captures_publishes_triggers_and_mails_failures(live, tmp_path):
    start, mailbox = live
    cfg = tmp_path / "pipeline.cfg"
    cfg.write_text("from master.buildmaster import build_config\nfrom tests.master.pipeline import PIPELINE\n"
                   "BuildmasterConfig = build_config(registry=PIPELINE)\n")
    api = start(cfg)
    assert sorted(api.builders()) == sorted(b.name for b in PIPELINE)
    api.force("make-dataset")
    api.force("always-fails")
    api.wait_idle(timeout=240, poll=0.5)
    builds = {b.builder: b for b in api.builds_after(0)}
    assert builds["make-dataset"].result == "success", builds["make-dataset"].steps
    assert builds["use-dataset"].result == "success"
    assert builds["always-fails"].result == "failure"
    assert "/nonexistent/mlgo-farm-src" in api.step_log_tail(builds["always-fails"].buildid, "corpus")

    latest = json.loads((load_settings().var_dir / "store" / "datasets" / "ir" / "latest.json").read_text())
    made = _properties(api, builds["make-dataset"].buildid)
    used = _properties(api, builds["use-dataset"].buildid)
    assert made["dataset"] == latest["id"] == used["dataset"]
    assert used["upstream_worker"] == "local" == used["workername"]

    deadline = time.monotonic() + 60
    while not mailbox.messages and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mailbox.messages, "no failure mail arrived"
    subjects = [m["Subject"] for m in mailbox.messages]
    assert any("always-fails" in s for s in subjects), subjects
    assert all("make-dataset" not in s for s in subjects)
    assert mailbox.messages[0]["To"] == "farm-ops@example.org"
