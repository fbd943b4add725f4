"""The Celery app of the vocabulary role: Redis broker and result backend, beat schedule.

Start workers with `celery -A vocabgen.celery_app worker` and the schedule with
`celery -A vocabgen.celery_app beat`. Settings come from farm.config ([celery] and [store]);
the broker and result URLs get the farm's Redis password (farm.secrets.effective_redis_url).
Tasks are acknowledged late and rejected when their pool process is lost, so a task whose
process dies mid-training is delivered again at once; a worker main process that vanished
without a word stops renewing the lease on its messages (vocabgen/lease.py), and a live
worker's sweep redelivers them within `visibility_timeout` plus one sweep interval.
"""

from __future__ import annotations

from celery import Celery
from celery.schedules import crontab

from farm.config import Settings, load_settings
from farm.errors import FarmError
from farm.secrets import effective_redis_url
from vocabgen import lease
from vocabgen.dataset import KINDS

#: When beat looks for staged files whose chain is gone (hourly; the age limit is the setting).
CLEAN_STAGING_SCHEDULE = crontab(minute=41)


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
                 include=["vocabgen.tasks", "policyhost.tasks", "policyhost.train_tasks", "regression.tasks"])
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
        beat_schedule={
            **{
                f"retrain-{kind}": {
                    "task": "vocabgen.tasks.scheduled_retrain",
                    "schedule": schedule_from(s.celery.retrain_schedule),
                    "args": (kind,),
                }
                for kind in KINDS
            },
            "clean-staging": {"task": "vocabgen.tasks.clean_staging", "schedule": CLEAN_STAGING_SCHEDULE},
        },
    )
    return app


lease.install()
app = make_app()
