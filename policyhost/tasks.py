"""Celery: retrain the inliner warm-start policy when its inputs change, validate it, publish it.

`retrain` trains as `policy train-bc` does, on the nightly corpus (the corpus the vocabulary's
dataset was made from, unless one is named), with IR2Vec features from an IR vocabulary the
farm published (`latest` by default); validates it (policyhost/release.py) and publishes it
(policyhost/store.py) under the farm's publish lock. It runs after every IR vocabulary
publish that leaves it `latest` (`on_vocab_published`, on Celery's success signal of
vocabgen.tasks.publish) and on demand (`mlgo-farm policy retrain`).

Idempotent like the vocabulary chain, and with its machinery (vocabgen.tasks.RELIABLE: late
acknowledgement under the lease of vocabgen/lease.py, store failures retried with backoff): the
trained model goes to a local directory named by everything that decides its bytes (vocabulary
version, corpus, parameters, LLVM), written once under that directory's lock, so a redelivered or
repeated request reuses it; publishing finds an existing version by its content hash, so two
identical requests publish one version.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any

from celery.signals import task_success

from farm.atomic import atomic_dir
from farm.errors import InputError
from vocabgen.celery_app import app
from vocabgen.tasks import RELIABLE

log = logging.getLogger(__name__)
#: The warm-start recipe the nightly chain trains with; `policy retrain` may override any of it.
DEFAULTS = {"seed": 0, "epochs": 60, "holdout": 0.2, "max_modules": 400}
ADVISOR = "inline"


def params_from(overrides: dict[str, Any] | None) -> dict[str, Any]:
    unknown = set(overrides or {}) - set(DEFAULTS)
    if unknown:
        raise InputError(f"unknown policy training parameter(s): {', '.join(sorted(unknown))}")
    return {**DEFAULTS, **{k: v for k, v in (overrides or {}).items() if v is not None}}


def training_corpus(vocab_manifest: dict[str, Any], corpus: str | None, var_dir: Path, toolchain) -> tuple[Path, dict]:
    """The corpus to log decisions on, and what the manifest records of it.

    A named `corpus` (a corpus directory or a directory of C files) wins; else the vocabulary's
    dataset's corpus: its source directory when this host has it, or its Debian package compiled
    again (ccache makes that cheap on the worker that built the dataset).
    """
    facts = ((vocab_manifest.get("dataset") or {}).get("corpus")) or {}
    dataset_id = (vocab_manifest.get("lineage") or {}).get("dataset_id")
    record = {"dataset_id": dataset_id, "corpus_digest": facts.get("digest"), "corpus_lineage": facts.get("lineage")}
    if corpus:
        path = Path(corpus).absolute()
        if not path.is_dir():
            raise InputError(f"training corpus {path} is not a directory")
        return path, {**record, "corpus_source": str(path)}
    source = str(facts.get("source") or "")
    if source.startswith("debian:"):
        from workers.corpus import from_debian, load

        package = source.split(":")[1]
        out = var_dir / "policy" / "corpus" / package
        if not ((out / "corpus_description.json").is_file() and load(out).digest == facts.get("digest")):
            from_debian(package, out, toolchain, var_dir / "debsrc")
        return out, {**record, "corpus_source": source}
    if source and Path(source).is_dir():
        return Path(source), {**record, "corpus_source": source}
    raise InputError(f"no training corpus for the policy: the vocabulary's dataset {dataset_id} came from "
                     f"{source or 'an unknown source'}, which this host cannot rebuild; name one with --corpus")


def _work_key(vocab_version: str, corpus: Path, params: dict[str, Any], llvm: dict[str, Any]) -> str:
    what = json.dumps({"vocab": vocab_version, "corpus": str(corpus), "params": params, "llvm": llvm}, sort_keys=True)
    return hashlib.sha256(what.encode()).hexdigest()[:16]


def train_validated(settings, toolchain, *, vocab: str = "latest", corpus: str | None = None,
                    params: dict[str, Any] | None = None) -> tuple[Path, dict[str, Any]]:
    """Train (or reuse) the warm-start model for these inputs and validate it; (model path, manifest)."""
    from farm.store import store_from_settings
    from policyhost import release, warmstart
    from policyhost.launcher import published_vocab
    from vocabgen.locks import dir_lock
    from vocabgen.publish import show

    p = params_from(params)
    vocab_manifest = show(store_from_settings(settings), "ir", vocab)
    vocab_file = published_vocab(vocab_manifest["version"])
    source, training = training_corpus(vocab_manifest, corpus, settings.var_dir, toolchain)
    work = settings.var_dir / "policy" / "trained" / ADVISOR / _work_key(vocab_manifest["version"], source, p,
                                                                       toolchain.describe())
    model = work / "model.onnx"
    with dir_lock(work):
        if not model.with_suffix(".json").is_file():
            with atomic_dir(work, "model.json") as tmp:
                log.info("training the %s warm-start policy on %s with vocabulary %s", ADVISOR, source,
                         vocab_manifest["version"])
                warmstart.train_from(source, tmp / "model.onnx", toolchain, seed=p["seed"], epochs=p["epochs"],
                                     holdout=p["holdout"], vocab=str(vocab_file), max_modules=p["max_modules"])
        result = release.read_result(model)
        validation = release.validate(model, result, toolchain, ADVISOR, vocab_file)
        manifest = release.manifest_for(model, result, advisor=ADVISOR, vocab_version=vocab_manifest["version"],
                                        training={**training, "max_modules": p["max_modules"]},
                                        validation=validation)
    return model, manifest


@app.task(name="policyhost.tasks.retrain", bind=True, **RELIABLE)
def retrain(self, vocab: str = "latest", corpus: str | None = None,
            params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train, validate and publish the inliner warm-start policy; the publish result with timings and metrics."""
    from farm.config import load_settings
    from farm.store import store_from_settings
    from farm.toolchain import Toolchain
    from policyhost import store as pstore
    from vocabgen.locks import publish_lock

    s = load_settings()
    store = store_from_settings(s)
    t0 = time.monotonic()
    model, manifest = train_validated(s, Toolchain.from_settings(s), vocab=vocab, corpus=corpus, params=params)
    trained = time.monotonic() - t0
    with publish_lock(store, s.celery.broker_url, settings=s):
        result = pstore.publish(store, model.read_bytes(), manifest)
    log.info("%s (%.1fs)", pstore.summary(result), time.monotonic() - t0)
    return {**result, "vocab_version": manifest["vocab_version"], "metrics": manifest["metrics"],
            "seconds": {"train_and_validate": round(trained, 1), "total": round(time.monotonic() - t0, 1)},
            "summary": pstore.summary(result)}


def enqueue_retrain(vocab: str = "latest", corpus: str | None = None, params: dict[str, Any] | None = None):
    from vocabgen.versions import check_version_name

    params_from(params)  # the worker's own checks, before anything is enqueued
    check_version_name(vocab)
    if corpus is not None and not Path(corpus).is_dir():
        raise InputError(f"training corpus {corpus} is not a directory")
    return retrain.apply_async(kwargs={"vocab": vocab, "corpus": corpus, "params": params or {}})


def on_vocab_published(result: dict[str, Any]) -> str | None:
    """After an IR vocabulary publish that left it `latest`: retrain the policy with it (the task id).

    A candidate the promotion gate held back (or an older version published again) does not train
    the nightly policy: `latest` of the policies must read `latest` of the vocabularies. A repeated
    publish of the latest triggers again, which costs nothing: the task is idempotent.

    Called when vocabgen.tasks.publish has succeeded (`_after_publish`); never fails that publish
    (it is done): a trigger that cannot be enqueued is logged, and `policy retrain` or the next
    vocabulary catches up.
    """
    if result.get("kind") != "ir" or result.get("latest", result.get("version")) != result.get("version"):
        return None
    try:
        return enqueue_retrain(vocab=str(result["version"])).id
    except Exception as e:  # kombu and redis raise their own errors; the vocabulary is published regardless
        log.warning("could not start the policy retraining after vocabulary %s: %s", result.get("version"),
                    " ".join(str(e).split())[:300])
        return None



@task_success.connect
def _after_publish(sender=None, result=None, **_: Any) -> None:
    """Celery's success signal, in the worker that ran the vocabulary publish.

    A signal rather than a call in vocabgen/tasks.py: the vocabulary role never imports the policy
    role (tests/test_layout.py), and the worker loads this module through the app's `include`.
    """
    if getattr(sender, "name", None) == "vocabgen.tasks.publish" and isinstance(result, dict):
        on_vocab_published(result)
