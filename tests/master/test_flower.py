"""Flower as the stack starts it (master/flower.py): its settings are the farm's, never the caller's FLOWER_*
variables (issue 18, item 11). A real Flower process on loopback, with a real redis-server as broker."""

from __future__ import annotations

import os
import signal
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from farm.config import load_settings
from master import flower
from master.procs import pid_alive
from tests.servers import free_port, wait_until


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_flower_ignores_flower_variables_the_caller_exported(monkeypatch: pytest.MonkeyPatch, redis_url: str) -> None:
    port = free_port()
    monkeypatch.setenv("MLGO_FARM_CELERY_BROKER_URL", redis_url)
    monkeypatch.setenv("MLGO_FARM_CELERY_FLOWER_PORT", str(port))
    monkeypatch.setenv("FLOWER_UNAUTHENTICATED_API", "true")  # would open Flower's HTTP API to anyone
    monkeypatch.setenv("FLOWER_PURGE_OFFLINE_WORKERS", "5")
    s = load_settings()
    try:
        assert flower.up(s).startswith("flower: started")
        assert _status(f"http://127.0.0.1:{port}/api/workers") in (401, 403)
        pid = pid_alive(flower.pidfile(s))
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert not [v for v in environ if v.startswith(b"FLOWER_")]
        assert _status(f"http://127.0.0.1:{port}/workers") == 200  # the pages stay open to look at
    finally:
        pid = pid_alive(flower.pidfile(s))
        if pid:
            os.kill(pid, signal.SIGTERM)
            wait_until(lambda: pid_alive(flower.pidfile(s)) != pid, 30, "flower stopped")
