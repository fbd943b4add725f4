"""Buildbot worker set-up: create, start and stop a worker with Buildbot's `buildbot-worker` command."""

from __future__ import annotations

from pathlib import Path

from farm.config import Settings
from farm.errors import FarmError
from master.layout import worker_dir, worker_password
from master.procs import farm_env, pid_alive, run, venv_tool, wait_gone


def create(settings: Settings, name: str | None = None, master: str | None = None, basedir: Path | None = None,
           admin: str = "mlgo-farm", host_info: str = "") -> Path:
    """`buildbot-worker create-worker` against the master's PB port (re-creatable: --force)."""
    bb = settings.buildbot
    name = name or bb.worker_name
    basedir = Path(basedir).absolute() if basedir else worker_dir(settings, name)
    master = master or f"{bb.master_host}:{bb.pb_port}"
    basedir.parent.mkdir(parents=True, exist_ok=True)
    run([venv_tool("buildbot-worker"), "create-worker", "--quiet", "--force", "--relocatable", "--umask=0o22",
         str(basedir), master, name, worker_password(settings)], farm_env(settings), "buildbot-worker create-worker")
    info = basedir / "info"
    info.mkdir(exist_ok=True)
    (info / "admin").write_text(admin + "\n")
    (info / "host").write_text((host_info or f"mlgo-farm worker {name}") + "\n")
    return basedir


def running(basedir: Path) -> int | None:
    return pid_alive(Path(basedir) / "twistd.pid")


def start(settings: Settings, basedir: Path) -> None:
    """Start the worker with the farm's environment (venv on PATH, same config) unless it runs."""
    basedir = Path(basedir)
    if not (basedir / "buildbot.tac").is_file():
        raise FarmError(f"{basedir} is not a worker directory; run `mlgo-farm worker create` first")
    if running(basedir) is None:
        (basedir / "twistd.pid").unlink(missing_ok=True)
        try:
            run([venv_tool("buildbot-worker"), "start", str(basedir)], farm_env(settings), "buildbot-worker start",
                timeout=120)
        except FarmError as e:
            # `buildbot-worker start` gives up watching after ten seconds without "attached" (its advice ends "then
            # restart the worker"): on a loaded machine the worker, still running, attaches later; whoever needs
            # it attached waits for that (the master's worker list), and a worker that died is a failure
            if "restart the worker" not in str(e) or running(basedir) is None:
                raise


def stop(settings: Settings, basedir: Path) -> bool:
    pid = running(basedir)
    if pid is None:
        return False
    try:
        run([venv_tool("buildbot-worker"), "stop", str(basedir)], farm_env(settings), "buildbot-worker stop",
            timeout=120)
    except FarmError as e:  # slower than its ten seconds to exit (master/procs.py wait_gone)
        if "never saw process go away" not in str(e) or not wait_gone(pid, 120):
            raise
    return True
