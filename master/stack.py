"""The single-machine stack on loopback: redis-server, Celery worker and beat, Flower (master/flower.py), the mail
sink (master/mailsink.py, when `[smtp] host` is loopback), Buildbot master and worker, and a supervisor that starts
again whichever of them dies.

`up` is idempotent (running parts are left alone) and returns once every part is ready; `down`
stops the supervisor first, then, in reverse order, only processes whose pid files this stack
wrote. Pid files live in `<var>/run`, logs in `<var>/log` (Buildbot keeps its twistd.pid/twistd.log
in its own directories under `<var>/buildbot`). `up`, `down` and the supervisor's restarts take
one lock (`<var>/run/stack.lock`), so none of them sees another's part half started.

Redis keeps what it acknowledged across a SIGKILL: it runs with an append-only file and
`appendfsync always` (every write reaches the disk before Redis answers; the broker writes a few
commands per task, so the cost is nothing next to losing a queued chain step, and unlike
`everysec` it also holds across a machine crash, or an fsync stalled on a busy disk, when Redis
may answer before it has even written). It requires a password: `[celery] redis_password`, else
one generated once into `<var>/secrets/redis-password` (0600). The password reaches redis-server
in its 0600 config file, never on its command line (`ps` shows argv to every user), and reaches
clients through farm.secrets.effective_redis_url.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from farm.atomic import write_atomic
from farm.config import Settings
from farm.errors import FarmError
from farm.locks import file_lock
from farm.secrets import effective_redis_url, loopback_redis, redact, redis_password
from master import buildbot_worker, control, flower, mailsink
from master.layout import worker_dir
from master.procs import end, farm_env, pid_alive, run, venv_tool
from master.rest import MasterAPI

CELERY_APP = "farm.celery_app"
SUPERVISOR = "master.supervise"


def _dirs(s: Settings) -> tuple[Path, Path]:
    run_dir, log_dir = s.var_dir / "run", s.var_dir / "log"
    run_dir.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    return run_dir, log_dir


def _stack_lock(s: Settings):
    run_dir, _ = _dirs(s)
    return file_lock(run_dir / "stack.lock")


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
    return loopback_redis(s.celery.broker_url)


def _quoted(value: str | Path) -> str:
    """A redis.conf argument: double-quoted, with the escapes redis's own parser (sdssplitargs) reads."""
    return json.dumps(str(value), ensure_ascii=True)


def redis_config(s: Settings, host: str, port: int, password: str) -> str:
    run_dir, log_dir = _dirs(s)
    lines = {
        "bind": _quoted("127.0.0.1" if host == "localhost" else host),
        "port": str(port),
        "daemonize": "yes",
        "pidfile": _quoted(run_dir / "redis.pid"),
        "logfile": _quoted(log_dir / "redis.log"),
        "dir": _quoted(s.var_dir / "redis"),
        "appendonly": "yes",
        "appendfsync": "always",
        "save": '""',  # the append-only file is the persistence; no second copy in snapshots
        "requirepass": _quoted(password),
    }
    return "# written by `mlgo-farm stack up`; holds the Redis password (mode 0600)\n" + "".join(
        f"{key} {value}\n" for key, value in lines.items())


def _redis_answers(s: Settings) -> bool:
    """PING with the farm's password: False while Redis starts or loads its append-only file."""
    import redis

    client = redis.Redis.from_url(effective_redis_url(s.celery.broker_url, s), socket_connect_timeout=1,
                                  socket_timeout=5)
    try:
        return bool(client.ping())
    except (redis.AuthenticationError, redis.ResponseError) as e:
        if "LOADING" in str(e):
            return False
        host, port = _redis_address(s) or ("?", 0)
        raise FarmError(f"redis on {host}:{port} refuses the farm's password ({redact(str(e))}); "
                        "stop it (`mlgo-farm stack down`) and start the stack again") from None
    except redis.RedisError:
        return False
    finally:
        client.close()


def redis_up(s: Settings) -> str:
    addr = _redis_address(s)
    if addr is None:
        return f"redis: remote broker {redact(s.celery.broker_url)} (not started here)"
    host, port = addr
    run_dir, log_dir = _dirs(s)
    pidfile = run_dir / "redis.pid"
    if pid_alive(pidfile):
        return f"redis: already running (pid {pid_alive(pidfile)}) on {host}:{port}"
    if _listening(host, port):
        return f"redis: using the server already listening on {host}:{port} (not managed by the stack)"
    exe = shutil.which("redis-server") or "/usr/bin/redis-server"
    (s.var_dir / "redis").mkdir(parents=True, exist_ok=True)
    conf = s.var_dir / "redis" / "redis.conf"
    write_atomic(conf, redis_config(s, host, port, redis_password(s, create=True) or ""), mode=0o600)
    run([exe, str(conf)], farm_env(s), "redis-server")
    _wait(lambda: _redis_answers(s), "redis-server", 60, log_dir / "redis.log")
    return f"redis: started on {host}:{port} (pid {pid_alive(pidfile)}, append-only, password required)"


def redis_down(s: Settings) -> str:
    run_dir, _ = _dirs(s)
    return _terminate(run_dir / "redis.pid", "redis") if _redis_address(s) else "redis: remote (left alone)"


def mailsink_up(s: Settings) -> str:
    """The loopback mail sink (master/mailsink.py) in its own session, when `[smtp] host` is loopback and nothing
    else listens on its port; a real `[smtp] host` replaces it."""
    if not mailsink.wanted(s):
        return f"mail sink: none ([smtp] host {s.smtp.host}:{s.smtp.port} gets the mail)"
    _, log_dir = _dirs(s)
    host, port, pidfile = mailsink.bind_host(s), s.smtp.port, mailsink.pidfile(s)
    if pid_alive(pidfile):
        return f"mail sink: already running (pid {pid_alive(pidfile)}) on {host}:{port}"
    if _listening(host, port):
        return f"mail sink: using the mail server already listening on {host}:{port} (not managed by the stack)"
    where = mailsink.private_dir(mailsink.mail_dir(s))
    log = log_dir / "mailsink.log"
    with open(log, "ab") as logf:
        proc = subprocess.Popen([sys.executable, "-m", "master.mailsink", "--host", host, "--port", str(port),
                                 "--dir", str(where)], env=farm_env(s), stdin=subprocess.DEVNULL, stdout=logf,
                                stderr=subprocess.STDOUT, start_new_session=True)
    write_atomic(pidfile, f"{proc.pid}\n")

    def ready() -> bool:
        if proc.poll() is not None:
            pidfile.unlink(missing_ok=True)
            raise FarmError(f"mail sink exited with {proc.returncode} before it listened on {host}:{port}; see {log}")
        return _listening(host, port)

    _wait(ready, "mail sink", 30, log)
    return f"mail sink: started (pid {proc.pid}) on {host}:{port}, keeps every mail in {where}; log {log}"


def mailsink_down(s: Settings) -> str:
    return _terminate(mailsink.pidfile(s), "mail sink", timeout=10)


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


def supervisor_up(s: Settings) -> str:
    """The supervisor (master/supervise.py) in its own session, so it outlives `stack up` and its terminal."""
    run_dir, log_dir = _dirs(s)
    pidfile = run_dir / "supervisor.pid"
    if pid_alive(pidfile):
        return f"supervisor: already running (pid {pid_alive(pidfile)})"
    with open(log_dir / "supervisor.log", "ab") as logf:
        proc = subprocess.Popen([sys.executable, "-m", SUPERVISOR], env=farm_env(s), stdin=subprocess.DEVNULL,
                                stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
    write_atomic(pidfile, f"{proc.pid}\n")
    return f"supervisor: started (pid {proc.pid}), restarts any part that dies; log {log_dir / 'supervisor.log'}"


def _parts(s: Settings) -> list[tuple[str, Callable[[], object], Callable[[], str]]]:
    """(name, is it running, start it) in dependency order: what the supervisor watches."""
    run_dir, _ = _dirs(s)

    def redis_running() -> bool:
        addr = _redis_address(s)
        return addr is None or bool(pid_alive(run_dir / "redis.pid")) or _listening(*addr)

    return [
        ("redis", redis_running, lambda: redis_up(s)),
        ("celery worker", lambda: pid_alive(run_dir / "celery-worker.pid"), lambda: _celery_up(s, "worker")),
        ("celery beat", lambda: pid_alive(run_dir / "celery-beat.pid"), lambda: _celery_up(s, "beat")),
        ("flower", lambda: not flower.enabled(s) or pid_alive(flower.pidfile(s)), lambda: flower.up(s)),
        ("mail sink", lambda: not mailsink.wanted(s) or pid_alive(mailsink.pidfile(s))
         or _listening(mailsink.bind_host(s), s.smtp.port), lambda: mailsink_up(s)),
        ("buildbot master", lambda: control.running(s), lambda: master_up(s)),
        ("buildbot worker", lambda: buildbot_worker.running(worker_dir(s)), lambda: worker_up(s)),
    ]


def warnings(s: Settings) -> list[str]:
    """What in the configuration works but will mislead, one line each (`stack up` prints them first)."""
    out = []
    if s.smtp.recipient_list and not s.buildbot.web_url:
        out.append(f"[smtp] recipients are set but [buildbot] web_url is not: the links in every mail will say "
                   f"{s.buildbot.url}, which only this host can open; set web_url (MLGO_FARM_BUILDBOT_WEB_URL) to "
                   f"the address readers reach the master at")
    return out


def up(s: Settings) -> list[str]:
    """Start every part that is not running, in dependency order, then the supervisor; one line per part."""
    with _stack_lock(s):
        return [start() for _, _, start in _parts(s)] + [supervisor_up(s)]


def revive(s: Settings, failures: dict[str, int], not_before: dict[str, float]) -> list[str]:
    """Start again every part that is not running (the supervisor's pass); a part that fails to start
    is tried again after 2, 4, ... 60 s, so a broken configuration does not spin."""
    out = []
    with _stack_lock(s):
        for name, running, start in _parts(s):
            if running():
                failures.pop(name, None)
                continue
            if time.monotonic() < not_before.get(name, 0.0):
                continue
            try:
                out.append(f"{name} was not running; {start()}")
                failures.pop(name, None)
            except Exception as e:  # a supervisor that dies of one part's surprise supervises nothing
                failures[name] = failures.get(name, 0) + 1
                delay = min(60, 2 ** failures[name])
                not_before[name] = time.monotonic() + delay
                out.append(f"{name}: restart failed, next try in {delay}s: {redact(str(e))}")
    return out


def _terminate(pidfile: Path, what: str, timeout: float = 60) -> str:
    pid = pid_alive(pidfile)
    if pid is None:
        pidfile.unlink(missing_ok=True)
        return f"{what}: not running"
    end(pid, timeout)
    pidfile.unlink(missing_ok=True)
    return f"{what}: stopped"


def down(s: Settings) -> list[str]:
    """Stop the supervisor (so nothing comes back), then what `up` started, in reverse order."""
    run_dir, _ = _dirs(s)
    with _stack_lock(s):
        return [
            _terminate(run_dir / "supervisor.pid", "supervisor", timeout=10),
            "buildbot worker: " + ("stopped" if buildbot_worker.stop(s, worker_dir(s)) else "not running"),
            "buildbot master: " + ("stopped" if control.stop(s) else "not running"),
            mailsink_down(s),
            _terminate(flower.pidfile(s), "flower", timeout=20),
            _terminate(run_dir / "celery-beat.pid", "celery beat"),
            _terminate(run_dir / "celery-worker.pid", "celery worker", timeout=120),
            redis_down(s),
        ]


def _redis_reachable(s: Settings) -> bool:
    addr = _redis_address(s)
    return addr is None or _listening(*addr)


def status(s: Settings) -> list[str]:
    run_dir, _ = _dirs(s)

    def line(what: str, pid: int | None) -> str:
        return f"{what}: " + (f"running (pid {pid})" if pid else "stopped")

    redis_pid = pid_alive(run_dir / "redis.pid")
    return [
        line("redis", redis_pid),
        line("celery worker", pid_alive(run_dir / "celery-worker.pid")),
        line("celery beat", pid_alive(run_dir / "celery-beat.pid")),
        line("mail sink", pid_alive(mailsink.pidfile(s))) if mailsink.wanted(s) else
        f"mail sink: none ([smtp] host {s.smtp.host})",
        line("buildbot master", control.running(s)),
        line("buildbot worker", buildbot_worker.running(worker_dir(s))),
        line("supervisor", pid_alive(run_dir / "supervisor.pid")),
        flower.flower_status(s),
        *(flower.status_lines(s) if redis_pid or _redis_reachable(s) else ["celery queues: redis is not running"]),
    ]
