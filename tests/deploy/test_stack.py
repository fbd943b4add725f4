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
    p = {"redis": free_port(), "www": free_port(), "pb": free_port(), "flower": free_port(), "smtp": free_port()}
    monkeypatch.setenv("MLGO_FARM_CELERY_BROKER_URL", f"redis://127.0.0.1:{p['redis']}/0")
    monkeypatch.setenv("MLGO_FARM_CELERY_RESULT_BACKEND", f"redis://127.0.0.1:{p['redis']}/1")
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WWW_PORT", str(p["www"]))
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_PB_PORT", str(p["pb"]))
    monkeypatch.setenv("MLGO_FARM_CELERY_FLOWER_PORT", str(p["flower"]))
    monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(p["smtp"]))  # the stack's mail sink, on loopback by default
    return p


def _argv(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _restarted(pidfile: Path, old: int) -> int | None:
    pid = pid_alive(pidfile)
    return pid if pid and pid != old else None


def _celery_answers(s) -> bool:
    """The stack's Celery worker runs a task through the password-protected broker and result backend."""
    from farm.celery_app import make_app

    app = make_app(s)
    return app.send_task("vocabgen.tasks.scheduled_retrain", args=["ir"]).get(timeout=60)["status"] == "no-dataset"


def _parts(lines: list[str]) -> list[str]:
    """`stack status` without its Celery queue and task lines (those follow the parts)."""
    return [line for line in lines if not line.startswith(("celery queue", "celery active"))]


def _http(url: str, method: str = "GET") -> tuple[int, str]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def _flower_checks(s, ports: dict[str, int], pid: int, password: str) -> None:
    """Flower: loopback only, the password in a 0600 file and not on its command line, read-only, linked from
    the Buildbot UI; `stack status` shows the queue and each worker's active tasks."""
    flower_url = f"http://127.0.0.1:{ports['flower']}/"
    assert password not in _argv(pid) and password not in (s.var_dir / "run" / "flowerconfig.py").read_text()
    listening = subprocess.run(["ss", "-Hltn", f"sport = :{ports['flower']}"], capture_output=True, text=True).stdout
    local = [line.split()[3] for line in listening.splitlines()]
    assert local == [f"127.0.0.1:{ports['flower']}"], listening
    assert _http(flower_url + "healthcheck") == (200, "OK")
    wait_until(lambda: "mlgo-farm@" in _http(flower_url + "workers")[1], 60, "Flower lists the Celery worker")
    status, _ = _http(f"{flower_url}api/worker/shutdown/mlgo-farm@{socket.gethostname()}", "POST")
    assert status in (401, 403), status  # Flower's API needs a login the stack never configures
    assert pid_alive(s.var_dir / "run" / "celery-worker.pid"), "a refused shutdown leaves the worker running"
    frag = _http(f"{control.url(s)}plugins/wsgi_dashboards/farm/index.html")[1]
    assert f'href="{flower_url}"' in frag
    lines = stack.status(s)
    assert f"flower: running (pid {pid}) at {flower_url}" in lines
    assert "celery queue celery: 0 waiting, 0 delivered and not yet acknowledged" in lines, lines
    # The worker's line: "none", or what it runs (beat may have started a periodic task). A worker busy
    # starting up may miss the 2 s inspect window ("no worker answered"); it answers soon after.
    worker = f"celery active on mlgo-farm@{socket.gethostname()}: "
    seen: list[list[str]] = [[]]
    try:
        wait_until(lambda: any(line.startswith(worker) for line in seen.append(stack.status(s)) or seen[-1]), 60,
                   "stack status shows the worker's active tasks")
    except TimeoutError as e:
        raise AssertionError(f"{e}; last status: {seen[-1]}") from None


@pytest.mark.slow
def test_stack_up_is_idempotent_supervised_password_protected_and_down_stops_it(ports):
    import redis

    s = load_settings()
    run, log = s.var_dir / "run", s.var_dir / "log"
    names = ("redis", "celery-worker", "celery-beat", "flower", "mailsink", "supervisor")
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
        assert all("running" in line for line in _parts(stack.status(s)))
        _flower_checks(s, ports, pids["flower"], password)

        # The supervisor starts again what dies: the worker main process, beat, Redis (all SIGKILLed).
        for name in ("celery-worker", "celery-beat", "flower", "mailsink", "redis"):
            os.kill(pids[name], signal.SIGKILL)
            killed = time.monotonic()
            pids[name] = wait_until(lambda n=name: _restarted(run / f"{n}.pid", pids[n]), 120, f"{name} restarted")
            print(f"\n{name}: SIGKILL to running again under the supervisor: {time.monotonic() - killed:.1f}s")
        assert _celery_answers(s), "the restarted worker works through the restarted Redis"
        text = (log / "supervisor.log").read_text()
        assert "celery worker was not running; celery worker: started" in text
        assert "redis was not running; redis: started" in text
        assert "mail sink was not running; mail sink: started" in text
        for part in ("redis", "celery-worker", "celery-beat", "flower", "supervisor"):
            assert password not in (log / f"{part}.log").read_text(), f"{part}.log shows the Redis password"
        assert all(password not in line for line in first + again)
    finally:
        down = stack.down(s)
    assert down[0] == "supervisor: stopped"
    assert all(line.endswith("stopped") for line in down), down
    assert all(line.endswith("stopped") for line in _parts(stack.status(s)))
    assert "celery queues: redis is not running" in stack.status(s)
    assert not any(_listening(p) for p in ports.values())
    assert not any(pid_alive(Path(run / f"{n}.pid")) for n in names)


def test_redis_keeps_a_queued_chain_step_across_sigkill(ports):
    """A retrain enqueued with no worker is still queued after Redis is SIGKILLed and started on its directory."""
    from farm import lease
    from farm.celery_app import make_app

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


def test_flower_is_loopback_read_only_and_can_be_turned_off(monkeypatch: pytest.MonkeyPatch):
    from farm.errors import FarmError
    from master import flower

    monkeypatch.setenv("MLGO_FARM_CELERY_REDIS_PASSWORD", "not-in-flowers-config")
    monkeypatch.setenv("MLGO_FARM_CELERY_FLOWER_PORT", "5599")
    s = load_settings()
    text = flower.config_text(s)
    assert "address = '127.0.0.1'" in text and "port = 5599" in text and "read_only = True" in text
    assert "not-in-flowers-config" not in text
    monkeypatch.setenv("MLGO_FARM_CELERY_FLOWER_PORT", "0")
    s = load_settings()
    assert flower.url(s) is None and flower.up(s).startswith("flower: off") and flower.flower_status(s) == "flower: off"
    monkeypatch.setenv("MLGO_FARM_CELERY_FLOWER_PORT", "-1")
    with pytest.raises(FarmError, match="flower_port must be 0"):
        flower.url(load_settings())
