"""The single-machine stack on loopback: redis-server, Celery worker and beat, Buildbot master and worker.

`up` is idempotent (running parts are left alone) and returns once every part is ready; `down`
stops, in reverse order, only processes whose pid files this stack wrote. Pid files live in
`<var>/run`, logs in `<var>/log` (Buildbot keeps its twistd.pid/twistd.log in its own directories
under `<var>/buildbot`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import time
from pathlib import Path
from urllib.parse import urlparse

from farm.config import Settings
from farm.errors import FarmError
from master import control
from master.layout import worker_dir
from master.procs import farm_env, pid_alive, run, venv_tool
from master.rest import MasterAPI
from workers import buildbot_worker

CELERY_APP = "vocabgen.celery_app"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _dirs(s: Settings) -> tuple[Path, Path]:
    run_dir, log_dir = s.var_dir / "run", s.var_dir / "log"
    run_dir.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    return run_dir, log_dir


def _listening(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), 0.5):
        return True
    return False


def _wait(ready, what: str, timeout: float, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise FarmError(f"{what} not ready after {timeout:g}s" + (f"; see {log}" if log else ""))
        time.sleep(0.2)


def _redis_address(s: Settings) -> tuple[str, int] | None:
    """Host and port of the broker when it is a redis on this machine (else the stack does not own it)."""
    u = urlparse(s.celery.broker_url)
    if u.scheme != "redis" or (u.hostname or "127.0.0.1") not in LOOPBACK:
        return None
    return u.hostname or "127.0.0.1", u.port or 6379


def redis_up(s: Settings) -> str:
    addr = _redis_address(s)
    if addr is None:
        return f"redis: remote broker {s.celery.broker_url} (not started here)"
    host, port = addr
    run_dir, log_dir = _dirs(s)
    pidfile = run_dir / "redis.pid"
    if pid_alive(pidfile):
        return f"redis: already running (pid {pid_alive(pidfile)}) on {host}:{port}"
    if _listening(host, port):
        return f"redis: using the server already listening on {host}:{port} (not managed by the stack)"
    exe = shutil.which("redis-server") or "/usr/bin/redis-server"
    data = s.var_dir / "redis"
    data.mkdir(parents=True, exist_ok=True)
    run([exe, "--bind", "127.0.0.1" if host == "localhost" else host, "--port", str(port), "--daemonize", "yes",
         "--pidfile", str(pidfile), "--logfile", str(log_dir / "redis.log"), "--dir", str(data)],
        farm_env(s), "redis-server")
    _wait(lambda: _listening(host, port), "redis-server", 30, log_dir / "redis.log")
    return f"redis: started on {host}:{port} (pid {pid_alive(pidfile)})"


def _celery_up(s: Settings, role: str) -> str:
    run_dir, log_dir = _dirs(s)
    pidfile, logfile = run_dir / f"celery-{role}.pid", log_dir / f"celery-{role}.log"
    if pid_alive(pidfile):
        return f"celery {role}: already running (pid {pid_alive(pidfile)})"
    pidfile.unlink(missing_ok=True)
    offset = logfile.stat().st_size if logfile.exists() else 0
    argv = [venv_tool("celery"), "--workdir", str(s.var_dir), "-A", CELERY_APP, role, "--detach",
            "--pidfile", str(pidfile), "--logfile", str(logfile), "--loglevel", "INFO"]
    if role == "worker":
        argv += ["--concurrency", "1", "--hostname", "mlgo-farm@%h"]
    else:
        argv += ["--schedule", str(s.var_dir / "celery-beat-schedule")]
    run(argv, farm_env(s), f"celery {role}")

    def ready() -> bool:
        if not pid_alive(pidfile):
            text = logfile.read_text(errors="replace")[offset:] if logfile.exists() else ""
            if "Traceback" in text:
                raise FarmError(f"celery {role} failed to start: see {logfile}")
            return False
        if role != "worker":
            return True
        return " ready." in logfile.read_text(errors="replace")[offset:]

    _wait(ready, f"celery {role}", 90, logfile)
    return f"celery {role}: started (pid {pid_alive(pidfile)}), log {logfile}"


def master_up(s: Settings) -> str:
    basedir = control.start(s)
    return f"buildbot master: running at {control.url(s)} ({basedir})"


def worker_up(s: Settings) -> str:
    wdir = worker_dir(s)
    if not (wdir / "buildbot.tac").is_file():
        buildbot_worker.create(s, basedir=wdir)
    buildbot_worker.start(s, wdir)
    MasterAPI(control.url(s)).wait_workers([s.buildbot.worker_name], timeout=90)
    return f"buildbot worker {s.buildbot.worker_name}: connected ({wdir})"


def up(s: Settings) -> list[str]:
    """Start every part that is not running, in dependency order; one line per part."""
    return [redis_up(s), _celery_up(s, "worker"), _celery_up(s, "beat"), master_up(s), worker_up(s)]


def _terminate(pidfile: Path, what: str, timeout: float = 60) -> str:
    pid = pid_alive(pidfile)
    if pid is None:
        pidfile.unlink(missing_ok=True)
        return f"{what}: not running"
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pidfile) == pid and time.monotonic() < deadline:
        time.sleep(0.2)
    if pid_alive(pidfile) == pid:
        os.kill(pid, signal.SIGKILL)
    pidfile.unlink(missing_ok=True)
    return f"{what}: stopped"


def down(s: Settings) -> list[str]:
    """Stop what `up` started, in reverse order."""
    run_dir, _ = _dirs(s)
    out = [
        "buildbot worker: " + ("stopped" if buildbot_worker.stop(s, worker_dir(s)) else "not running"),
        "buildbot master: " + ("stopped" if control.stop(s) else "not running"),
        _terminate(run_dir / "celery-beat.pid", "celery beat"),
        _terminate(run_dir / "celery-worker.pid", "celery worker", timeout=120),
    ]
    out.append(_terminate(run_dir / "redis.pid", "redis") if _redis_address(s) else "redis: remote (left alone)")
    return out


def status(s: Settings) -> list[str]:
    run_dir, _ = _dirs(s)

    def line(what: str, pid: int | None) -> str:
        return f"{what}: " + (f"running (pid {pid})" if pid else "stopped")

    return [
        line("redis", pid_alive(run_dir / "redis.pid")),
        line("celery worker", pid_alive(run_dir / "celery-worker.pid")),
        line("celery beat", pid_alive(run_dir / "celery-beat.pid")),
        line("buildbot master", control.running(s)),
        line("buildbot worker", buildbot_worker.running(worker_dir(s))),
    ]


