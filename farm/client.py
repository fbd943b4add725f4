"""The Celery client side (`vocab retrain`): short connection retries, one-line errors when Redis is away,
and what a waiting client can say about the step it waits for.

Only the process that enqueues and waits is changed; workers keep Celery's patient reconnecting.
Enqueueing fails at once when Redis is away (nothing was sent). Waiting rides out an outage: the
stack's supervisor restarts a Redis that died within seconds, with its append-only file, so the
chain, its results and its workers carry on; a waiting client that gave up at the first refused
connection reported a failure while the chain published. So a wait that loses Redis tries again
with growing pauses for up to `[celery] client_reconnect` seconds of continuous outage, then fails
in one line.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from celery import Celery
from celery.result import AsyncResult

from farm import lease
from farm.errors import FarmError
from farm.secrets import redact

log = logging.getLogger(__name__)

#: One quick retry instead of Celery's 20 (result backend) or 100 (broker) with growing sleeps.
FAST_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}


class BrokerError(FarmError):
    """The Celery broker or result backend (Redis) cannot be reached."""


def one_line(e: BaseException) -> str:
    return redact(" ".join(str(e).split()) or type(e).__name__)


def configure_client(app: Celery, timeout: float = 3.0) -> None:
    """Make this process's producer and result backend give up after one short retry."""
    app.conf.update(
        broker_connection_timeout=timeout,
        broker_connection_max_retries=1,
        task_publish_retry_policy=FAST_RETRY,
        redis_socket_connect_timeout=timeout,
        result_backend_transport_options={**(app.conf.result_backend_transport_options or {}),
                                          "retry_policy": FAST_RETRY},
    )


def check_reachable(app: Celery, timeout: float = 3.0) -> None:
    """Prove the broker and the result backend answer, or raise a one-line BrokerError."""
    broker = redact(app.conf.broker_url)
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0.2, interval_max=0.2,
                                   timeout=timeout)
    except Exception as e:  # kombu and redis raise their own connection errors
        raise BrokerError(f"cannot reach the Celery broker at {broker}: {one_line(e)}") from None
    backend_url = redact(str(app.conf.result_backend))
    try:
        client = getattr(app.backend, "client", None)
        if client is not None and hasattr(client, "ping"):
            client.ping()
    except Exception as e:
        raise BrokerError(f"cannot reach the Celery result backend at {backend_url}: {one_line(e)}") from None


def prepare_client(app: Celery) -> None:
    configure_client(app)
    check_reachable(app)


class StepWatch:
    """One line on the chain step a client waits for, from Celery's own sources.

    The result state says pending, started (and on which worker), retrying or done; a ping
    (`celery inspect ping`, at most every `ping_every` seconds) says which workers are alive;
    the broker says whether the message is queued or held under a lease (farm/lease.py).
    For a held message the lease decides, not the ping: it is renewed by the worker main
    process whatever its pool does (a solo worker is too busy to answer pings), and it stops
    the moment that process dies, while a ping's answer is up to `ping_every` seconds old. A
    started task whose lease lapsed is lost: the next sweep of a live worker puts it back in
    the queue.
    """

    def __init__(self, app: Celery, ping_every: float = 10.0) -> None:
        self.app, self.ping_every = app, ping_every
        self._workers: list[str] = []
        self._pinged = float("-inf")
        self._redis = None

    def workers(self) -> list[str]:
        if time.monotonic() - self._pinged >= self.ping_every:
            replies = self.app.control.ping(timeout=0.5) or []
            self._workers = sorted(name for reply in replies for name in reply)
            self._pinged = time.monotonic()
        return self._workers

    def _online(self) -> str:
        workers = self.workers()
        return f"{len(workers)} worker(s) online: {', '.join(workers)}" if workers else "no Celery worker is running"

    def describe(self, result: AsyncResult, name: str = "") -> str:
        """One line on `result`'s task (`name`: what to call it while its result does not know its name yet)."""
        name = (result.name or name or "task").rpartition(".")[2]
        state = result.state
        self._redis = self._redis or lease.redis_client(self.app)
        seen = [x for x in lease.sightings(self.app, self._redis) if x.task_id == result.id]
        held = next((x for x in seen if x.where == "held"), None)
        queued = any(x.where == "queued" for x in seen)
        live = held is not None and held.renewed(self.app)
        if queued:
            where = "its message is back in the queue"
        elif held is not None and not live:
            where = "the next sweep of a live worker puts its message back in the queue"
        else:
            where = "the broker has no message of it left"
        if state == "STARTED":
            info = result.info if isinstance(result.info, dict) else {}
            host = info.get("hostname") or "an unknown worker"
            if live or (held is None and not queued and host in self.workers()):
                return f"{name} running on {host}"
            return f"{name} lost: its worker {host} is gone; {where} ({self._online()})"
        if state == "RETRY":
            why = one_line(result.info) if isinstance(result.info, BaseException) else "an error"
            return f"{name} retrying after {why} ({'held by a worker' if live else self._online()})"
        if live:
            return f"{name} reserved by a worker, not started yet"
        if queued:
            return f"{name} queued ({self._online()})"
        if held is not None:
            return f"{name} lost: the worker that took it is gone; {where} ({self._online()})"
        return f"{name} {state.lower()}: {where}"


#: The key under which a long task keeps every progress line so far, in its state while it runs and in its
#: result (policy training: round, best so far). The whole list, not the last line: a client polls, and a
#: line replaced between two polls (or by the result) would be lost.
PROGRESS = "progress"


#: The key under which a task tells the stage it is in and how far, `{"name", "done", "total"}` (a training's
#: epochs): a client waiting for it shows a bar or plain lines (farm/progress.py `Stages`).
STAGE = "stage"


class StageTeller:
    """A task's side of STAGE: its state updated at most every `every` seconds and at each stage's end (a
    Redis write per epoch would cost more than a small training's epoch)."""

    def __init__(self, task: Any, every: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.task, self.every, self.clock = task, every, clock
        self.last = float("-inf")

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = self.clock()
        if (done < total and now - self.last < self.every) or not self.task.request.id:
            return
        self.last = now
        self.task.update_state(state="STARTED", meta={"hostname": self.task.request.hostname, "pid": os.getpid(),
                                                      STAGE: {"name": stage, "done": done, "total": total}})


def _told_stage(result: AsyncResult) -> tuple[str, int, int] | None:
    """The stage a running task told (STAGE), if any and well-formed."""
    info = result.info if result.state == "STARTED" else None
    told = info.get(STAGE) if isinstance(info, dict) else None
    if not isinstance(told, dict):
        return None
    name, done, total = told.get("name"), told.get("done"), told.get("total")
    if isinstance(name, str) and isinstance(done, int) and isinstance(total, int) and 0 <= done <= total:
        return name, done, total
    return None


class ProgressLines:
    """Logs each task's progress lines once, in order, whether read from its state or its result."""

    def __init__(self, chain_id: str) -> None:
        self.chain_id = chain_id
        self.shown: dict[str, int] = {}

    def show(self, result: AsyncResult, name: str) -> None:
        info = result.info if result.state in ("STARTED", "SUCCESS") else None
        lines = info.get(PROGRESS) if isinstance(info, dict) else None
        if not isinstance(lines, list):
            return
        done = self.shown.get(result.id, 0)
        for line in lines[done:]:
            log.info("retrain %s: %s: %s", self.chain_id, name, line)
        self.shown[result.id] = max(done, len(lines))


def _outage(e: BaseException) -> bool:
    """Whether `e` says Redis is unreachable (refused, reset, loading its data after a restart)."""
    import redis
    from kombu.exceptions import OperationalError

    return isinstance(e, redis.ConnectionError | redis.TimeoutError | OperationalError | OSError | socket.timeout)


class Outage:
    """Continuous unreachability of Redis while waiting: back-off between attempts, and a limit."""

    def __init__(self, limit: float, task_id: str) -> None:
        self.limit, self.task_id = limit, task_id
        self.since: float | None = None
        self.pause = 0.5

    def lost(self, e: BaseException) -> float:
        """Seconds to pause before trying again; a BrokerError once the outage outlasts the limit."""
        now = time.monotonic()
        if self.since is None:
            self.since = now
            log.warning("lost Redis while waiting for task %s (%s); reconnecting for up to %gs",
                        self.task_id, one_line(e), self.limit)
        if now + self.pause - self.since > self.limit:
            raise BrokerError(f"lost the Celery broker while waiting for task {self.task_id}: {one_line(e)} "
                              f"(still after {now - self.since:.0f}s of reconnecting; "
                              f"[celery] client_reconnect = {self.limit:g})")
        pause, self.pause = self.pause, min(2 * self.pause, 5.0)
        return pause

    def back(self) -> None:
        if self.since is not None:
            log.warning("Redis answers again after %.0fs; still waiting for task %s",
                        time.monotonic() - self.since, self.task_id)
        self.since, self.pause = None, 0.5


def wait_chain(result: AsyncResult, timeout: float, watch: StepWatch | None = None,
               names: tuple[str, ...] = (), reconnect: float = 0, desc: str | None = None) -> dict[str, Any]:
    """Wait for the last task of the chain; a failed earlier task fails the wait with its message.

    With a `watch` (client.StepWatch), every change of the current step's status is logged (shown
    with `mlgo-farm -v`, as builder steps run: queued with no worker, running on W, retrying,
    lost with its worker), and a timeout says where the chain stands instead of guessing.
    `names` are the chain's steps, first to last. A Redis lost while waiting is tried again for up
    to `reconnect` seconds (see the module; 0: the first failure ends the wait).
    With `desc` (the verb), the chain's steps done show as progress on stderr (farm/progress.py), a line per step,
    and so does the stage a running step tells (STAGE: a training's epochs).
    """
    deadline = time.monotonic() + timeout
    outage = Outage(reconnect, result.id)
    chain_results = []
    r = result
    while r is not None:
        chain_results.append(r)
        r = r.parent
    chain_results.reverse()
    stage = told = None
    if desc is not None:
        from farm.progress import Stages, steps

        stage = steps(len(chain_results), f"{desc}: chain steps done"
                      + (f" ({' → '.join(names)})" if len(names) == len(chain_results) else ""))
        told = Stages(desc)
    try:
        status, look_at = "", 0.0
        progress = ProgressLines(result.id)
        while True:
            try:
                for i, r in enumerate(chain_results):
                    if watch is not None:
                        progress.show(r, (r.name or (names[i] if i < len(names) else "task")).rpartition(".")[2])
                    if r.failed():
                        err = r.result
                        if isinstance(err, FarmError):
                            raise err
                        raise FarmError(f"retrain task {r.name or r.id} failed: {type(err).__name__}: {err}")
                done = next((i for i, r in enumerate(chain_results) if not r.successful()), len(chain_results))
                if stage is not None and done > stage.done:
                    stage.advance(done)
                if told is not None and done < len(chain_results):
                    running = chain_results[done]
                    at = _told_stage(running)
                    if at is not None:
                        told(f"{(running.name or (names[done] if done < len(names) else 'task')).rpartition('.')[2]}"
                             f" {at[0]}", at[1], at[2])
                if result.successful():
                    return result.result
                now = time.monotonic()
                if watch is not None and (now >= look_at or now >= deadline):
                    step = next((i for i, r in enumerate(chain_results) if not r.successful()), len(chain_results) - 1)
                    text = watch.describe(chain_results[step], names[step] if step < len(names) else "")
                    if text != status:
                        log.info("retrain %s: %s", result.id, text)
                        status = text
                    look_at = now + 1
                outage.back()
            except FarmError:
                raise
            except Exception as e:
                if not (reconnect and _outage(e)):
                    raise
                pause = outage.lost(e)
                if time.monotonic() + pause >= deadline:
                    status = f"Redis unreachable for {time.monotonic() - (outage.since or 0):.0f}s ({one_line(e)})"
                    break
                time.sleep(pause)  # back-off between reconnection attempts, not synchronisation
                continue
            if now >= deadline:
                break
            time.sleep(0.5)
    finally:
        if stage is not None:
            stage.close()
        if told is not None:
            told.close()
    raise FarmError(f"retrain did not finish within {timeout:g}s: {status or 'still running'} (task {result.id})")


def submit(app: Celery, send: Callable[[], AsyncResult], what: str) -> AsyncResult:
    """Prove Redis answers, then enqueue with `send()`; a broker that fails now is one line naming `what`."""
    prepare_client(app)
    try:
        return send()
    except FarmError:
        raise
    except Exception as e:  # kombu and redis raise their own connection errors
        raise BrokerError(f"cannot enqueue {what}: {one_line(e)}") from None


def wait_for(app: Celery, result: AsyncResult, timeout: float, names: tuple[str, ...],
             reconnect: float | None = None, desc: str | None = None) -> dict[str, Any]:
    """wait_chain with a StepWatch, riding out a Redis restart for up to `reconnect` seconds (default
    `[celery] client_reconnect`); a result backend lost for longer is one line naming the task."""
    if reconnect is None:
        from farm.config import load_settings

        reconnect = load_settings().celery.client_reconnect
    try:
        return wait_chain(result, timeout, StepWatch(app), names, reconnect, desc)
    except FarmError:
        raise
    except Exception as e:
        raise BrokerError(f"lost the Celery result backend while waiting for task {result.id}: {one_line(e)}") from None
