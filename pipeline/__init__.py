"""The farm's pipeline, declared once: which Celery task follows which, across the roles.

    beat (nightly, per kind) ─▶ scheduled_retrain: a new dataset? ─▶ vocab_chain
    vocab_chain:  vocabgen train ─▶ validate ─▶ publish ─┐ (link: runs after it, the chain's result stays publish's)
                                                         └▶ retrain_policy_after_vocab: an IR vocabulary in force,
                                                            or waiting only for its policy? ─▶ policy_chain
    policy_chain: policytrain retrain (policytrain/tasks.py, registered as `policyhost.tasks.retrain`; publish pending
                  its size check) ─▶ regression size_check (measure, settle the policy and the vocabulary it was
                  trained with: each becomes `latest` when it holds)
    beat (hourly) ─▶ vocabgen clean_staging

Every role declares its own tasks and knows nothing of what follows them; this module is the only place
that knows the order. No role imports it except through the two doors tests/test_layout.py allows (DOORS):
the Celery app (farm/celery_app.py) includes this module, so a worker started with `celery -A farm.celery_app`
registers every role's tasks through it and beat reads the schedule declared here; and the two verbs that start
the chains import it when they run: `vocab retrain` (vocabgen/cli.py: `start_vocab_retrain`, `VOCAB_STEPS`) and
`policy retrain` (policytrain/cli.py: `start_policy_retrain`, `POLICY_STEPS`). This package has no verbs of its own.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery, chain
from celery.result import AsyncResult
from celery.schedules import crontab

from farm.celery_app import RELIABLE, app, schedule_from
from farm.client import one_line
from farm.config import Settings, load_settings
from farm.embeddings import KINDS
from policytrain import fanout  # noqa: F401  (registers the training fan-out's tasks)
from policytrain import tasks as policy
from regression import tasks as sizecheck
from vocabgen import tasks as vocab
from vocabgen.dataset import check_kind

log = logging.getLogger(__name__)

#: The steps of `vocab_chain` and `policy_chain`, first to last (what `--wait` names as they run).
VOCAB_STEPS = ("train", "validate", "publish")
POLICY_STEPS = ("retrain", "size-gate")
#: When beat looks for staged files whose chain is gone (hourly; the age limit is the setting).
CLEAN_STAGING_SCHEDULE = crontab(minute=41)


def vocab_chain(kind: str, dataset: str = "latest", params: dict[str, Any] | None = None):
    """train -> validate -> publish, and after a publish (a link: `--wait` waits for the publish only) the policy."""
    check_kind(kind)
    published = vocab.publish.s()
    published.link(retrain_policy_after_vocab.s())
    return chain(vocab.train.s(kind, dataset, params or {}), vocab.validate.s(), published)


def policy_chain(vocab_version: str = policy.NEWEST, corpus: str | None = None,
                 params: dict[str, Any] | None = None):
    """retrain -> size_check. The check runs whatever the setting: with the gate off it finds nothing
    pending and says so, so a waiting client reads one kind of result. The retrain's time limits are the worker's
    (`[policy] retrain_time_limit` where it trains), not whatever the requesting process has configured."""
    retrain = policy.retrain.s(vocab=vocab_version, corpus=corpus, params=params or {})
    return chain(retrain.set(time_limit=None, soft_time_limit=None), sizecheck.size_check.s())


def start_vocab_retrain(kind: str, dataset: str = "latest", params: dict[str, Any] | None = None) -> AsyncResult:
    """The on-demand trigger (builders call `mlgo-farm vocab retrain`) and the nightly one."""
    return vocab_chain(kind, dataset, params).apply_async()


def start_policy_retrain(vocab_version: str = policy.NEWEST, corpus: str | None = None,
                         params: dict[str, Any] | None = None) -> AsyncResult:
    """`mlgo-farm policy retrain` and a vocabulary publish: the worker's own checks, then the chain."""
    policy.check_request(vocab_version, corpus, params)
    return policy_chain(vocab_version, corpus, params).apply_async()


def on_vocab_published(result: dict[str, Any]) -> str | None:
    """After an IR vocabulary publish that left it `latest`, or a candidate waiting only for its policy's
    size check: retrain the policy with it (the chain's task id).

    A candidate the promotion gate held back for its own metrics (or an older version published
    again) does not train the nightly policy, nor does any publish with `[policy] retrain_after_vocab`
    off. A repeated publish triggers again, which costs nothing: the chain is idempotent. Never fails
    (the publish is done): a trigger that cannot be enqueued is logged, and `policy retrain` or the
    next vocabulary catches up.
    """
    from farm.artifacts.verdict import POLICY_SIZE, awaits_only

    if not load_settings().policy.retrain_after_vocab:
        return None
    in_force = result.get("latest", result.get("version")) == result.get("version")
    if result.get("kind") != "ir" or not (in_force or awaits_only(result.get("gate"), POLICY_SIZE)):
        return None
    try:
        return start_policy_retrain(str(result["version"])).id
    except Exception as e:  # kombu and redis raise their own errors; the vocabulary is published regardless
        log.warning("could not start the policy retraining after vocabulary %s: %s", result.get("version"),
                    one_line(e)[:300])
        return None


@app.task(**RELIABLE)
def retrain_policy_after_vocab(published: dict[str, Any]) -> str | None:
    """The link after `vocab_chain`'s publish: `on_vocab_published` with its result."""
    return on_vocab_published(published) if isinstance(published, dict) else None


# The name beat has always sent, and builders' `send_task` calls and queued messages still carry.
@app.task(name="vocabgen.tasks.scheduled_retrain", **RELIABLE)
def scheduled_retrain(kind: str) -> dict[str, Any]:
    """Retrain from the newest dataset only if it differs from the latest vocabulary's (vocabgen.tasks.retrain_due)."""
    due = vocab.retrain_due(kind)
    if due["status"] != "due":
        return due
    res = start_vocab_retrain(kind, str(due["dataset_id"]))
    return {**due, "status": "started", "task_id": res.id}


def beat_schedule(settings: Settings) -> dict[str, dict[str, Any]]:
    """Nightly `scheduled_retrain` of each kind (`[celery] retrain_schedule`), hourly `clean_staging`, and every
    minute the regression alerts runs queued (`deliver_alerts`: the only sender of their mails); every ten minutes
    the runs this host could not mark failed while the history was down (`sweep_unfinished`)."""
    retrain = schedule_from(settings.celery.retrain_schedule)
    return {
        **{f"retrain-{kind}": {"task": scheduled_retrain.name, "schedule": retrain, "args": (kind,)} for kind in KINDS},
        "clean-staging": {"task": vocab.clean_staging.name, "schedule": CLEAN_STAGING_SCHEDULE},
        "deliver-alerts": {"task": sizecheck.deliver_alerts.name, "schedule": sizecheck.DELIVER_EVERY},
        "sweep-unfinished": {"task": sizecheck.sweep_unfinished.name, "schedule": sizecheck.SWEEP_EVERY},
    }


def make_app(settings: Settings | None = None) -> Celery:
    """farm.celery_app.make_app with this pipeline's schedule (the app a worker or beat runs has it too)."""
    from farm.celery_app import make_app as base

    s = settings or load_settings()
    made = base(s)
    made.conf.beat_schedule = beat_schedule(s)
    return made


app.conf.beat_schedule = beat_schedule(load_settings())
