"""The Celery client side (`vocab retrain`): short connection retries, one-line errors when Redis is away,
and what a waiting client can say about the step it waits for.

Only the process that enqueues and waits is changed; workers keep Celery's patient reconnecting.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from celery import Celery
from celery.result import AsyncResult

from farm.errors import FarmError
from farm.secrets import redact
from vocabgen import lease

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
    the broker says whether the message is queued or held under a lease (vocabgen/lease.py).
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


def wait_chain(result: AsyncResult, timeout: float, watch: StepWatch | None = None,
               names: tuple[str, ...] = ()) -> dict[str, Any]:
    """Wait for the last task of the chain; a failed earlier task fails the wait with its message.

    With a `watch` (client.StepWatch), every change of the current step's status is logged (shown
    with `mlgo-farm -v`, as builder steps run: queued with no worker, running on W, retrying,
    lost with its worker), and a timeout says where the chain stands instead of guessing.
    `names` are the chain's steps, first to last.
    """
    deadline = time.monotonic() + timeout
    chain_results = []
    r = result
    while r is not None:
        chain_results.append(r)
        r = r.parent
    chain_results.reverse()
    status, look_at = "", 0.0
    while True:
        for r in chain_results:
            if r.failed():
                err = r.result
                if isinstance(err, FarmError):
                    raise err
                raise FarmError(f"retrain task {r.name or r.id} failed: {type(err).__name__}: {err}")
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
        if now >= deadline:
            break
        time.sleep(0.5)
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


def wait_for(app: Celery, result: AsyncResult, timeout: float, names: tuple[str, ...]) -> dict[str, Any]:
    """wait_chain with a StepWatch; a result backend lost while waiting is one line naming the task."""
    try:
        return wait_chain(result, timeout, StepWatch(app), names)
    except FarmError:
        raise
    except Exception as e:
        raise BrokerError(f"lost the Celery result backend while waiting for task {result.id}: {one_line(e)}") from None
