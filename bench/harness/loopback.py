"""What the benches that start servers need on loopback: a farm of their own, free ports, a redis-server, waiting.

The test suite has its own, stricter helpers (tests/servers.py); a bench never imports tests/, and needs less: it
starts its servers once, by hand, on a machine it knows.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def free_ports(n: int) -> list[int]:
    """`n` different loopback ports nothing listens on now (the kernel's choice, all held until all are chosen)."""
    with contextlib.ExitStack() as held:
        socks = [held.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def until(predicate: Callable[[], T], timeout: float, what: str, poll: float = 0.1) -> T:
    """The first true value of `predicate()`, asked every `poll` seconds; TimeoutError naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} after {timeout:g} s")
        time.sleep(poll)
    return value


def end(proc: subprocess.Popen, grace: float = 10) -> None:
    """SIGTERM, then SIGKILL if it has not exited after `grace` seconds; reaped either way."""
    for send in (proc.terminate, proc.kill):
        if proc.poll() is None:
            send()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(grace)


def scratch_farm(prefix: str) -> tuple[Path, int]:
    """Point this process and its children at a farm of their own: a temporary var directory, an empty configuration
    file, and free ports for the Buildbot master's web server and workers. The directory and the web port."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    (tmp / "empty.toml").write_text("")
    www, pb = free_ports(2)
    os.environ.update({"MLGO_FARM_PATHS_VAR_DIR": str(tmp / "var"), "MLGO_FARM_CONFIG": str(tmp / "empty.toml"),
                       "MLGO_FARM_BUILDBOT_WWW_PORT": str(www), "MLGO_FARM_BUILDBOT_PB_PORT": str(pb)})
    return tmp, www


def _pong(url: str, proc: subprocess.Popen) -> bool:
    import redis

    if proc.poll() is not None:
        raise RuntimeError(f"redis-server exited with {proc.returncode} before answering")
    try:
        return bool(redis.Redis.from_url(url, socket_timeout=0.5).ping())
    except redis.ConnectionError:
        return False


@contextlib.contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A redis-server on loopback without persistence, its files under `workdir`; yields its URL, ends it after."""
    (port,) = free_ports(1)
    exe = shutil.which("redis-server") or "/usr/bin/redis-server"
    proc = subprocess.Popen([exe, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
                             "--dir", str(workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}"
    try:
        until(lambda: _pong(url, proc), 30, "answer from redis-server")
        yield url
    finally:
        end(proc)
