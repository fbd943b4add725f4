"""Celery monitoring for the single-machine stack: Flower on loopback, and the queue lines of `stack status`.

Flower (`celery -A farm.celery_app flower`) shows the vocabulary workers and their tasks. It
listens on 127.0.0.1 only and runs read-only (`read_only`: no shutdown, revoke, pool or rate
changes from its pages), and with no login configured its HTTP API stays refused (Flower 2 wants
`FLOWER_UNAUTHENTICATED_API` for that, which the stack never sets, and removes from the environment it
inherits, with every other `FLOWER_*` variable): anyone who reaches it may
look, never act. Its settings are in a config file Flower reads (`--conf`); the Redis password
reaches it only through the Celery app (farm.secrets.effective_redis_url), never on its command
line. (Flower's `broker_api` is RabbitMQ's management API; for Redis it reads the broker itself.)

`status_lines` is what `mlgo-farm stack status` adds for Celery: messages waiting in the broker's
queue, messages delivered and not yet acknowledged (a task running or held under its lease), and
the tasks each worker says it is running.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
import urllib.request
from pathlib import Path

from farm.atomic import write_atomic
from farm.config import Settings
from farm.errors import FarmError
from farm.secrets import effective_redis_url, redact
from master.procs import farm_env, pid_alive, venv_tool

CELERY_APP = "farm.celery_app"
HOST = "127.0.0.1"
#: Kombu's Redis transport: the default queue's list, and the hash of delivered, unacknowledged messages.
QUEUE, UNACKED = "celery", "unacked"


def enabled(s: Settings) -> bool:
    """Whether the stack runs Flower (`[celery] flower_port` 0 turns it off; a negative port is a mistake)."""
    if s.celery.flower_port < 0:
        raise FarmError(f"[celery] flower_port must be 0 (no Flower) or a TCP port, got {s.celery.flower_port}")
    return s.celery.flower_port > 0


def url(s: Settings) -> str | None:
    """Where Flower answers (on the master's machine), or None when it is turned off."""
    return f"http://{HOST}:{s.celery.flower_port}/" if enabled(s) else None


def pidfile(s: Settings) -> Path:
    return s.var_dir / "run" / "flower.pid"


def config_text(s: Settings) -> str:
    """Flower's --conf file (Python; values written as literals, read by tornado's option parser)."""
    values = {"address": HOST, "port": s.celery.flower_port, "read_only": True, "persistent": False}
    lines = [f"{k} = {v!r}" for k, v in values.items()]
    return "# written by `mlgo-farm stack up`\n" + "\n".join(lines) + "\n"


def flower_env(s: Settings) -> dict[str, str]:
    """The farm's environment without FLOWER_* variables: Flower reads every option from them (and they
    beat nothing the --conf file leaves unset), so an inherited FLOWER_UNAUTHENTICATED_API would open
    its HTTP API and FLOWER_BASIC_AUTH or FLOWER_URL_PREFIX would change what the farm promises."""
    return {k: v for k, v in farm_env(s).items() if not k.startswith("FLOWER_")}


def _healthy(s: Settings) -> bool:
    with contextlib.suppress(OSError), urllib.request.urlopen(f"{url(s)}healthcheck", timeout=2) as r:
        return r.status == 200
    return False


def up(s: Settings, timeout: float = 60) -> str:
    """Start Flower in its own session (it has no --detach), then wait for its health check."""
    if not enabled(s):
        return "flower: off ([celery] flower_port = 0)"
    pid = pid_alive(pidfile(s))
    if pid:
        return f"flower: already running (pid {pid}) at {url(s)}"
    run_dir, log_dir = s.var_dir / "run", s.var_dir / "log"
    run_dir.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    conf = run_dir / "flowerconfig.py"
    write_atomic(conf, config_text(s), mode=0o600)
    log = log_dir / "flower.log"
    argv = [venv_tool("celery"), "--workdir", str(s.var_dir), "-A", CELERY_APP, "flower", f"--conf={conf}"]
    with open(log, "ab") as logf:
        proc = subprocess.Popen(argv, env=flower_env(s), stdin=subprocess.DEVNULL, stdout=logf,
                                stderr=subprocess.STDOUT, start_new_session=True)
    write_atomic(pidfile(s), f"{proc.pid}\n")
    deadline = time.monotonic() + timeout
    while not _healthy(s):
        if proc.poll() is not None:
            pidfile(s).unlink(missing_ok=True)
            raise FarmError(f"flower exited with {proc.returncode} before it answered; see {log}")
        if time.monotonic() > deadline:
            raise FarmError(f"flower not ready after {timeout:g}s; see {log}")
        time.sleep(0.2)
    return f"flower: started (pid {proc.pid}) at {url(s)} (read-only, loopback); log {log}"


def status_lines(s: Settings, timeout: float = 2.0) -> list[str]:
    """Queue depth and active tasks, as the broker and the workers report them (one line when unreachable)."""
    import redis

    client = redis.Redis.from_url(effective_redis_url(s.celery.broker_url, s), socket_connect_timeout=1,
                                  socket_timeout=5)
    try:
        waiting, unacked = client.llen(QUEUE), client.hlen(UNACKED)
    except redis.RedisError as e:
        return [f"celery queues: broker unreachable ({redact(str(e))})"]
    finally:
        client.close()
    lines = [f"celery queue {QUEUE}: {waiting} waiting, {unacked} delivered and not yet acknowledged"]
    from farm.celery_app import make_app

    app = make_app(s)  # these settings' broker, not whichever the process imported the farm's app with
    try:
        active = app.control.inspect(timeout=timeout).active() or {}
    except Exception as e:  # the broker went away between the two questions
        return [*lines, f"celery active tasks: unknown ({redact(str(e))})"]
    finally:
        app.close()
    if not active:
        lines.append("celery active tasks: none (no worker answered)")
    now = time.time()
    for worker, tasks in sorted(active.items()):
        if not tasks:
            lines.append(f"celery active on {worker}: none")
        for t in tasks:
            started = t.get("time_start")
            age = f", running {now - started:.0f}s" if isinstance(started, int | float) else ""
            lines.append(f"celery active on {worker}: {t.get('name')} {t.get('id')}{age}")
    return lines


def flower_status(s: Settings) -> str:
    if not enabled(s):
        return "flower: off"
    pid = pid_alive(pidfile(s))
    return f"flower: running (pid {pid}) at {url(s)}" if pid else "flower: stopped"

