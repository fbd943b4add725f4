"""The single-machine stack: real redis-server, Celery worker and beat, Buildbot master and worker, supervisor."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from farm.config import load_settings
from farm.secrets import redis_password, secrets_dir
from master import control, stack
from master.procs import pid_alive
from master.rest import MasterAPI
from tests import servers
from tests.servers import free_port, wait_until

MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0



@pytest.fixture
def ports(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    p = {"redis": free_port(), "www": free_port(), "pb": free_port()}
    monkeypatch.setenv("MLGO_FARM_CELERY_BROKER_URL", f"redis://127.0.0.1:{p['redis']}/0")
    monkeypatch.setenv("MLGO_FARM_CELERY_RESULT_BACKEND", f"redis://127.0.0.1:{p['redis']}/1")
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WWW_PORT", str(p["www"]))
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_PB_PORT", str(p["pb"]))
    return p


def _argv(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _restarted(pidfile: Path, old: int) -> int | None:
    pid = pid_alive(pidfile)
    return pid if pid and pid != old else None


def _celery_answers(s) -> bool:
    """The stack's Celery worker runs a task through the password-protected broker and result backend."""
    from vocabgen.celery_app import make_app

    app = make_app(s)
    return app.send_task("vocabgen.tasks.scheduled_retrain", args=["ir"]).get(timeout=60)["status"] == "no-dataset"


def test_stack_up_is_idempotent_supervised_password_protected_and_down_stops_it(ports):
    import redis

    s = load_settings()
    run, log = s.var_dir / "run", s.var_dir / "log"
    names = ("redis", "celery-worker", "celery-beat", "supervisor")
    try:
        first = stack.up(s)
        assert first[0].startswith("redis: started") and "celery worker: started" in first[1]
        assert first[-1].startswith("supervisor: started")
        pids = {name: pid_alive(run / f"{name}.pid") for name in names}
        assert all(pids.values()), pids
        assert control.running(s)
        assert MasterAPI(control.url(s)).connected_workers() == ["local"]
        assert " ready." in (log / "celery-worker.log").read_text()

        # Redis: a generated password, in 0600 files only, never on a command line; the stack's parts use it.
        password = redis_password(s)
        assert password and (secrets_dir(s.var_dir) / "redis-password").stat().st_mode & 0o777 == 0o600
        assert (s.var_dir / "redis" / "redis.conf").stat().st_mode & 0o777 == 0o600
        assert password not in _argv(pids["redis"])
        with pytest.raises(redis.AuthenticationError):
            redis.Redis.from_url(s.celery.broker_url).ping()
        assert _celery_answers(s)

        again = stack.up(s)
        assert again[0].startswith("redis: already running") and "already running" in again[1]
        assert {name: pid_alive(run / f"{name}.pid") for name in names} == pids, "up must not restart parts"
        assert all("running" in line for line in stack.status(s))

        # The supervisor starts again what dies: the worker main process, beat, Redis (all SIGKILLed).
        for name in ("celery-worker", "celery-beat", "redis"):
            os.kill(pids[name], signal.SIGKILL)
            killed = time.monotonic()
            pids[name] = wait_until(lambda n=name: _restarted(run / f"{n}.pid", pids[n]), 120, f"{name} restarted")
            print(f"\n{name}: SIGKILL to running again under the supervisor: {time.monotonic() - killed:.1f}s")
        assert _celery_answers(s), "the restarted worker works through the restarted Redis"
        text = (log / "supervisor.log").read_text()
        assert "celery worker was not running; celery worker: started" in text
        assert "redis was not running; redis: started" in text
        for part in ("redis", "celery-worker", "celery-beat", "supervisor"):
            assert password not in (log / f"{part}.log").read_text(), f"{part}.log shows the Redis password"
        assert all(password not in line for line in first + again)
    finally:
        down = stack.down(s)
    assert down[0] == "supervisor: stopped"
    assert all(line.endswith("stopped") for line in down), down
    assert all(line.endswith("stopped") for line in stack.status(s))
    assert not any(_listening(p) for p in ports.values())
    assert not any(pid_alive(Path(run / f"{n}.pid")) for n in names)


def test_redis_keeps_a_queued_chain_step_across_sigkill(ports):
    """A retrain enqueued with no worker is still queued after Redis is SIGKILLed and started on its directory."""
    from vocabgen import lease
    from vocabgen.celery_app import make_app

    s = load_settings()
    try:
        assert stack.redis_up(s).startswith("redis: started")
        enqueued = subprocess.run([MLGO_FARM, "vocab", "retrain", "--kind", "ir"], env=os.environ,
                                  capture_output=True, text=True, timeout=60)
        assert enqueued.returncode == 0, enqueued.stderr
        app = make_app(s)
        queued = [x for x in lease.sightings(app) if x.where == "queued"]
        assert len(queued) == 1 and queued[0].root_id == queued[0].task_id, queued
        os.kill(pid_alive(s.var_dir / "run" / "redis.pid"), signal.SIGKILL)
        wait_until(lambda: not _listening(ports["redis"]), 10, "redis to die")
        assert stack.redis_up(s).startswith("redis: started")
        assert [x for x in lease.sightings(app) if x.where == "queued"] == queued
    finally:
        stack.redis_down(s)


def test_stack_leaves_a_redis_it_did_not_start_alone(ports, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with servers.redis_server(tmp_path / "foreign") as url:
        monkeypatch.setenv("MLGO_FARM_CELERY_BROKER_URL", url + "/0")
        s = load_settings()
        assert stack.redis_up(s).startswith("redis: using the server already listening")
        stack.down(s)
        port = int(url.rsplit(":", 1)[1])
        assert _listening(port)
