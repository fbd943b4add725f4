"""Warm start: a retrain begins from the previous `latest` vectors wherever the two entity sets agree.

Two independent trainings land in spaces that differ by a rotation TransE cannot see (vocabgen/
compare.py), so a policy trained on one version reads every feature of the next one as changed.
Starting the next training from the previous vectors keeps the spaces close where the data did
not change. An entity takes its previous vector when the previous version has one under the
same section and key, trained there (a filler entry is only its section's mean, a composed one only
its parts') and of the same dimension; every other entity keeps pykeen's random start. Relations are not published, so
each starts where TransE wants it given the warm entities: the mean of t - h over its triples
(vocabgen/training.py). The manifest's `warm_start` says from which version, and how many
entities; `warm_start: false` in the training parameters trains cold.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from farm import jsonio
from farm.artifacts.kinds import VOCAB, check_version_name
from farm.artifacts.versions import get_json
from farm.errors import InputError
from farm.objectstore import CorruptObject, MissingObject, ObjectStore
from vocabgen import layout


@dataclass(frozen=True)
class WarmStart:
    """Rows in LLVM entity order; `known[i]` says whether row i is taken from the previous version."""

    vectors: np.ndarray
    known: np.ndarray
    record: dict[str, Any] = field(default_factory=dict)

    def digest(self) -> str:
        """What identifies the start in a work directory's name: the previous bytes' sha256."""
        return str(self.record.get("sha256", ""))[:12]


def cold(reason: str) -> dict[str, Any]:
    """The manifest's `warm_start` of a cold training."""
    return {"from": None, "reason": reason}


def from_vocab(kind: str, entities: list[str], data: bytes, manifest: dict[str, Any], dim: int,
               version: str | None = None) -> WarmStart | dict[str, Any]:
    """The start for `entities` from a published vocabulary (bytes and manifest), or why there is none."""
    vocab = jsonio.loads(data, f"vocabulary {version or 'the previous version'}", CorruptObject)
    if not isinstance(vocab, dict) or not all(isinstance(e, dict) for e in vocab.values()):
        raise CorruptObject(f"vocabulary {version or 'the previous version'} is not {{section: {{entity: vector}}}}")
    filler = {(s, k) for s, c in (manifest.get("coverage") or {}).items() if isinstance(c, dict)
              for k in [*(c.get("filler") or []), *(c.get("composed_keys") or [])]}
    vectors = np.zeros((len(entities), dim), np.float32)
    known = np.zeros(len(entities), bool)
    for i, (section, key) in enumerate(layout.placement(kind, entities)):
        vec = vocab.get(section, {}).get(key)
        if vec is None or (section, key) in filler:
            continue
        if len(vec) != dim:
            return cold(f"{version or 'the previous version'} has dimension {len(vec)}, not {dim}")
        vectors[i], known[i] = vec, True
    if not known.any():
        return cold(f"no entity of {version or 'the previous version'} is trained and still known")
    record = {"from": version, "sha256": manifest.get("sha256"), "entities": int(known.sum()),
              "of": len(entities)}
    return WarmStart(vectors, known, record)


def from_latest(store: ObjectStore, kind: str, entities: list[str], dim: int) -> WarmStart | dict[str, Any]:
    """The start from the store's `latest` vocabulary of `kind`, or why there is none; its bytes are checked
    against their manifest (CorruptObject: a training never starts from rotten vectors)."""
    try:
        version = get_json(store, VOCAB.latest_key(kind)).get("version")
        version = check_version_name(version if isinstance(version, str) else "")
        data = store.get(f"{VOCAB.prefix(kind, version)}/vocab.json")
        manifest = get_json(store, VOCAB.manifest_key(kind, version))
    except MissingObject:
        return cold(f"no {kind} vocabulary is published yet")
    except InputError:
        raise CorruptObject(f"{VOCAB.latest_key(kind)} in {store.url} names no version") from None
    if hashlib.sha256(data).hexdigest() != manifest.get("sha256"):
        raise CorruptObject(f"{VOCAB.prefix(kind, version)}/vocab.json in {store.url} does not match its manifest's "
                            "sha256 (`mlgo-farm store verify` lists every such file)")
    return from_vocab(kind, entities, data, manifest, dim, version)
