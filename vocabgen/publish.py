"""Versioned vocabularies in the object store: publish, list, show, download.

A version is `vocab/{kind}/{version}/vocab.json` plus `manifest.json`; it exists once its
manifest does. Only a vocabulary whose manifest records a passed validation of exactly its bytes
(the validation's sha256) is published. Publishing uploads both, reads them back and checks the
sha256, and only then moves `vocab/{kind}/latest.json` and updates `vocab/index.json`. The same content (sha256)
published again yields the version that already holds it. Leftovers of an interrupted upload
(a vocab.json without manifest) are never listed and are removed by the next publish.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from pathlib import Path
from typing import Any

from farm.atomic import write_atomic
from farm.errors import InputError, StoreError
from farm.store import MissingObject, ObjectStore
from vocabgen.dataset import check_kind
from vocabgen.versions import INDEX_KEY, SHORT_HASH, check_version_name, latest_key, prefix, version_name
from vocabgen.vocabfile import ValidationError, check_schema, parse, sha256

log = logging.getLogger(__name__)
JSON = "application/json"


def _json(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


class CorruptObject(StoreError):
    """An object in the store is not what the farm wrote (not JSON, not an object): retrying cannot help."""


def _get_json(store: ObjectStore, key: str) -> dict[str, Any]:
    try:
        obj = json.loads(store.get(key))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CorruptObject(f"{key} in {store.url} is not valid JSON: {e}") from None
    if not isinstance(obj, dict):
        raise CorruptObject(f"{key} in {store.url} is not a JSON object")
    return obj


def _version_dirs(store: ObjectStore, kind: str) -> dict[str, set[str]]:
    """version -> file names present under vocab/{kind}/."""
    dirs: dict[str, set[str]] = {}
    for key in store.list(f"vocab/{kind}/"):
        parts = key.split("/")
        if len(parts) == 4:
            dirs.setdefault(parts[2], set()).add(parts[3])
    return dirs


def find_by_hash(store: ObjectStore, kind: str, digest: str) -> str | None:
    """The complete version holding content `digest`; deletes incomplete leftovers of it (call under the lock)."""
    for version, files in sorted(_version_dirs(store, kind).items()):
        if not version.endswith(f"-{digest[:SHORT_HASH]}"):
            continue
        if "manifest.json" not in files:
            log.warning("removing incomplete upload %s", prefix(kind, version))
            for name in files:
                store.delete(f"{prefix(kind, version)}/{name}")
            continue
        m = _get_json(store, f"{prefix(kind, version)}/manifest.json")
        if m.get("sha256") == digest and sha256(store.get(f"{prefix(kind, version)}/vocab.json")) == digest:
            return version
    return None


def _upload(store: ObjectStore, kind: str, version: str, data: bytes, manifest: dict[str, Any]) -> None:
    base = prefix(kind, version)
    try:
        store.put(f"{base}/vocab.json", data, JSON)
        store.put(f"{base}/manifest.json", _json(manifest), JSON)
        if sha256(store.get(f"{base}/vocab.json")) != manifest["sha256"]:
            raise StoreError(f"{base}/vocab.json read back with a different sha256")
        if _get_json(store, f"{base}/manifest.json").get("sha256") != manifest["sha256"]:
            raise StoreError(f"{base}/manifest.json read back with a different sha256")
    except StoreError:
        for name in ("manifest.json", "vocab.json"):
            with contextlib.suppress(StoreError):
                store.delete(f"{base}/{name}")
        raise


def _index_entry(manifest: dict[str, Any]) -> dict[str, Any]:
    metrics = manifest.get("metrics") or {}
    holdout = metrics.get("holdout") or {}
    lineage = manifest.get("lineage") or {}
    return {
        "kind": manifest["kind"],
        "version": manifest["version"],
        "sha256": manifest["sha256"],
        "dimension": manifest["dimension"],
        "dataset_id": lineage.get("dataset_id"),
        "llvm_version": lineage.get("llvm_version"),
        "llvm_commit": lineage.get("llvm_commit"),
        "published_at": manifest["published_at"],
        "mrr": holdout.get("mrr"),
        "hits_at_10": holdout.get("hits_at_10"),
        "analogy": (metrics.get("analogy") or {}).get("score"),
    }


def read_index(store: ObjectStore) -> list[dict[str, Any]]:
    try:
        versions = _get_json(store, INDEX_KEY).get("versions", [])
    except MissingObject:
        return []
    if not isinstance(versions, list) or not all(isinstance(v, dict) for v in versions):
        raise CorruptObject(f"{INDEX_KEY} in {store.url}: \"versions\" is not a list of objects")
    return versions


def _point_latest_and_index(store: ObjectStore, manifest: dict[str, Any], index: list[dict[str, Any]]) -> None:
    """Move `latest` and add the version to `index` (the index as read, under the lock, before the upload)."""
    entry = _index_entry(manifest)
    pointer = {k: entry[k] for k in ("kind", "version", "sha256", "dimension", "dataset_id", "published_at")}
    store.put(latest_key(manifest["kind"]), _json(pointer), JSON)
    versions = [v for v in index if (v.get("kind"), v.get("version")) != (entry["kind"], entry["version"])]
    versions.append(entry)
    versions.sort(key=lambda v: (str(v.get("kind")), str(v.get("published_at")), str(v.get("version"))))
    store.put(INDEX_KEY, _json({"format": 1, "versions": versions}), JSON)


def check_validated(manifest: dict[str, Any], digest: str) -> None:
    """The manifest records a passed validation of exactly these bytes (sha256 `digest`)."""
    validation = manifest.get("validation")
    if not isinstance(validation, dict) or validation.get("ok") is not True:
        raise ValidationError("vocabulary has not passed validation; nothing published")
    if validation.get("sha256") != digest:
        raise ValidationError("the validation record is not for these bytes (its sha256 differs); nothing published")


def publish(store: ObjectStore, data: bytes, manifest: dict[str, Any], when: float | None = None) -> dict[str, Any]:
    """Publish a validated vocabulary (call under `locks.publish_lock`); returns {kind, version, created}."""
    kind = check_kind(str(manifest.get("kind")))
    digest = sha256(data)
    if manifest.get("sha256") != digest:
        raise InputError("vocabulary does not match the sha256 in its manifest; nothing published")
    check_schema(kind, parse(data))
    check_validated(manifest, digest)
    index = read_index(store)  # a corrupt index fails before anything is uploaded
    existing = find_by_hash(store, kind, digest)
    if existing:
        stored = _get_json(store, f"{prefix(kind, existing)}/manifest.json")
        created = False
    else:
        when = time.time() if when is None else when
        stored = {
            **manifest,
            "version": version_name(manifest, when),
            "published_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when)),
        }
        _upload(store, kind, stored["version"], data, stored)
        created = True
    _point_latest_and_index(store, stored, index)
    return {"kind": kind, "version": stored["version"], "sha256": digest, "created": created}


def resolve(store: ObjectStore, kind: str, version: str) -> str:
    """A concrete version name; `latest` follows the kind's pointer."""
    check_kind(kind)
    check_version_name(version)
    if version != "latest":
        return version
    try:
        return check_version_name(str(_get_json(store, latest_key(kind)).get("version", "")))
    except MissingObject:
        raise InputError(f"no {kind} vocabulary has been published to {store.url}") from None


def show(store: ObjectStore, kind: str, version: str) -> dict[str, Any]:
    version = resolve(store, kind, version)
    try:
        return _get_json(store, f"{prefix(kind, version)}/manifest.json")
    except MissingObject:
        raise InputError(f"no {kind} vocabulary version {version} in {store.url}") from None


def download(store: ObjectStore, kind: str, version: str, out: Path) -> dict[str, Any]:
    """Fetch a version to `out` after checking its sha256 (nothing is written on a mismatch)."""
    manifest = show(store, kind, version)
    key = f"{prefix(kind, manifest['version'])}/vocab.json"
    data = store.get(key)
    got = sha256(data)
    if got != manifest.get("sha256"):
        raise StoreError(f"checksum mismatch for {key}: manifest says {manifest.get('sha256')}, got {got}; "
                         f"nothing written")
    write_atomic(Path(out), data)
    return manifest


def llvm_flag(kind: str, path: Path) -> str:
    """The option that makes LLVM tools (opt, llc, llvm-ir2vec) use the file; clang needs `-mllvm` before it."""
    option = "ir2vec-vocab-path" if kind == "ir" else "mir2vec-vocab-path"
    return f"-{option}={Path(path).absolute()}"
