"""Celery tasks: train -> validate -> publish, and whether the nightly retrain is due (chained in pipeline/).

The three tasks hand over through a staging area in the object store
(`vocab-staging/{kind}/{sha256}/{chain id}/{run}/`: vocab.json, manifest.json and staged.json,
which says when and where), so they may run on different machines. Every task is idempotent: a
redelivered train reuses the finished local result (or trains again to the same bytes), and
publish finds an existing version by its content hash. A train delivered twice while both runs
are alive (its worker lost Redis for longer than the lease) stages each run in its own `{run}`
directory, so the two chains never overwrite each other's validated manifest; the second
publish finds the first one's version. Object-store failures are retried with exponential
backoff (`retry_delay`); bad input fails at once, and every terminal failure deletes the staged
files. Whatever a killed worker staged is removed by `clean_staging` (beat, hourly) once it is
older than the configured age and no message of its chain is left in the broker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from celery import Task

from farm import lease
from farm.artifacts.kinds import DATASET, VOCAB
from farm.artifacts.versions import get_json
from farm.celery_app import RELIABLE, app, will_retry
from farm.client import StageTeller
from farm.config import Settings, load_settings
from farm.errors import StoreError
from farm.objectstore import CorruptObject, MissingObject, ObjectStore, store_from_settings
from farm.progress import Stages
from farm.toolchain import Toolchain
from vocabgen.dataset import check_kind

log = logging.getLogger(__name__)
STAGING = "vocab-staging"
#: Staged files older than this (seconds) whose chain has no message left in the broker are removed;
#: `[celery] staging_max_age` overrides it.
MARKER = "staged.json"


def _env() -> tuple[Settings, ObjectStore]:
    s = load_settings()
    return s, store_from_settings(s)


def _stage_keys(staged: dict[str, Any]) -> tuple[str, str]:
    return f"{staged['staging']}/vocab.json", f"{staged['staging']}/manifest.json"


def _drop_staging(store: ObjectStore, staged: dict[str, Any]) -> None:
    """The marker goes last: a directory without one is never half written, only half removed."""
    for key in (*_stage_keys(staged), f"{staged['staging']}/{MARKER}"):
        with contextlib.suppress(StoreError):
            store.delete(key)


@contextlib.contextmanager
def _staging_dropped_on_failure(task: Task, store: ObjectStore, staged: dict[str, Any]) -> Iterator[None]:
    """A terminal failure (not one that will be retried) deletes the staged files: nothing is left behind."""
    try:
        yield
    except Exception as e:
        if not will_retry(task, e):
            log.warning("dropping staged %s vocabulary %s: %s", staged["kind"], staged["sha256"][:12], e)
            _drop_staging(store, staged)
        raise


def _already_published(store: ObjectStore, staged: dict[str, Any]) -> str | None:
    from farm.artifacts import VOCABULARIES

    return VOCABULARIES.find_by_hash(store, staged["kind"], staged["sha256"])


@app.task(name="vocabgen.tasks.train", bind=True, **RELIABLE)
def train(self, kind: str, dataset: str = "latest", params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train from a dataset (local path, id or `latest` in the store) and stage the result."""
    from vocabgen.build import train_once, train_vocabulary
    from vocabgen.dataset import resolve_dataset
    from vocabgen.params import TrainParams, configured
    from vocabgen.training import ensure_pystow_home
    from vocabgen.warm import WarmStart, from_latest

    s, store = _env()
    check_kind(kind)
    ensure_pystow_home(s.var_dir)
    # the worker's recipe ([vocab] recipe: the nightly's, or `make demo`'s), each explicit parameter over it
    p = TrainParams.from_dict(params, configured(s))
    ds = resolve_dataset(dataset, kind, store, s.var_dir / "vocab" / "datasets")
    resolved = p.resolved(kind)
    # a retrain starts from the previous `latest` (vocabgen/warm.py): which one is part of what was trained
    warm = from_latest(store, kind, ds.entities, resolved.dim) if resolved.warm_start else None
    start = f"-warm-{warm.digest()}" if isinstance(warm, WarmStart) else ""
    work = s.var_dir / "vocab" / "trained" / kind / f"{ds.id}-{resolved.digest()}{start}"

    def make() -> tuple[bytes, dict[str, Any]]:
        log.info("training %s vocabulary from dataset %s (%s), %s", kind, ds.id, self.request.id,
                 f"starting from {warm.record['from']}" if isinstance(warm, WarmStart) else "cold")
        tell = StageTeller(self)  # the client waiting for the chain shows the epochs (farm/client.py STAGE)
        with Stages(f"vocab train {kind}") as here:  # and the worker's log

            def on_epoch(stage: str, done: int, total: int) -> None:
                here(stage, done, total)
                tell(stage, done, total)

            return train_vocabulary(ds, p, warm=warm, on_epoch=on_epoch, recipe=s.vocab.recipe)

    data, manifest = train_once(work, make)
    chain_id = self.request.root_id or self.request.id or "local"
    staged = {
        "kind": kind,
        "sha256": manifest["sha256"],
        "dataset_id": ds.id,
        "staging": f"{STAGING}/{kind}/{manifest['sha256']}/{chain_id}/{uuid.uuid4().hex[:12]}",
    }
    vocab_key, manifest_key = _stage_keys(staged)
    with _staging_dropped_on_failure(self, store, staged):
        marker = {"chain": chain_id, "task": self.request.id, "host": socket.gethostname(), "staged_at": time.time()}
        store.put(f"{staged['staging']}/{MARKER}", json.dumps(marker).encode(), "application/json")
        store.put(vocab_key, data, "application/json")
        store.put(manifest_key, json.dumps(manifest).encode(), "application/json")
    log.info("trained %s vocabulary %s from dataset %s", kind, manifest["sha256"][:12], ds.id)
    return staged


@app.task(name="vocabgen.tasks.validate", bind=True, **RELIABLE)
def validate(self, staged: dict[str, Any]) -> dict[str, Any]:
    """Check the staged vocabulary with LLVM; a failure deletes it and stops the chain."""
    from vocabgen.validate import validate_vocab

    s, store = _env()
    vocab_key, manifest_key = _stage_keys(staged)
    with _staging_dropped_on_failure(self, store, staged):
        try:
            data, manifest = store.get(vocab_key), get_json(store, manifest_key)
        except MissingObject:
            if _already_published(store, staged):
                return staged
            raise
        with tempfile.TemporaryDirectory(prefix="mlgo-farm-vocab-") as tmp:
            path = Path(tmp) / "vocab.json"
            path.write_bytes(data)
            manifest["validation"] = validate_vocab(staged["kind"], path, Toolchain.from_settings(s))
        store.put(manifest_key, json.dumps(manifest).encode(), "application/json")
    return staged


@app.task(name="vocabgen.tasks.publish", bind=True, **RELIABLE)
def publish(self, staged: dict[str, Any]) -> dict[str, Any]:
    """Publish the staged, validated vocabulary under the publish lock.

    The result carries the promotion gate's verdict (`state`: latest, candidate or superseded;
    `gate`: passed, reasons, checks), so whoever waits on the chain sees whether `latest` moved
    and why not; a candidate is a successful publish, not a failed task.
    """
    from farm.locks import publish_lock
    from vocabgen import publish as pub

    s, store = _env()
    vocab_key, manifest_key = _stage_keys(staged)
    with _staging_dropped_on_failure(self, store, staged), publish_lock(store, s.celery.broker_url, settings=s):
        try:
            data, manifest = store.get(vocab_key), get_json(store, manifest_key)
        except MissingObject:
            version = _already_published(store, staged)
            if not version:
                raise
            result = {"kind": staged["kind"], "version": version, "sha256": staged["sha256"], "created": False}
        else:
            result = pub.publish(store, data, manifest)
    _drop_staging(store, staged)
    log.info("%s", pub.summary(result))
    if result.get("state") == "candidate" and not (result.get("gate") or {}).get("pending"):
        log.warning("%s vocabulary %s is a candidate, not latest: %s (mlgo-farm vocab promote %s %s --reason ... "
                    "overrides)", result["kind"], result["version"], "; ".join(result["gate"]["reasons"]),
                    result["kind"], result["version"])
    return result


def _latest(store: ObjectStore, key: str) -> dict[str, Any] | None:
    try:
        return get_json(store, key)
    except MissingObject:
        return None


def retrain_due(kind: str) -> dict[str, Any]:
    """Whether the nightly retrain (pipeline.scheduled_retrain) should train `kind` again: `due` (with the
    dataset to train from) only if the newest dataset differs from the latest vocabulary's dataset.

    A version already trained from that dataset that stayed a candidate (the promotion gate kept
    it from `latest`) is not trained again every night: the same dataset and recipe give the same
    verdict. Promote it, or publish a new dataset.
    """
    from farm.artifacts import VOCABULARIES

    _, store = _env()
    check_kind(kind)
    dataset = _latest(store, DATASET.latest_key(kind))
    if not dataset:
        return {"kind": kind, "status": "no-dataset"}
    vocab = _latest(store, VOCAB.latest_key(kind)) or {}
    if vocab.get("dataset_id") == dataset.get("id"):
        return {"kind": kind, "status": "unchanged", "dataset_id": dataset.get("id")}
    tried = [v for v in VOCABULARIES.read_index(store)
             if v.get("kind") == kind and v.get("dataset_id") == dataset.get("id")]
    if tried:
        return {"kind": kind, "status": "candidate", "dataset_id": dataset.get("id"),
                "versions": [v.get("version") for v in tried]}
    return {"kind": kind, "status": "due", "dataset_id": dataset["id"]}


def _staging_dirs(store: ObjectStore) -> dict[str, list[str]]:
    """Staged keys by directory (`vocab-staging/{kind}/{sha256}/{chain}/{run}`, or the older `.../{chain}`)."""
    dirs: dict[str, list[str]] = {}
    for key in store.list(f"{STAGING}/"):
        dirs.setdefault(key.rpartition("/")[0], []).append(key)
    return dirs


def _staged_at(store: ObjectStore, directory: str, keys: list[str]) -> float | None:
    """When the directory was staged (its marker), None when unknown (no marker, or an unreadable one)."""
    if f"{directory}/{MARKER}" not in keys:
        return None
    try:
        return float(get_json(store, f"{directory}/{MARKER}")["staged_at"])
    except (MissingObject, CorruptObject, ValueError, TypeError, KeyError, OverflowError):
        return None


def clean_stale_staging(store: ObjectStore, active_chains: set[str], max_age: float,
                        now: float | None = None) -> dict[str, Any]:
    """Remove staged directories older than `max_age` whose chain is not in `active_chains`.

    A directory without a readable marker has no known age: it is an older layout or one whose
    removal was cut short, and it goes when its chain is not active.
    """
    now = time.time() if now is None else now
    removed, active, recent = [], [], []
    for directory, keys in sorted(_staging_dirs(store).items()):
        parts = directory.split("/")
        chain = parts[3] if len(parts) > 3 else ""
        if chain in active_chains:
            active.append(directory)
            continue
        staged_at = _staged_at(store, directory, keys)
        if staged_at is not None and now - staged_at < max_age:
            recent.append(directory)
            continue
        marker = [k for k in keys if k.endswith(f"/{MARKER}")]
        for key in [k for k in keys if k not in marker] + marker:
            store.delete(key)
        log.warning("removed staged files of chain %s (%s): %s", chain or "?",
                    "age unknown" if staged_at is None else f"staged {now - staged_at:.0f}s ago", directory)
        removed.append(directory)
    return {"removed": removed, "active": active, "recent": recent}


def _staging_max_age(s: Settings) -> float:
    return float(s.celery.staging_max_age)


@app.task(name="vocabgen.tasks.clean_staging", **RELIABLE)
def clean_staging(max_age: float | None = None) -> dict[str, Any]:
    """Beat's hourly sweep of staged files whose chain is gone (a killed worker, a lost message, an old layout).

    A chain is active while any of its messages (by root id) is queued or held unacknowledged in
    the broker: running, reserved, or waiting for a retry; its staged files are then kept at any age.
    """
    s, store = _env()
    active = {x.root_id or x.task_id for x in lease.sightings(app)}
    return clean_stale_staging(store, active, _staging_max_age(s) if max_age is None else max_age)
