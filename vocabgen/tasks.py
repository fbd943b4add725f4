"""Celery tasks: train -> validate -> publish, the weekly check, and the on-demand trigger.

The three tasks hand over through a staging area in the object store
(`vocab-staging/{kind}/{sha256}/{chain id}/`), so they may run on different machines. Every
task is idempotent: a redelivered train reuses the finished local result (or trains again to
the same bytes), and publish finds an existing version by its content hash. Object-store
failures are retried with exponential backoff; bad input fails at once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import tempfile
from pathlib import Path
from typing import Any

from celery import chain
from celery.result import AsyncResult

from farm.config import Settings, load_settings
from farm.errors import StoreError
from farm.store import MissingObject, ObjectStore, store_from_settings
from farm.toolchain import Toolchain
from vocabgen.celery_app import app
from vocabgen.dataset import check_kind

log = logging.getLogger(__name__)
STAGING = "vocab-staging"
RELIABLE = {
    "autoretry_for": (StoreError,),
    "dont_autoretry_for": (MissingObject,),
    "retry_backoff": 2,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 10,
    "acks_late": True,
    "reject_on_worker_lost": True,
}


def _env() -> tuple[Settings, ObjectStore]:
    s = load_settings()
    return s, store_from_settings(s)


def _stage_keys(staged: dict[str, Any]) -> tuple[str, str]:
    return f"{staged['staging']}/vocab.json", f"{staged['staging']}/manifest.json"


def _drop_staging(store: ObjectStore, staged: dict[str, Any]) -> None:
    for key in _stage_keys(staged):
        with contextlib.suppress(StoreError):
            store.delete(key)


def _already_published(store: ObjectStore, staged: dict[str, Any]) -> str | None:
    from vocabgen.publish import find_by_hash

    return find_by_hash(store, staged["kind"], staged["sha256"])


@app.task(name="vocabgen.tasks.train", bind=True, **RELIABLE)
def train(self, kind: str, dataset: str = "latest", params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train from a dataset (local path, id or `latest` in the store) and stage the result."""
    from vocabgen.build import MANIFEST, read_local, train_vocabulary, write_local
    from vocabgen.dataset import resolve_dataset
    from vocabgen.params import TrainParams
    from vocabgen.training import ensure_pystow_home

    s, store = _env()
    check_kind(kind)
    ensure_pystow_home(s.var_dir)
    p = TrainParams.from_dict(params)
    ds = resolve_dataset(dataset, kind, store, s.var_dir / "vocab" / "datasets")
    work = s.var_dir / "vocab" / "trained" / kind / f"{ds.id}-{p.resolved(kind).digest()}"
    if not (work / MANIFEST).is_file():
        log.info("training %s vocabulary from dataset %s (%s)", kind, ds.id, self.request.id)
        data, manifest = train_vocabulary(ds, p)
        write_local(work, data, manifest)
    data, manifest = read_local(work)
    staged = {
        "kind": kind,
        "sha256": manifest["sha256"],
        "dataset_id": ds.id,
        "staging": f"{STAGING}/{kind}/{manifest['sha256']}/{self.request.id or 'local'}",
    }
    vocab_key, manifest_key = _stage_keys(staged)
    store.put(vocab_key, data, "application/json")
    store.put(manifest_key, json.dumps(manifest).encode(), "application/json")
    log.info("trained %s vocabulary %s from dataset %s", kind, manifest["sha256"][:12], ds.id)
    return staged


@app.task(name="vocabgen.tasks.validate", bind=True, **RELIABLE)
def validate(self, staged: dict[str, Any]) -> dict[str, Any]:
    """Check the staged vocabulary with LLVM; a failure deletes it and stops the chain."""
    from vocabgen.validate import validate_vocab
    from vocabgen.vocabfile import ValidationError

    s, store = _env()
    vocab_key, manifest_key = _stage_keys(staged)
    try:
        data, manifest = store.get(vocab_key), json.loads(store.get(manifest_key))
    except MissingObject:
        if _already_published(store, staged):
            return staged
        raise
    with tempfile.TemporaryDirectory(prefix="mlgo-farm-vocab-") as tmp:
        path = Path(tmp) / "vocab.json"
        path.write_bytes(data)
        try:
            manifest["validation"] = validate_vocab(staged["kind"], path, Toolchain.from_settings(s))
        except ValidationError:
            _drop_staging(store, staged)
            raise
    store.put(manifest_key, json.dumps(manifest).encode(), "application/json")
    return staged


@app.task(name="vocabgen.tasks.publish", bind=True, **RELIABLE)
def publish(self, staged: dict[str, Any]) -> dict[str, Any]:
    """Publish the staged, validated vocabulary under the publish lock."""
    from vocabgen import publish as pub
    from vocabgen.locks import publish_lock

    s, store = _env()
    vocab_key, manifest_key = _stage_keys(staged)
    with publish_lock(store, s.celery.broker_url):
        try:
            data, manifest = store.get(vocab_key), json.loads(store.get(manifest_key))
        except MissingObject:
            version = _already_published(store, staged)
            if not version:
                raise
            result = {"kind": staged["kind"], "version": version, "sha256": staged["sha256"], "created": False}
        else:
            result = pub.publish(store, data, manifest)
    _drop_staging(store, staged)
    log.info("published %s vocabulary %s (new: %s)", result["kind"], result["version"], result["created"])
    return result


def retrain_chain(kind: str, dataset: str = "latest", params: dict[str, Any] | None = None):
    """The signature of train -> validate -> publish."""
    check_kind(kind)
    return chain(train.s(kind, dataset, params or {}), validate.s(), publish.s())


def enqueue_retrain(kind: str, dataset: str = "latest", params: dict[str, Any] | None = None) -> AsyncResult:
    """The on-demand trigger (builders call `mlgo-farm vocab retrain`)."""
    return retrain_chain(kind, dataset, params).apply_async()


def _latest(store: ObjectStore, key: str) -> dict[str, Any] | None:
    try:
        return json.loads(store.get(key))
    except MissingObject:
        return None


@app.task(name="vocabgen.tasks.scheduled_retrain", **RELIABLE)
def scheduled_retrain(kind: str) -> dict[str, Any]:
    """Retrain from the newest dataset only if it differs from the latest vocabulary's dataset."""
    _, store = _env()
    check_kind(kind)
    dataset = _latest(store, f"datasets/{kind}/latest.json")
    if not dataset:
        return {"kind": kind, "status": "no-dataset"}
    vocab = _latest(store, f"vocab/{kind}/latest.json") or {}
    if vocab.get("dataset_id") == dataset.get("id"):
        return {"kind": kind, "status": "unchanged", "dataset_id": dataset.get("id")}
    res = enqueue_retrain(kind, str(dataset["id"]))
    return {"kind": kind, "status": "started", "dataset_id": dataset["id"], "task_id": res.id}
