"""Train a vocabulary from a dataset into a local directory: `vocab.json` + `manifest.json`."""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from farm import jsonio
from farm.atomic import atomic_dir
from farm.errors import InputError
from farm.locks import dir_lock
from farm.signing import farm_key, sign
from farm.vocabfile import ValidationError, check_coverage, check_schema, dumps, sha256
from vocabgen import layout
from vocabgen.analogy import analogy_score
from vocabgen.compose import PART_KINDS, compose_unseen, with_parts
from vocabgen.dataset import Dataset
from vocabgen.params import TrainParams
from vocabgen.training import OnEpoch, holdout_metrics, train_all
from vocabgen.warm import WarmStart, cold

VOCAB = "vocab.json"
MANIFEST = "manifest.json"
FORMAT = 1


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {"pykeen": version("pykeen"), "torch": version("torch"), "python": platform.python_version()}


def train_vocabulary(ds: Dataset, params: TrainParams, key: bytes | None = None,
                     warm: WarmStart | dict[str, Any] | None = None,
                     on_epoch: OnEpoch | None = None, recipe: str | None = None) -> tuple[bytes, dict[str, Any]]:
    """Measure on a held-out split, train on everything, lay out for LLVM; returns (vocab bytes, manifest).

    MIR opcodes and register classes the triplets never mention are composed from their parts (trained beside
    them: vocabgen/compose.py `with_parts`, `compose`); the manifest's coverage counts
    `composed` per section and its `composition` says why each remaining filler entity is one. The
    held-out metrics stay those of the dataset's own triples, comparable with earlier versions.

    `warm` is the previous version's start (vocabgen/warm.py), or why there is none; it is used
    only with the `warm_start` parameter on, and the manifest's `warm_start` records either.

    The manifest is signed with the farm's key (`key`, default `signing.farm_key()`): publishing
    accepts its metrics and lineage only for these bytes (farm/signing.py says why).

    `on_epoch` is told of every epoch of both trainings (vocabgen/training.py `OnEpoch`): a long retrain shows how
    far it is, on a terminal and in a builder's log.

    `recipe` is the name of the recipe the parameters started from (vocabgen/params.py RECIPES; `[vocab] recipe`):
    the manifest records it beside every parameter.
    """
    p = params.resolved(ds.kind)
    if not p.warm_start:
        warm = cold("warm_start is off")
    start = warm if isinstance(warm, WarmStart) else None
    metrics: dict[str, Any] = {"holdout": holdout_metrics(ds, p, start, on_epoch)}
    parts = with_parts(ds) if ds.kind in PART_KINDS else None
    result = train_all(parts.ds, p, parts.warm(start), on_epoch) if parts else train_all(ds, p, start, on_epoch)
    trained = ds.trained_entities
    vectors, coverage = layout.fill_unseen(ds.kind, ds.entities, result.vectors[: len(ds.entities)], trained)
    composition = None
    if parts:
        vectors, coverage, composition = compose_unseen(parts, result, vectors, coverage, trained, p.norm)
    metrics["analogy"] = analogy_score(ds.kind, ds.entities, vectors, trained)
    metrics["final_loss"] = result.losses[-1] if result.losses else None
    vocab = layout.build_vocab(ds.kind, ds.entities, vectors)
    dim = check_schema(ds.kind, vocab)
    check_coverage(vocab, layout.entity_keys(ds.kind, ds.entities))
    if dim != p.dim:
        raise ValidationError(f"trained dimension {dim} differs from the requested {p.dim}")
    data = dumps(vocab)
    llvm = ds.manifest.get("llvm") or {}
    manifest = {
        "format": FORMAT,
        "kind": ds.kind,
        "sha256": sha256(data),
        "dimension": dim,
        "entities": len(ds.entities),
        "dataset": {
            "id": ds.id,
            "triplets": len(ds.triples),
            "relations": len(ds.relations),
            "corpus": ds.manifest.get("corpus"),
        },
        "lineage": {
            "dataset_id": ds.id,
            "llvm_version": llvm.get("llvm_version"),
            "llvm_commit": llvm.get("llvm_commit"),
            "clang": llvm.get("clang"),
            "trainer": {**_versions(), "threads": 1, "device": "cpu"},
        },
        "parameters": p.to_dict(),
        **({"recipe": recipe} if recipe is not None else {}),
        "warm_start": start.record if start else (warm or cold("no previous version given")),
        "metrics": metrics,
        "coverage": coverage,
        "filler_policy": layout.UNSEEN_POLICY if composition is None else f"parts, else {layout.UNSEEN_POLICY}",
        **({"composition": composition} if composition is not None else {}),
        "training_seconds": round(result.seconds, 3),
        "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return data, sign(data, manifest, farm_key() if key is None else key)


def write_local(out_dir: Path, data: bytes, manifest: dict[str, Any]) -> Path:
    """Both files at once (atomic directory), readable by other users whatever the umask.

    A full disk is one line naming `out_dir`, which is then left as it was.
    """
    with atomic_dir(Path(out_dir), MANIFEST) as tmp:
        for name, content in ((VOCAB, data), (MANIFEST, jsonio.dumps(manifest))):
            (tmp / name).write_bytes(content.encode() if isinstance(content, str) else content)
            (tmp / name).chmod(0o644)
    return Path(out_dir)


def read_local(vocab_dir: Path) -> tuple[bytes, dict[str, Any]]:
    """A trained vocabulary directory, its checksum checked."""
    vocab_dir = Path(vocab_dir)
    if not vocab_dir.is_dir():
        raise InputError(f"{vocab_dir} is not a trained vocabulary directory")
    try:
        data = (vocab_dir / VOCAB).read_bytes()
        manifest = jsonio.loads((vocab_dir / MANIFEST).read_bytes(), str(vocab_dir / MANIFEST))
    except FileNotFoundError as e:
        raise InputError(f"{vocab_dir} is not a trained vocabulary: {Path(e.filename).name} missing") from None
    except OSError as e:
        raise InputError(f"cannot read {e.filename}: {e.strerror}") from None
    if not isinstance(manifest, dict):
        raise InputError(f"{vocab_dir / MANIFEST}: not a JSON object")
    if manifest.get("sha256") != sha256(data):
        raise InputError(f"{vocab_dir / VOCAB} does not match the sha256 in its manifest")
    return data, manifest


def train_once(out_dir: Path, make: Callable[[], tuple[bytes, dict[str, Any]]]) -> tuple[bytes, dict[str, Any]]:
    """The vocabulary in `out_dir`, made with `make()` and written unless a complete one is already there.

    Concurrent identical requests share `out_dir`: writes and reads happen under its lock, and a
    complete directory is never replaced, so no reader sees it half written or renamed away.
    """
    out_dir = Path(out_dir)
    with dir_lock(out_dir):
        if (out_dir / MANIFEST).is_file():
            return read_local(out_dir)
    data, manifest = make()  # not under the lock: a long training must not hold up the others' reads
    with dir_lock(out_dir):
        if not (out_dir / MANIFEST).is_file():
            write_local(out_dir, data, manifest)
        return read_local(out_dir)
