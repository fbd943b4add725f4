"""Celery: retrain the inliner warm-start policy when its inputs change, validate it, publish it.

`retrain` trains as `policy train-bc` does, on the nightly corpus (the corpus the vocabulary's
dataset was made from, unless one is named), with IR2Vec features from an IR vocabulary the
farm published (`latest` by default); validates it (policyhost/release.py) and publishes it
(policyhost/publish.py) under the farm's publish lock. It runs after every IR vocabulary
publish that leaves it `latest`, or waiting only for its policy, and on demand (`mlgo-farm policy retrain`):
pipeline/ declares both chains.

With `[gate] policy_size` on, the policy is published *pending* its size check, and `retrain` is
the first link of a chain whose second is the check (regression/tasks.py `size_gate`). The check
settles the policy's state and the `policy_size` rule of the vocabulary it was trained with
(vocabgen/gate.py), so a vocabulary becomes `latest` only with a policy that does not grow code.
The default vocabulary is the *newest*: `latest`, or a newer IR version waiting only for that rule.

Idempotent like the vocabulary chain, and with its machinery (farm.celery_app.RELIABLE: late
acknowledgement under the lease of farm/lease.py, store failures retried with backoff): the
trained model goes to a local directory named by everything that decides its bytes (vocabulary
version, corpus, parameters, LLVM), written once under that directory's lock, so a redelivered or
repeated request reuses it; publishing finds an existing version by its content hash, so two
identical requests publish one version.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from farm.atomic import atomic_dir
from farm.celery_app import RELIABLE, app
from farm.client import PROGRESS
from farm.errors import FarmError, InputError
from farm.locks import dir_lock, made_once
from policytrain.problem import INLINE_SIZE
from policytrain.units import LEVEL

log = logging.getLogger(__name__)
#: What `policy retrain` may override: the training recipe (policytrain/recipes.py RECIPES; default
#: `[policy] recipe`) and how many modules of the nightly corpus train (sampled by name hash; default: the recipe's
#: cap on every training package, `TrainingRecipe.max_modules`, 12 in `cxx`: the nightly corpus is one package among
#: sixteen, and at 400 of LLVM's TUs (11 s to search one on 2 cores, nine C modules' worth) it added over an hour
#: to every search)
DEFAULTS = {"recipe": None, "max_modules": None}
ADVISOR = INLINE_SIZE.advisor
#: The vocabulary `policy retrain` trains with unless one is named: `latest`, or a newer one awaiting this policy.
NEWEST = "newest"


def params_from(overrides: dict[str, Any] | None) -> dict[str, Any]:
    unknown = set(overrides or {}) - set(DEFAULTS)
    if unknown:
        raise InputError(f"unknown policy training parameter(s): {', '.join(sorted(unknown))}")
    return {**DEFAULTS, **{k: v for k, v in (overrides or {}).items() if v is not None}}


def training_corpus(vocab_manifest: dict[str, Any], corpus: str | None, var_dir: Path, toolchain,
                    sample: int | None = None) -> tuple[Path, dict]:
    """The corpus to log decisions on, and what the manifest records of it.

    A named `corpus` (a corpus directory or a directory of C files) wins; else the vocabulary's
    dataset's corpus: its source directory when this host has it, or compiled again from where it
    came from (a Debian package, LLVM's git repository at the commit, a CMake tree), only the
    `sample` of modules training will use (workers.corpus.sample_names, the rule `max_modules`
    samples by), so retraining on LLVM's 2,780 TUs compiles 12 of them (the `cxx` recipe's cap). ccache makes
    even that cheap on the worker that built the dataset.
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
    if source.startswith(("debian:", "git:", "cmake:")):
        key = hashlib.sha256(json.dumps([source, facts.get("digest"), sample, LEVEL]).encode()).hexdigest()[:16]
        out = var_dir / "policy" / "corpus" / key
        made_once(out, "corpus_description.json",
                  lambda: _rebuild(source, facts.get("lineage") or {}, out, toolchain, var_dir, sample))
        return out, {**record, "corpus_source": source, "corpus_sample": sample}
    if source and Path(source).is_dir():
        return Path(source), {**record, "corpus_source": source}
    raise InputError(f"no training corpus for the policy: the vocabulary's dataset {dataset_id} came from "
                     f"{source or 'an unknown source'}, which this host cannot rebuild; name one with --corpus")


def _rebuild(source: str, lineage: dict[str, Any], out: Path, toolchain, var_dir: Path, sample: int | None) -> None:
    """Compile `sample` modules of the corpus `source` names again, as its lineage says it was made, but by an -Oz
    front end: the vocabulary's corpus is `-O2` bitcode (IR diversity), the policy's must carry `-Oz`'s attributes
    (policytrain/units.py LEVEL)."""
    from workers import cmake_corpus, debsrc, llvm_source
    from workers.corpus import from_debian

    include, defines = tuple(lineage.get("include") or ()), tuple(lineage.get("defines") or ())
    kind, _, rest = source.partition(":")
    if kind == "debian" and debsrc.is_llvm(rest.split(":")[0]):
        llvm_source.corpus(rest.split(":")[0], out, toolchain, checkout=var_dir / llvm_source.GIT,
                           debsrc_dir=var_dir / "debsrc", include=include, defines=defines, sample=sample,
                           level=LEVEL)
    elif kind == "debian":
        from_debian(rest.split(":")[0], out, toolchain, var_dir / "debsrc", sample=sample, include=include,
                    level=LEVEL)
    elif kind == "git" and rest.startswith(f"{llvm_source.GIT}@") and lineage.get("commit"):
        llvm_source.corpus(llvm_source.GIT, out, toolchain, rev=str(lineage["commit"]),
                           repo=str(lineage.get("repository") or llvm_source.LLVM_REPO),
                           checkout=var_dir / llvm_source.GIT, debsrc_dir=var_dir / "debsrc", include=include,
                           defines=defines, sample=sample, level=LEVEL)
    elif kind == "cmake" and Path(rest).is_dir():
        cmake_corpus.from_cmake(Path(rest), out, toolchain, include=include, defines=defines, sample=sample,
                                level=LEVEL,
                                lineage={k: v for k, v in lineage.items() if k not in ("include", "defines")})
    else:
        raise InputError(f"no training corpus for the policy: this host cannot rebuild {source}; name one with "
                         f"--corpus")


def _work_key(vocab_version: str, corpus: Path, params: dict[str, Any], llvm: dict[str, Any]) -> str:
    what = json.dumps({"vocab": vocab_version, "corpus": str(corpus), "params": params, "llvm": llvm,
                       "record": "signed"}, sort_keys=True)
    return hashlib.sha256(what.encode()).hexdigest()[:16]


def resolve_vocab(store, vocab: str) -> str:
    """`newest` as the version it names now (InputError when there is no IR vocabulary); others unchanged."""
    from farm.artifacts import VOCABULARIES
    from farm.artifacts.verdict import POLICY_SIZE

    if vocab != NEWEST:
        return vocab
    found = VOCABULARIES.newest(store, "ir", POLICY_SIZE)
    if found is None:
        raise InputError(f"no IR vocabulary is published to {store.url}, nor one waiting for its policy")
    return found


def nightly_package(vocab_manifest: dict[str, Any], corpus: str | None, settings, toolchain,
                    sample: int) -> tuple[Any, dict]:
    """The nightly corpus (the vocabulary's dataset's, or `corpus`) as a training package, and its record.

    Named after its Debian package when it is one, so a package that validates or evaluates policies
    is never trained on (the splits check it by name). None when this host cannot rebuild it: the
    declared training packages train alone, and the record says why.
    """
    from policytrain.trainer import package

    try:
        source, training = training_corpus(vocab_manifest, corpus, settings.var_dir, toolchain, sample)
    except InputError as e:
        if corpus:
            raise
        return None, {"nightly_corpus": None, "nightly_corpus_skipped": str(e)}
    origin = str(training.get("corpus_source") or "")
    name = origin.split(":")[1] if origin.startswith("debian:") else (Path(origin).name or "nightly")
    if not (Path(source) / "corpus_description.json").is_file():  # a directory of C sources: compile it once
        from workers.corpus import from_sources

        what = json.dumps([str(Path(source).absolute()), training.get("corpus_digest"), LEVEL])  # where, what, how
        key = hashlib.sha256(what.encode()).hexdigest()[:16]
        sources, out = Path(source), Path(settings.var_dir) / "policy" / "corpus" / f"sources-{key}"
        source = made_once(out, "corpus_description.json",
                           lambda: from_sources(sources, out, toolchain, level=LEVEL))
    return package(name, source, sample), training


def train_validated(settings, toolchain, *, vocab: str = NEWEST, corpus: str | None = None,
                    params: dict[str, Any] | None = None,
                    progress: Callable[[str], None] | None = None) -> tuple[Path, dict[str, Any]]:
    """Train (or reuse) the inliner policy for these inputs and validate it; (model path, manifest).

    Training packages: the nightly corpus (unless it is a validation or evaluation package) plus
    `[policy] train` (or the declared split); validation: `[policy] validation` (or declared).
    """
    from farm.artifacts import VOCABULARIES
    from farm.objectstore import store_from_settings
    from policyhost import release
    from policyhost.launcher import published_vocab
    from policytrain import recipes, trainer
    from policytrain.explore import ExploreCache
    from policytrain.fanout import thread_fanout
    from policytrain.overlap import check_specs

    p = params_from(params)
    rec_name = p["recipe"] or settings.policy.recipe
    rec = recipes.recipe(rec_name)
    store = store_from_settings(settings)
    vocab_manifest = VOCABULARIES.show(store, "ir", resolve_vocab(store, vocab))
    vocab_file = published_vocab(vocab_manifest["version"])
    held = {s: trainer.specs(s, getattr(settings.policy, s) or None, rec) for s in ("validation", "evaluation")}
    train = trainer.specs("train", settings.policy.train or None, rec)
    most = p["max_modules"] or rec.max_modules  # the nightly corpus is a training package like the others
    nightly, training = nightly_package(vocab_manifest, corpus, settings, toolchain, most)
    reserved = {n.partition("=")[0] for names in held.values() for n in names}
    if nightly is not None and nightly.name in reserved:
        training = {**training, "nightly_corpus_skipped": f"{nightly.name} validates or evaluates policies"}
        nightly = None
    var = Path(settings.var_dir)
    trainer.check_names({"train": [*([nightly.name] if nightly else []), *(n.partition("=")[0] for n in train)],
                         **{k: [n.partition("=")[0] for n in v] for k, v in held.items()}})
    # the recipe's name and everything it sets: a recipe retuned in a new release trains again
    # the cap the corpus was sampled with, not how it was asked for: `--max-modules 50` is the nightly's default
    key = _work_key(vocab_manifest["version"], Path(str(training.get("corpus_source"))), {**p, "max_modules": most,
                    "recipe": rec_name, "recipe_params": rec.as_json(), "train": train, **held,
                    "cap": settings.gate.policy_cap}, toolchain.describe())
    work = settings.var_dir / "policy" / "trained" / ADVISOR / key
    model = work / "model.onnx"
    with dir_lock(work):
        if not model.with_suffix(".json").is_file():
            check_specs({"train": train, **held}, var / "debsrc")  # code shared across splits: decided, or one line
            splits = trainer.Splits(
                (*([nightly] if nightly else []), *(trainer.package_corpus(n, var, toolchain, rec.max_modules)
                                                    for n in train)),
                tuple(trainer.package_corpus(n, var, toolchain) for n in held["validation"]),
                tuple(trainer.package_corpus(n, var, toolchain) for n in held["evaluation"]))
            fanout = thread_fanout(toolchain, ExploreCache.under(settings.var_dir), settings.policy.train_jobs)
            with atomic_dir(work, "model.json") as tmp:
                log.info("training the %s policy (recipe %s) with vocabulary %s", ADVISOR, rec_name,
                         vocab_manifest["version"])
                trainer.train_to(tmp / "model.onnx", toolchain, splits, rec_name, fanout, vocab=vocab_file,
                                 vocab_version=vocab_manifest["version"], progress=progress or log.info,
                                 cap=settings.gate.policy_cap, desc="policy retrain")  # its stages: worker's stderr
        result = release.read_result(model)
        validation = release.validate(model, result, toolchain, ADVISOR, vocab_file)
        manifest = release.manifest_for(model, result, advisor=ADVISOR, vocab_version=vocab_manifest["version"],
                                        training={**training, "max_modules": most},
                                        validation=validation, weights=_weights_beside(model))
    return model, manifest


#: How long past its soft time limit a retrain may take to stop before Celery kills its process.
HARD_LIMIT_GRACE = 300


def time_limits(limit: int) -> dict[str, int]:
    """Celery's time limits of `retrain` ([policy] retrain_time_limit, read by the worker as it starts).

    A training that hangs or runs far past the night must not hold a worker, nor the vocabulary waiting
    for its policy, forever: the soft limit raises inside the training, which stops its compiles
    (fanout.thread_fanout) and tells the vocabulary why; the hard one is for a training that cannot.
    """
    return {"soft_time_limit": limit, "time_limit": limit + HARD_LIMIT_GRACE} if limit else {}


def _configured_limits() -> dict[str, int]:
    from farm.config import load_settings

    return time_limits(load_settings().policy.retrain_time_limit)


def _weights_beside(model: Path) -> bytes | None:
    """The native host's weights the trainer wrote beside the model (OUTPUT.weights); for a model trained before the
    trainer wrote them (reused from its directory), the same numbers read from the ONNX graph; None when it is not a
    network the native host reads. The same bytes each call: the manifest records them, publishing hands them in."""
    from policytrain.native_export import SUFFIX, weights_from_onnx

    path = Path(model).with_suffix(SUFFIX)
    if path.is_file():
        return path.read_bytes()
    try:
        return weights_from_onnx(Path(model).read_bytes())
    except Exception as e:  # a model the native host cannot read is still published, without weights
        log.info("no native weights for %s: %s", model, e)
        return None


@app.task(name="policyhost.tasks.retrain", bind=True, **RELIABLE, **_configured_limits())
def retrain(self, vocab: str = NEWEST, corpus: str | None = None,
            params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train, validate and publish the inliner warm-start policy (pending its size check when the gate
    has one); the publish result with timings and metrics."""
    from farm.artifacts.verdict import POLICY_SIZE
    from farm.config import load_settings
    from farm.locks import publish_lock
    from farm.objectstore import store_from_settings
    from farm.toolchain import Toolchain
    from policyhost import publish as policy

    s = load_settings()
    store = store_from_settings(s)
    t0 = time.monotonic()
    lines: list[str] = []

    def progress(line: str) -> None:
        """Each stage's line in the worker's log and, with every line before it, in the task's state and its
        result: `--wait` (the builder's step) shows every line however seldom it polls."""
        log.info("%s", line)
        lines.append(line.splitlines()[0] if line else line)
        self.update_state(state="STARTED", meta={"hostname": self.request.hostname, "pid": os.getpid(),
                                                 PROGRESS: lines})

    try:
        model, manifest = train_validated(s, Toolchain.from_settings(s), vocab=vocab, corpus=corpus, params=params,
                                          progress=progress)
    except InputError as e:  # a lasting failure: the vocabulary waiting for this policy must not wait forever
        _settle_vocab_failed(s, store, vocab, str(e))
        raise
    except SoftTimeLimitExceeded:
        why = f"the training passed its time limit ([policy] retrain_time_limit, {self.soft_time_limit} s)"
        _settle_vocab_failed(s, store, vocab, why)
        raise FarmError(f"policy retrain stopped: {why}") from None
    trained = time.monotonic() - t0
    with publish_lock(store, s.celery.broker_url, settings=s):
        result = policy.publish(store, model.read_bytes(), manifest,
                                pending=POLICY_SIZE if s.gate.policy_size else None, weights=_weights_beside(model))
    log.info("%s (%.1fs)", policy.summary(result), time.monotonic() - t0)
    return {**result, "vocab_version": manifest["vocab_version"], "metrics": manifest["metrics"],
            "seconds": {"train_and_validate": round(trained, 1), "total": round(time.monotonic() - t0, 1)},
            "summary": policy.summary(result), PROGRESS: lines}


def _settle_vocab_failed(settings, store, vocab: str, why: str) -> None:
    """Record on an IR vocabulary waiting for its policy's size check that no policy could be trained
    (vocabgen/gate.py `no_policy_trained`: held back only when another vocabulary is in force)."""
    from farm.artifacts import VOCABULARIES
    from farm.artifacts.verdict import POLICY_SIZE
    from farm.locks import publish_lock
    from vocabgen.gate import no_policy_trained

    try:
        version = resolve_vocab(store, vocab)
        entry = VOCABULARIES.entry(store, "ir", version)
    except InputError:
        return
    if POLICY_SIZE not in (((entry or {}).get("gate") or {}).get("pending") or ()):
        return
    with publish_lock(store, settings.celery.broker_url, settings=settings):
        in_force = (VOCABULARIES.read_latest(store, "ir") or {}).get("version")
        VOCABULARIES.settle(store, "ir", version, no_policy_trained(version, in_force, why))


def check_request(vocab: str = NEWEST, corpus: str | None = None, params: dict[str, Any] | None = None) -> None:
    """The worker's own checks of a retrain request, run before anything is enqueued."""
    from farm.artifacts.kinds import check_version_name

    checked = params_from(params)
    if checked["recipe"] is not None:
        from policytrain.recipes import recipe

        recipe(checked["recipe"])
    check_version_name(vocab)
    if corpus is not None and not Path(corpus).is_dir():
        raise InputError(f"training corpus {corpus} is not a directory")
