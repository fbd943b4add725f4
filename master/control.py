"""Create, start, stop and check the Buildbot master with Buildbot's own `buildbot` command."""

from __future__ import annotations

import re
from pathlib import Path

from farm.config import Settings
from farm.errors import FarmError
from master.layout import admin_password, admin_password_file, master_dir, password_file, worker_password
from master.procs import end, farm_env, pid_alive, run, venv_tool, wait_gone

MASTER_CFG = Path(__file__).with_name("master.cfg")


def create(settings: Settings, config_file: Path = MASTER_CFG) -> Path:
    """Make the master directory (SQLite database inside) once; (re)link `config_file` as its master.cfg."""
    basedir = master_dir(settings)
    worker_password(settings, create=True)
    admin_password(settings, create=True)
    if not (basedir / "buildbot.tac").is_file():
        basedir.parent.mkdir(parents=True, exist_ok=True)
        run([venv_tool("buildbot"), "create-master", "--quiet", "--relocatable", "--db", "sqlite:///state.sqlite",
             str(basedir)], farm_env(settings), f"buildbot create-master {basedir}")
        (basedir / "master.cfg.sample").unlink(missing_ok=True)
    cfg = basedir / "master.cfg"
    if cfg.is_symlink() or cfg.exists():
        if cfg.resolve() == Path(config_file).resolve():
            return basedir
        cfg.unlink()
    cfg.symlink_to(Path(config_file).absolute())
    return basedir


def check(settings: Settings) -> str:
    """`buildbot checkconfig` on the master directory (or on master.cfg itself before `create`)."""
    basedir = master_dir(settings)
    target = basedir if (basedir / "buildbot.tac").is_file() else MASTER_CFG
    env = farm_env(settings)
    if not (settings.buildbot.worker_password or password_file(settings).is_file()):
        env["MLGO_FARM_BUILDBOT_WORKER_PASSWORD"] = "checkconfig-only"  # the check needs no real secret
    if not (settings.buildbot.admin_password or admin_password_file(settings).is_file()):
        env["MLGO_FARM_BUILDBOT_ADMIN_PASSWORD"] = "checkconfig-only"
    return run([venv_tool("buildbot"), "checkconfig", str(target)], env, "buildbot checkconfig")


def running(settings: Settings) -> int | None:
    return pid_alive(master_dir(settings) / "twistd.pid")


def start(settings: Settings, config_file: Path = MASTER_CFG) -> Path:
    """Start the master unless it runs already; `buildbot start` returns once it has started."""
    basedir = create(settings, config_file)
    if running(settings) is None:
        (basedir / "twistd.pid").unlink(missing_ok=True)
        run([venv_tool("buildbot"), "upgrade-master", "--quiet", str(basedir)], farm_env(settings),
            "buildbot upgrade-master", timeout=300)
        try:
            _said_why(settings, "start", STARTUP_ABORTED, f"see {basedir / 'twistd.log'}")
        except FarmError:
            _reap(settings)
            raise
        if running(settings) is None:
            raise FarmError(f"buildbot master did not start; see {basedir / 'twistd.log'}")
    return basedir


def _reap(settings: Settings) -> None:
    """End a master that gave up at start-up: `buildbot start` returns as soon as the master logs that it halts,
    which on a loaded machine is before its process has exited. A failed start leaves nothing running: the
    process is waited for, and ended (procs.end: SIGTERM, then SIGKILL) if it lingers."""
    pid = running(settings)
    if pid is None or wait_gone(pid, 60) or end(pid, 60):
        return
    raise FarmError(f"buildbot master (pid {pid}) did not exit after a failed start")


def reconfig(settings: Settings) -> None:
    """`buildbot reconfig`: the running master rereads master.cfg (and so the web users file)."""
    if running(settings) is None:
        raise FarmError("the buildbot master is not running")
    _said_why(settings, "reconfig", RECONFIG_ABORTED, "the master runs on with its previous configuration")


def _said_why(settings: Settings, verb: str, aborted: tuple[str, ...], then: str) -> None:
    """`buildbot VERB` on the master directory; when it fails, the one line says the reason the master logged
    (`master_failure`) and `then`, what follows from it."""
    basedir = master_dir(settings)
    log = basedir / "twistd.log"
    offset = log.stat().st_size if log.is_file() else 0
    try:
        run([venv_tool("buildbot"), verb, str(basedir)], farm_env(settings), f"buildbot {verb}", timeout=180)
    except FarmError as e:
        reason = master_failure(log, offset, aborted)
        if reason is None:
            raise
        raise FarmError(f"buildbot {verb} failed: {reason} ({then})") from e


# What the master logs when it gives a configuration up: on `buildbot reconfig`, and on `buildbot start`
# (a configuration error, or an exception such as a port it cannot listen on).
RECONFIG_ABORTED = ("configuration update aborted",)
STARTUP_ABORTED = ("BuildMaster startup failed", "Halting master.")


def master_failure(log: Path, start: int, aborted: tuple[str, ...]) -> str | None:
    """Why the master gave up, from what it logged after byte `start` of twistd.log.

    `buildbot reconfig` and `buildbot start` only say "Please inspect the master.cfg file" or "Please see
    'twistd.log'"; the reason (the farm's one-line error, or the last line of a traceback) is what the
    master logged between loading the file and the line in `aborted`.
    """
    try:
        with open(log, "rb") as f:
            if f.seek(0, 2) < start:  # rotated meanwhile: the new file holds it
                start = 0
            f.seek(start)
            text = f.read(1 << 20).decode(errors="replace")
    except OSError:
        return None
    lines = [re.sub(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\S* \[[^]]*\] ", "", ln).strip() for ln in text.splitlines()]
    begin = max((i for i, ln in enumerate(lines) if ln.startswith("Loading configuration from")), default=None)
    if begin is None:
        return None
    said: list[str] = []
    for ln in lines[begin + 1:]:
        if ln.startswith(aborted):
            return said[-1][:500] if said else None
        if ln and not ln.startswith("--- <exception caught here> ---"):
            said.append(ln)
    return None


def stop(settings: Settings) -> bool:
    """Stop the master if it runs; True when it was running. A master slower to exit than `buildbot stop` waits
    (ten seconds, on a loaded machine) is waited for up to two minutes more, then the stop fails."""
    pid = running(settings)
    if pid is None:
        return False
    try:
        run([venv_tool("buildbot"), "stop", str(master_dir(settings))], farm_env(settings), "buildbot stop",
            timeout=120)
    except FarmError as e:
        if "never saw process go away" not in str(e) or not wait_gone(pid, 120):
            raise
    return True


def url(settings: Settings) -> str:
    return f"http://{settings.buildbot.master_host}:{settings.buildbot.www_port}/"
