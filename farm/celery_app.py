"""The farm's Celery app, shared by every role's tasks: Redis broker and result backend, beat schedule,
and the options every task is declared with (`RELIABLE`).

Start workers with `celery -A farm.celery_app worker` and the schedule with
`celery -A farm.celery_app beat`: the app includes pipeline/, which registers every role's tasks,
declares how they follow each other and sets the beat schedule. Settings come from farm.config ([celery] and [store]);
the broker and result URLs get the farm's Redis password (farm.secrets.effective_redis_url).
Tasks are acknowledged late and rejected when their pool process is lost, so a task whose
process dies mid-training is delivered again at once; a worker main process that vanished
without a word stops renewing the lease on its messages (farm/lease.py), and a live
worker's sweep redelivers them within `visibility_timeout` plus one sweep interval.
"""

from __future__ import annotations

import random

from celery import Celery, Task
from celery.schedules import crontab

from farm import lease
from farm.config import Settings, load_settings
from farm.errors import FarmError, StoreError
from farm.objectstore import CorruptObject, MissingObject
from farm.secrets import effective_redis_url


def schedule_from(text: str) -> crontab:
    """A crontab from "minute hour day_of_month month_of_year day_of_week"."""
    fields = text.split()
    if len(fields) != 5:
        raise FarmError(f"celery.retrain_schedule {text!r}: expected 5 crontab fields")
    minute, hour, dom, month, dow = fields
    try:
        return crontab(minute=minute, hour=hour, day_of_month=dom, month_of_year=month, day_of_week=dow)
    except ValueError as e:
        raise FarmError(f"celery.retrain_schedule {text!r}: {e}") from None


def _transport_options(visibility_timeout: int) -> dict[str, int]:
    """Redis redelivery: kombu sweeps for abandoned tasks every 10 x 10 s; sweep faster for short timeouts.

    The sweep's mutex normally expires after 300 s; a worker killed while holding it would stall
    every other sweep that long, so for short timeouts it lives half a timeout (restoring stays
    safe without it: kombu restores each message in a WATCH transaction).
    """
    options = {"visibility_timeout": visibility_timeout}
    if visibility_timeout < 1000:
        options |= {"unacked_restore_interval": max(1, visibility_timeout // 10), "unacked_restore_throttle": 1,
                    "unacked_mutex_expire": max(5, visibility_timeout // 2)}
    return options


def make_app(settings: Settings | None = None) -> Celery:
    s = settings or load_settings()
    app = Celery("mlgo_farm_vocab", broker=effective_redis_url(s.celery.broker_url, s),
                 backend=effective_redis_url(s.celery.result_backend, s),
                 include=["pipeline"])  # the farm's one composition root (tests/test_layout.py)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_track_started=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_extended=True,
        result_expires=14 * 24 * 3600,
        broker_transport_options=_transport_options(s.celery.visibility_timeout),
        broker_connection_retry_on_startup=True,
        timezone="UTC",
    )
    return app


RETRY_BASE = 1.0  # seconds before the first retry; each retry waits about twice as long as the one before
RETRY_MAX = 300.0


def retry_delay(retries: int, base: float = RETRY_BASE, cap: float = RETRY_MAX) -> float:
    """base * 2**retries, times a jitter in [1, 1.5) so that delays still grow on every retry, capped."""
    return round(min(cap, base * 2**retries * (1 + random.random() / 2)), 1)


class ReliableTask(Task):
    """Retries (of object-store failures) wait `retry_delay`: exponential backoff with jitter."""

    def retry(self, args=None, kwargs=None, exc=None, throw=True, eta=None, countdown=None, max_retries=None,
              **options):
        if countdown is None and eta is None:
            countdown = retry_delay(self.request.retries)
        return super().retry(args, kwargs, exc, throw, eta, countdown, max_retries, **options)


#: The options every farm task is declared with: late acknowledgement under the lease (farm/lease.py),
#: object-store failures retried with backoff, bad input and corrupt objects failed at once.
RELIABLE = {
    "base": ReliableTask,
    "autoretry_for": (StoreError,),
    "dont_autoretry_for": (MissingObject, CorruptObject),
    "max_retries": 10,
    "acks_late": True,
    "reject_on_worker_lost": True,
}


def will_retry(task: Task, exc: BaseException) -> bool:
    """Whether Celery's autoretry will run `task` again after `exc`."""
    return (isinstance(exc, task.autoretry_for) and not isinstance(exc, task.dont_autoretry_for)
            and task.request.retries < task.max_retries)


lease.install()
app = make_app()
