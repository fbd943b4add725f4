"""Running Buildbot's own commands with the farm's environment, and pid-file liveness checks."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from farm.config import Settings, config_path
from farm.errors import FarmError


def venv_tool(name: str) -> str:
    """A console script installed beside this interpreter (buildbot, buildbot-worker, celery)."""
    path = Path(sys.executable).with_name(name)
    if not path.is_file():
        raise FarmError(f"{name} is not installed beside {sys.executable}; run deploy/setup.sh")
    return str(path)


def farm_env(settings: Settings, base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for processes the farm starts: same config, absolute var dir, venv on PATH."""
    env = dict(os.environ if base is None else base)
    config = config_path(env)
    if config.is_file():
        env["MLGO_FARM_CONFIG"] = str(config)
    env["MLGO_FARM_PATHS_VAR_DIR"] = str(settings.var_dir)
    bindir = str(Path(sys.executable).parent)
    if bindir not in env.get("PATH", "").split(os.pathsep):
        env["PATH"] = os.pathsep.join([bindir, *filter(None, [env.get("PATH")])])
    return env


def run(argv: Sequence[str], env: dict[str, str], what: str, timeout: float = 120) -> str:
    """Run a command to completion; a failure becomes one FarmError line with its last output."""
    try:
        p = subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise FarmError(f"{what} timed out after {timeout:g}s") from None
    if p.returncode != 0:
        lines = [ln for ln in (p.stderr + p.stdout).splitlines() if ln.strip()]
        raise FarmError(f"{what} failed: {(lines or ['exit code ' + str(p.returncode)])[-1].strip()}")
    return p.stdout


def pid_alive(pidfile: Path) -> int | None:
    """The pid recorded in `pidfile` if that process is still running."""
    try:
        pid = int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    try:  # a zombie or a recycled pid of an unrelated process does not count
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return None if state == "Z" else pid
    except OSError:
        return pid


def wait_gone(pid: int, seconds: float) -> bool:
    """Whether process `pid` has ended within `seconds` (a pidfd polled: woken by its exit, not by a timer).

    Buildbot's own `stop` gives up after ten seconds ("never saw process go away") and its `start` after ten
    ("took more than 10 seconds to start"): on a loaded machine a master or worker can take longer, which is no
    failure of the process; the farm waits for the process itself instead, boundedly."""
    import select

    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(int(seconds * 1000)))
    finally:
        os.close(fd)


def end(pid: int, seconds: float, kill_seconds: float = 10) -> bool:
    """End process `pid`: SIGTERM, up to `seconds` for it to exit, then SIGKILL and up to `kill_seconds` more.
    Whether it has ended. Waited for through `wait_gone` (its exit wakes the wait), so a process that exits at
    once costs no timer's tick, and a recycled pid is never signalled after the wait saw the process go."""
    for sig, wait in ((signal.SIGTERM, seconds), (signal.SIGKILL, kill_seconds)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        if wait_gone(pid, wait):
            return True
    return False
