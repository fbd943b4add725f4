"""Versioned policies in the object store: publish, list, show, download, resolve `store:VERSION`.

A version is `policies/{advisor}/{version}/model.onnx` plus `manifest.json` (sha256, advisor,
features, training corpus and dataset, vocabulary version when it reads IR2Vec features,
parameters, held-out metrics, LLVM version/commit, validation); it exists once its manifest
does. Only a model whose manifest records a passed validation of exactly its bytes is published
(policyhost/release.py validates). The same content (sha256) published again yields the version
that already holds it.

The guarantees are those of vocabularies (vocabgen/publish.py), and so is the order of the
writes: model.onnx, manifest.json (both read back and checked), `policies/index.json`, then
`policies/{advisor}/latest.json`. At every failure point `latest` names a version the index
lists and the index lists only complete versions; a failure takes back only what provably
nothing refers to. `latest` only moves forward in time. The few JSON helpers are written again
here rather than imported from vocabgen/publish.py, whose private functions are not an interface.

A retrained policy is published *pending* its size check (`pending="policy_size"`): listed as a
`candidate` whose gate record waits for that rule, `latest` unchanged; the check
(regression/policygate.py) settles it with `settle`, which moves `latest` when it holds. Index
entries carry their `state` (latest, candidate, superseded) as vocabularies' do. The manifest
carries the farm's signature over its training claims and the model's bytes (vocabgen/signing.py,
the same key), so held-out metrics and lineage cannot be copied onto another model.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any

from farm.atomic import write_atomic
from farm.errors import InputError, StoreError
from farm.jsonio import loads
from farm.store import MissingObject, ObjectStore
from policyhost import advisors
from vocabgen.gate import Check, Verdict
from vocabgen.publish import CorruptObject
from vocabgen.signing import farm_key, verify
from vocabgen.versions import SHORT_HASH, accepted, check_version_name, restate

log = logging.getLogger(__name__)
JSON = "application/json"
ROOT = "policies"
INDEX_KEY = f"{ROOT}/index.json"
MODEL, MANIFEST = "model.onnx", "manifest.json"
#: `--policy store:latest` / `store:VERSION`
SCHEME = "store:"
#: what the index lists of every version (from its manifest)
_INDEX_FIELDS = ("advisor", "version", "sha256", "vocab_version", "dataset_id", "llvm_version", "llvm_commit",
                 "published_at", "heldout_agreement", "heldout_majority_baseline", "validation_ratio",
                 "heldout_geomean")
_POINTER_FIELDS = ("advisor", "version", "sha256", "vocab_version", "published_at")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def prefix(advisor: str, version: str) -> str:
    return f"{ROOT}/{advisor}/{check_version_name(version)}"


def latest_key(advisor: str) -> str:
    return f"{ROOT}/{advisor}/latest.json"


def dumps(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


def get_json(store: ObjectStore, key: str) -> dict[str, Any]:
    try:
        obj = loads(store.get(key), f"{key} in {store.url}")
    except InputError as e:
        raise CorruptObject(str(e)) from None
    if not isinstance(obj, dict):
        raise CorruptObject(f"{key} in {store.url} is not a JSON object")
    return obj


def version_name(manifest: dict[str, Any], when: float) -> str:
    """`YYYYMMDD-<llvm commit or version>-<advisor>-<vocab dimension or novocab>-<sha256[:12]>`."""
    llvm = manifest.get("llvm") or {}
    commit = llvm.get("llvm_commit")
    tag = commit[:12] if commit else f"llvm{llvm.get('llvm_version') or 'unknown'}"
    vocab = "ir2vec" if manifest.get("vocab_version") else "novocab"
    day = time.strftime("%Y%m%d", time.gmtime(when))
    return check_version_name(f"{day}-{tag}-{manifest['advisor']}-{vocab}-{manifest['sha256'][:SHORT_HASH]}")


def check_publishable(data: bytes, manifest: dict[str, Any], key: bytes | None = None) -> str:
    """All publishing requires of a model and its manifest, before the store is touched; returns the advisor."""
    advisor = advisors.get(str(manifest.get("advisor"))).name
    digest = sha256(data)
    if manifest.get("sha256") != digest:
        raise InputError("policy model does not match the sha256 in its manifest; nothing published")
    verify(data, manifest, farm_key() if key is None else key, what="policy")
    validation = manifest.get("validation")
    if not isinstance(validation, dict) or validation.get("ok") is not True:
        raise InputError("policy has not passed validation; nothing published")
    if validation.get("sha256") != digest:
        raise InputError("the validation record is not for these bytes (its sha256 differs); nothing published")
    if not isinstance(manifest.get("features"), list) or not manifest["features"]:
        raise InputError("policy manifest lists no features; nothing published")
    return advisor


def _versions(store: ObjectStore, advisor: str) -> dict[str, set[str]]:
    dirs: dict[str, set[str]] = {}
    for key in store.list(f"{ROOT}/{advisor}/"):
        parts = key.split("/")
        if len(parts) == 4:
            dirs.setdefault(parts[2], set()).add(parts[3])
    return dirs


def find_by_hash(store: ObjectStore, advisor: str, digest: str) -> str | None:
    """The complete version holding `digest`; removes incomplete leftovers of it (call under the lock)."""
    for version, files in sorted(_versions(store, advisor).items()):
        if not version.endswith(f"-{digest[:SHORT_HASH]}"):
            continue
        if MANIFEST not in files:
            log.warning("removing incomplete upload %s", prefix(advisor, version))
            for name in files:
                store.delete(f"{prefix(advisor, version)}/{name}")
            continue
        if (get_json(store, f"{prefix(advisor, version)}/{MANIFEST}").get("sha256") == digest
                and sha256(store.get(f"{prefix(advisor, version)}/{MODEL}")) == digest):
            return version
    return None


def _upload(store: ObjectStore, base: str, data: bytes, manifest: dict[str, Any]) -> None:
    try:
        store.put(f"{base}/{MODEL}", data, "application/octet-stream")
        store.put(f"{base}/{MANIFEST}", dumps(manifest), JSON)
        if sha256(store.get(f"{base}/{MODEL}")) != manifest["sha256"]:
            raise StoreError(f"{base}/{MODEL} read back with a different sha256")
        if get_json(store, f"{base}/{MANIFEST}").get("sha256") != manifest["sha256"]:
            raise StoreError(f"{base}/{MANIFEST} read back with a different sha256")
    except StoreError:
        for name in (MANIFEST, MODEL):
            with contextlib.suppress(StoreError):
                store.delete(f"{base}/{name}")
        raise


def index_entry(manifest: dict[str, Any]) -> dict[str, Any]:
    metrics = manifest.get("metrics") or {}
    flat = {**manifest, **(manifest.get("llvm") or {}), **metrics,
            "dataset_id": (manifest.get("training") or {}).get("dataset_id")}
    return {k: flat.get(k) for k in _INDEX_FIELDS}


def read_index(store: ObjectStore) -> list[dict[str, Any]]:
    try:
        versions = get_json(store, INDEX_KEY).get("versions", [])
    except MissingObject:
        return []
    if not isinstance(versions, list) or not all(isinstance(v, dict) for v in versions):
        raise CorruptObject(f"{INDEX_KEY} in {store.url}: \"versions\" is not a list of objects")
    return versions


def read_latest(store: ObjectStore, advisor: str) -> dict[str, Any] | None:
    try:
        return get_json(store, latest_key(advisor))
    except MissingObject:
        return None


def _is_newer(entry: dict[str, Any], current: dict[str, Any] | None, created: bool) -> bool:
    """Never back in time: a new version may tie the current latest's second, an existing one must be later."""
    if current is None or current.get("version") == entry["version"]:
        return True
    then = str(current.get("published_at") or "")
    return entry["published_at"] >= then if created else entry["published_at"] > then


def _undo(store: ObjectStore, advisor: str, version: str, old_index: bytes | None, wrote_index: bool) -> None:
    """Take back a failed publish as far as nothing refers to it (see vocabgen/publish.py's `_undo`)."""
    try:
        if wrote_index:
            if (read_latest(store, advisor) or {}).get("version") == version:
                return
            if old_index is None:
                store.delete(INDEX_KEY)
            else:
                store.put(INDEX_KEY, old_index, JSON)
        if any(v.get("version") == version and v.get("advisor") == advisor for v in read_index(store)):
            return
        for name in (MANIFEST, MODEL):
            store.delete(f"{prefix(advisor, version)}/{name}")
    except StoreError as e:
        log.warning("could not take back the failed publish of policy %s (the store is consistent; publishing "
                    "again completes it): %s", version, e)


def _find(index: list[dict[str, Any]], advisor: str, version: str) -> dict[str, Any] | None:
    return next((v for v in index if (v.get("advisor"), v.get("version")) == (advisor, version)), None)


def _with_entry(index: list[dict[str, Any]], entry: dict[str, Any]) -> list[dict[str, Any]]:
    rest = [v for v in index if (v.get("advisor"), v.get("version")) != (entry["advisor"], entry["version"])]
    return sorted([*rest, entry], key=lambda v: (str(v.get("advisor")), str(v.get("published_at")),
                                                 str(v.get("version"))))


def _write(store: ObjectStore, index: list[dict[str, Any]], entry: dict[str, Any], current: dict[str, Any] | None,
           move: bool, created: bool) -> dict[str, Any]:
    """The index in the states `move` implies, then the pointer if it moves; returns the entry as listed."""
    advisor, version = entry["advisor"], entry["version"]
    in_force = version if move else (current or {}).get("version")
    versions = restate(_with_entry(index, entry), advisor, in_force, by="advisor")
    pointer = {k: entry[k] for k in _POINTER_FIELDS}
    try:
        old_index: bytes | None = store.get(INDEX_KEY)
    except MissingObject:
        old_index = None
    wrote_index = False
    try:
        if versions != index:
            store.put(INDEX_KEY, dumps({"format": 1, "versions": versions}), JSON)
            wrote_index = True
        if move and current != pointer:
            store.put(latest_key(advisor), dumps(pointer), JSON)
    except StoreError:
        if created:
            _undo(store, advisor, version, old_index, wrote_index)
        raise
    return _find(versions, advisor, version) or entry


def _list_and_point(store: ObjectStore, stored: dict[str, Any], created: bool,
                    pending: str | None) -> tuple[dict[str, Any], str | None]:
    """List the version (pending `pending` if given and not listed yet), move `latest` if it may;
    (its entry, the version `latest` names afterwards). A listed version keeps its state and verdict."""
    advisor, version = stored["advisor"], stored["version"]
    index = read_index(store)
    current = read_latest(store, advisor)
    listed = _find(index, advisor, version)
    if listed is None:
        entry = index_entry(stored)
        if pending:
            wait = Check(pending, False, "waiting for its size check on the regression benchmarks", pending=True)
            entry["gate"] = Verdict((wait,), (current or {}).get("version")).to_dict()
    else:
        entry = listed
    move = accepted(entry) and entry.get("state", "latest") == "latest" and _is_newer(entry, current, created)
    entry = _write(store, index, entry, current, move, created)
    return entry, version if move else (current or {}).get("version")


def publish(store: ObjectStore, data: bytes, manifest: dict[str, Any], when: float | None = None,
            key: bytes | None = None, pending: str | None = None) -> dict[str, Any]:
    """Publish a validated, signed policy (call under `vocabgen.locks.publish_lock`).

    Returns {advisor, version, sha256, created, latest, previous, state, gate}: `previous` is the
    version `latest` named before (the policy a new one is judged against). With `pending` (a
    rule name) a new version is listed as a candidate waiting for that rule (`settle`).
    """
    advisor = check_publishable(data, manifest, key)
    digest = sha256(data)
    read_index(store)  # a corrupt index or pointer fails before anything is uploaded
    before = read_latest(store, advisor)
    existing = find_by_hash(store, advisor, digest)
    if existing:
        stored = get_json(store, f"{prefix(advisor, existing)}/{MANIFEST}")
        created = False
    else:
        when = time.time() if when is None else when
        stored = {**manifest, "version": version_name(manifest, when),
                  "published_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))}
        _upload(store, prefix(advisor, stored["version"]), data, stored)
        created = True
    entry, in_force = _list_and_point(store, stored, created, pending)
    return {"advisor": advisor, "version": stored["version"], "sha256": digest, "created": created,
            "latest": in_force, "previous": (before or {}).get("version"), "state": entry.get("state"),
            "gate": entry.get("gate")}


def settle(store: ObjectStore, advisor: str, version: str, outcome: Check) -> dict[str, Any] | None:
    """Record the outcome of a listed version's pending rule; `latest` moves to it if it holds and the
    version is newer (call under the publish lock). None when nothing was pending (settled before)."""
    from vocabgen.gate import settled

    index = read_index(store)
    listed = _find(index, advisor, version)
    if listed is None or outcome.rule not in ((listed.get("gate") or {}).get("pending") or ()):
        return None
    entry = {**listed, "gate": settled(listed["gate"], outcome)}
    current = read_latest(store, advisor)
    return _write(store, index, entry, current, accepted(entry) and _is_newer(entry, current, False), False)


def summary(result: dict[str, Any]) -> str:
    what = "published" if result["created"] else "already published"
    pending = (result.get("gate") or {}).get("pending") or []
    if result.get("state") == "candidate":
        why = "awaiting " + " and ".join(pending) if pending else "; ".join((result.get("gate") or {}).get("reasons")
                                                                           or ["not promoted"])
        what += f" as a candidate, {why}; latest stays at {result.get('latest') or 'none'}"
    elif result.get("latest", result["version"]) != result["version"]:
        what += f"; latest stays at {result['latest']}, published later"
    return f"policy {result['advisor']} {result['version']} ({what})"


def resolve(store: ObjectStore, advisor: str, version: str) -> str:
    advisors.get(advisor)
    check_version_name(version)
    if version != "latest":
        return version
    pointer = read_latest(store, advisor)
    if pointer is None:
        raise InputError(f"no {advisor} policy has been published to {store.url}")
    return check_version_name(str(pointer.get("version", "")))


def show(store: ObjectStore, advisor: str, version: str = "latest") -> dict[str, Any]:
    version = resolve(store, advisor, version)
    try:
        return get_json(store, f"{prefix(advisor, version)}/{MANIFEST}")
    except MissingObject:
        raise InputError(f"no {advisor} policy version {version} in {store.url}") from None


def download(store: ObjectStore, advisor: str, version: str, out: Path) -> dict[str, Any]:
    """Fetch a version to `out` after checking its sha256 (nothing is written on a mismatch)."""
    manifest = show(store, advisor, version)
    key = f"{prefix(advisor, manifest['version'])}/{MODEL}"
    data = store.get(key)
    if sha256(data) != manifest.get("sha256"):
        raise StoreError(f"checksum mismatch for {key}: manifest says {manifest.get('sha256')}, got {sha256(data)}; "
                         f"nothing written")
    write_atomic(Path(out), data)
    return manifest


def fetch_cached(store: ObjectStore, advisor: str, version: str, cache: Path) -> tuple[Path, dict[str, Any]]:
    """The model of a published version as a local file under `cache`, its sha256 checked on every use.

    Cached as `{cache}/{advisor}/{version}.onnx` beside `{version}.json` (its manifest): the file
    stem is the version, which is what the history records.
    """
    manifest = show(store, advisor, version)
    path = Path(cache) / advisor / f"{manifest['version']}.onnx"
    if not (path.is_file() and sha256(path.read_bytes()) == manifest.get("sha256")):
        download(store, advisor, manifest["version"], path)
    write_atomic(path.with_suffix(".json"), dumps(manifest))
    return path, manifest
