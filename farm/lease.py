"""Leases on the messages a Celery worker holds, and where the broker's Redis has a task's message.

Why a lease: kombu's Redis transport acknowledges late by keeping each delivered message in the
`unacked` hash and its delivery time in the `unacked_index` sorted set; the `restore_visible`
sweep of any live worker pushes back to its queue every message whose score is older than
`visibility_timeout` (kombu 5.7, kombu/transport/redis.py: QoS.append, QoS.restore_visible). A
long timeout lets a SIGKILLed worker's task sit unseen for that long; a short one redelivers a
task that is still running. So the timeout is short (60 s) and the worker main process, the
process that will acknowledge, moves the score of every message it holds to "now" every
timeout/4 seconds: running tasks, tasks reserved for the pool, and retries waiting for their
countdown (a retry can wait up to 300 s, longer than the timeout, and would otherwise be
redelivered while its worker holds it). When that process dies the renewals stop with it, and a
live worker's sweep redelivers its messages within timeout + sweep interval. Pool children never
renew (prefork children also die with their parent: Celery sets PR_SET_PDEATHSIG), so nothing
keeps a dead worker's lease alive. Renewals use ZADD XX: a message already acknowledged or
restored is never put back in the index.

The same knowledge of kombu's key layout lets `vocab retrain --wait` tell a queued task from one
held by a live worker or lost with its worker, and the staging cleaner tell an active chain.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from celery import Celery, signals

from farm import jsonio
from farm.errors import InputError

log = logging.getLogger(__name__)
#: kombu's defaults (kombu.transport.redis.Channel), overridable with broker_transport_options.
UNACKED, UNACKED_INDEX, SEP, PRIORITY_STEPS = "unacked", "unacked_index", "\x06\x16", (0, 3, 6, 9)


def _options(app: Celery) -> dict[str, Any]:
    return dict(app.conf.broker_transport_options or {})


def visibility_timeout(app: Celery) -> float:
    return float(_options(app).get("visibility_timeout", 3600))


def renew_interval(app: Celery) -> float:
    """A quarter of the timeout: three renewals may fail (a Redis hiccup) before the sweep takes the task."""
    return max(1.0, visibility_timeout(app) / 4)


def _key(app: Celery, name: str) -> str:
    opts = _options(app)
    return opts.get("global_keyprefix", "") + opts.get(f"{name}_key", name)


def redis_client(app: Celery):
    import redis

    return redis.Redis.from_url(app.conf.broker_url, socket_connect_timeout=5, socket_timeout=10)


def held_tags() -> set[str]:
    """Delivery tags of the messages this worker main process holds unacknowledged (Celery's own worker state)."""
    from celery.worker import state

    for _ in range(5):  # the sets change under the consumer thread; a copy that raced is taken again
        try:
            requests = [*state.active_requests, *state.reserved_requests, *state.scheduled_requests]
            break
        except RuntimeError:
            continue
    else:
        return set()
    tags = set()
    for req in requests:
        message = getattr(req, "message", None)
        tag = getattr(message, "delivery_tag", None)
        if tag:
            tags.add(tag)
    return tags


def renew(client, app: Celery, tags: Iterable[str], now: float | None = None) -> int:
    """Move the index score of `tags` to `now`; returns how many were still there."""
    tags = list(tags)
    if not tags:
        return 0
    when = time.time() if now is None else now
    return client.zadd(_key(app, UNACKED_INDEX), dict.fromkeys(tags, when), xx=True, ch=True)


class Renewer(threading.Thread):
    """The worker main process's renewal loop (a daemon thread: it ends with the process, which is the point)."""

    def __init__(self, app: Celery) -> None:
        super().__init__(name="mlgo-farm-lease", daemon=True)
        self.app, self.stopped = app, threading.Event()

    def run(self) -> None:
        import redis

        client, failing = redis_client(self.app), False
        interval = renew_interval(self.app)
        log.info("lease: renewing held messages every %.0fs (visibility timeout %.0fs)", interval,
                 visibility_timeout(self.app))
        while not self.stopped.wait(interval):
            try:
                renew(client, self.app, held_tags())
            except redis.RedisError as e:
                if not failing:
                    log.warning("lease: cannot renew in Redis (%s); retrying every %.0fs", e, interval)
                failing = True
            else:
                if failing:
                    log.info("lease: renewing again")
                failing = False
        client.close()


_renewer: Renewer | None = None


def _start(sender=None, **_: Any) -> None:
    global _renewer
    if _renewer is None and sender is not None:
        _renewer = Renewer(sender.app)
        _renewer.start()


def _stop(**_: Any) -> None:
    if _renewer is not None:
        _renewer.stopped.set()


def install() -> None:
    """Renew from every worker main process of this app (worker_ready fires there, never in a pool child)."""
    signals.worker_ready.connect(_start, weak=False, dispatch_uid="mlgo-farm-lease-start")
    signals.worker_shutdown.connect(_stop, weak=False, dispatch_uid="mlgo-farm-lease-stop")


@dataclass(frozen=True)
class Sighting:
    """A task message in Redis: `queued`, or `held` by a worker whose lease was renewed `age` seconds ago."""

    where: str
    task_id: str
    root_id: str | None
    age: float | None = None

    def renewed(self, app: Celery) -> bool:
        """Held, and renewed on time: a lease that missed two renewals belongs to a worker that is gone."""
        return self.where == "held" and self.age is not None and self.age < 2 * renew_interval(app)


def _headers(raw: bytes | str) -> dict[str, Any]:
    try:
        payload = jsonio.loads(raw, "a queued message")
    except (InputError, TypeError):  # not JSON (too deep, too long a number too): no headers to read
        return {}
    if isinstance(payload, list) and payload:  # the unacked hash stores [message, exchange, routing key]
        payload = payload[0]
    headers = payload.get("headers") if isinstance(payload, dict) else None
    return headers if isinstance(headers, dict) else {}


def _queues(app: Celery) -> list[str]:
    prefix = _options(app).get("global_keyprefix", "")
    names = list(app.amqp.queues) or [app.conf.task_default_queue]
    return [prefix + (name if pri == 0 else f"{name}{SEP}{pri}") for name in names for pri in PRIORITY_STEPS]


def sightings(app: Celery, client=None) -> Iterator[Sighting]:
    """Every task message in the broker: waiting in this app's queues, or delivered and not yet acknowledged."""
    own = client is None
    client = client or redis_client(app)
    try:
        now = time.time()
        scores = dict(client.zrange(_key(app, UNACKED_INDEX), 0, -1, withscores=True))
        for tag, raw in client.hscan_iter(_key(app, UNACKED)):
            h = _headers(raw)
            if h.get("id"):
                score = scores.get(tag)
                yield Sighting("held", h["id"], h.get("root_id"), None if score is None else now - score)
        for queue in _queues(app):
            for raw in client.lrange(queue, 0, -1):
                h = _headers(raw)
                if h.get("id"):
                    yield Sighting("queued", h["id"], h.get("root_id"))
    finally:
        if own:
            client.close()
