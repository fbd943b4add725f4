"""pipeline/: beat's schedule and what it starts, through the farm's Celery app (redis-server, `celery worker`
subprocesses, moto S3 over HTTP behind a proxy: the fixtures of tests/vocabgen/test_celery.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.artifacts import VOCABULARIES
from farm.celery_app import schedule_from
from farm.config import load_settings
from pipeline import make_app  # the farm's app with the schedule the pipeline declares
from tests.vocabgen.conftest import _pystow_home, csrc_corpus_dir, ir_dataset, s3_proxy  # noqa: F401  (fixtures)
from tests.vocabgen.test_celery import TINY_FLAGS, Farm, farm, workers  # noqa: F401  (the farm and its workers)


def test_schedule_retrains_when_the_dataset_changed(farm: Farm, workers, csrc_corpus_dir: Path, toolchain,  # noqa: F811
                                                     tmp_path: Path) -> None:
    from workers.dataset import publish as publish_dataset
    from workers.triplets import build_dataset

    workers.append(farm.worker("w1"))
    assert farm.cli("vocab", "retrain", "--kind", "ir", "--wait", *TINY_FLAGS).returncode == 0
    newer = build_dataset(csrc_corpus_dir, tmp_path / "o0", "ir", toolchain, opt_levels=["O0"])
    new_id = publish_dataset(newer, farm.store)
    app = make_app(load_settings(env=farm.env))
    started = app.send_task("vocabgen.tasks.scheduled_retrain", args=["ir"]).get(timeout=60)
    assert started["status"] == "started" and started["dataset_id"] == new_id
    published = app.AsyncResult(started["task_id"]).get(timeout=240)  # the default recipe, 1000 epochs
    assert published["created"]
    latest = json.loads(farm.store.get("vocab/ir/latest.json"))
    assert latest["dataset_id"] == new_id and latest["version"] == published["version"] and latest["dimension"] == 75
    assert len(VOCABULARIES.read_index(farm.store)) == 2


def test_beat_schedule_comes_from_the_config(tmp_path: Path) -> None:
    s = load_settings(tmp_path / "none.toml", env={"MLGO_FARM_CELERY_RETRAIN_SCHEDULE": "30 4 * * 1"})
    app = make_app(s)
    entry = app.conf.beat_schedule["retrain-mir"]
    assert entry["task"] == "vocabgen.tasks.scheduled_retrain" and entry["args"] == ("mir",)
    assert entry["schedule"] == schedule_from("30 4 * * 1")
    deliver = app.conf.beat_schedule["deliver-alerts"]  # queued alerts never wait for another run's end
    assert (deliver["task"], deliver["schedule"]) == ("regression.tasks.deliver_alerts", 60.0)
    assert app.conf.task_acks_late and app.conf.task_reject_on_worker_lost
    from farm.errors import FarmError

    with pytest.raises(FarmError, match="expected 5 crontab fields"):
        schedule_from("weekly")
