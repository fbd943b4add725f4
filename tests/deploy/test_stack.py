"""The single-machine stack: real redis-server, Celery worker and beat, Buildbot master and worker."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from farm.config import load_settings
from master import control, stack
from master.procs import pid_alive
from master.rest import MasterAPI
from tests import servers
from tests.servers import free_port


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


def test_stack_up_is_idempotent_and_down_stops_what_it_started(ports):
    s = load_settings()
    run = s.var_dir / "run"
    try:
        first = stack.up(s)
        assert first[0].startswith("redis: started") and "celery worker: started" in first[1]
        pids = {name: pid_alive(run / f"{name}.pid") for name in ("redis", "celery-worker", "celery-beat")}
        assert all(pids.values()), pids
        assert control.running(s)
        assert MasterAPI(control.url(s)).connected_workers() == ["local"]
        assert " ready." in (s.var_dir / "log" / "celery-worker.log").read_text()

        again = stack.up(s)
        assert again[0].startswith("redis: already running") and "already running" in again[1]
        assert {name: pid_alive(run / f"{name}.pid") for name in pids} == pids, "up must not restart parts"
        assert all("running" in line for line in stack.status(s))
    finally:
        down = stack.down(s)
    assert all(line.endswith("stopped") for line in down), down
    assert all(line.endswith("stopped") for line in stack.status(s))
    assert not any(_listening(p) for p in ports.values())
    assert not any(pid_alive(Path(run / f"{n}.pid")) for n in ("redis", "celery-worker", "celery-beat"))


def test_stack_leaves_a_redis_it_did_not_start_alone(ports, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with servers.redis_server(tmp_path / "foreign") as url:
        monkeypatch.setenv("MLGO_FARM_CELERY_BROKER_URL", url + "/0")
        s = load_settings()
        assert stack.redis_up(s).startswith("redis: using the server already listening")
        stack.down(s)
        port = int(url.rsplit(":", 1)[1])
        assert _listening(port)
