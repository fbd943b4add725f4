"""Versioned vocabularies in the object store: publish, list, show, download.

A version is `vocab/{kind}/{version}/vocab.json` plus `manifest.json`; it exists once its
manifest does. Only a vocabulary whose manifest records a passed validation of exactly its bytes
(the validation's sha256) and carries the farm's signature over its training claims
(vocabgen/signing.py) is published. The same content (sha256) published again yields the
version that already holds it.

Order of the writes, so that every failure leaves `latest` naming a version the index lists and
the index listing only complete versions: vocab.json, manifest.json (both read back and checked),
then `vocab/index.json`, then `vocab/{kind}/latest.json`. A failure undoes what this publish
wrote, but only what provably nothing refers to (a put that reported failure may still have
landed, on S3 above all): what cannot be undone is a complete, consistent state the next publish
finishes. Leftovers of an interrupted upload (a vocab.json without manifest) are never listed and
are removed by the next publish.

`latest` only moves forward in time: republishing an existing version older than the current
latest leaves `latest` alone, and so does a new version stamped earlier (a host's clock behind).

A new version becomes `latest` only if it passes the promotion gate (vocabgen/gate.py) against
the current `latest`; otherwise it is listed as a `candidate` with the gate's reasons. Every
index entry carries its `state` (`latest`, `candidate`, or `superseded`: passed or promoted, but
not the latest now), the gate's verdict and the manifest's coverage; the `latest` pointer
remains the truth the index's states are written from, in the same order as above. `promote`
is the operator's override: it moves `latest` to any listed version (back in time too: a
rollback), recording who, when and why; republishing never undoes it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from pathlib import Path
from typing import Any

from farm import jsonio
from farm.atomic import write_atomic
from farm.errors import InputError, StoreError
from farm.store import MissingObject, ObjectStore
from vocabgen.dataset import check_kind
from vocabgen.gate import Check, Gate, awaits_only, gate_from_settings, judge, settled
from vocabgen.signing import farm_key, verify
from vocabgen.versions import (
    INDEX_KEY,
    SHORT_HASH,
    accepted,
    check_version_name,
    index_entry,
    latest_key,
    prefix,
    restate,
    version_name,
)
from vocabgen.vocabfile import ValidationError, check_magnitude, check_schema, parse, sha256

log = logging.getLogger(__name__)
JSON = "application/json"


def _json(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


class CorruptObject(StoreError):
    """An object in the store is not what the farm wrote (not JSON, not an object): retrying cannot help."""


def _get_json(store: ObjectStore, key: str) -> dict[str, Any]:
    obj = jsonio.loads(store.get(key), f"{key} in {store.url}", CorruptObject)
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


def read_index(store: ObjectStore) -> list[dict[str, Any]]:
    try:
        versions = _get_json(store, INDEX_KEY).get("versions", [])
    except MissingObject:
        return []
    if not isinstance(versions, list) or not all(isinstance(v, dict) for v in versions):
        raise CorruptObject(f"{INDEX_KEY} in {store.url}: \"versions\" is not a list of objects")
    return versions


def read_latest(store: ObjectStore, kind: str) -> dict[str, Any] | None:
    """The kind's `latest` pointer, or None when there is none yet."""
    try:
        return _get_json(store, latest_key(kind))
    except MissingObject:
        return None


def _is_newer(entry: dict[str, Any], current: dict[str, Any] | None, created: bool) -> bool:
    """Whether `latest` may move to `entry`: never back in time.

    A new version published in the same second as the current latest is the newer one; an
    existing version must be strictly newer (republishing old content must not move `latest`).
    """
    if current is None or current.get("version") == entry["version"]:
        return True
    then = str(current.get("published_at") or "")
    return entry["published_at"] >= then if created else entry["published_at"] > then


def _find(index: list[dict[str, Any]], kind: str, version: str) -> dict[str, Any] | None:
    return next((v for v in index if (v.get("kind"), v.get("version")) == (kind, version)), None)


def _pointer(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: entry[k] for k in ("kind", "version", "sha256", "dimension", "dataset_id", "published_at")}


def _with_entry(index: list[dict[str, Any]], entry: dict[str, Any]) -> list[dict[str, Any]]:
    versions = [v for v in index if (v.get("kind"), v.get("version")) != (entry["kind"], entry["version"])]
    versions.append(entry)
    versions.sort(key=lambda v: (str(v.get("kind")), str(v.get("published_at")), str(v.get("version"))))
    return versions


def _undo(store: ObjectStore, kind: str, version: str, old_index: bytes | None, wrote_index: bool,
          created: bool) -> None:
    """Take back a failed publish or promotion, as far as nothing can refer to what is removed.

    The index is restored only while `latest` does not name the version, and the files (of a new
    version only) are deleted only while the index does not list it (manifest first: a version
    exists while its manifest does). Any store failure here stops the undo and leaves a
    consistent state.
    """
    try:
        if wrote_index:
            if (read_latest(store, kind) or {}).get("version") == version:
                return  # the latest put landed after all: the publish is complete
            if old_index is None:
                store.delete(INDEX_KEY)
            else:
                store.put(INDEX_KEY, old_index, JSON)
        if not created or any(v.get("version") == version and v.get("kind") == kind for v in read_index(store)):
            return
        for name in ("manifest.json", "vocab.json"):
            store.delete(f"{prefix(kind, version)}/{name}")
    except StoreError as e:
        log.warning("could not take back the failed publish of %s %s (the store is consistent; publishing "
                    "again completes it): %s", kind, version, e)


def _latest_manifest(store: ObjectStore, kind: str, current: dict[str, Any] | None) -> dict[str, Any] | None:
    """The manifest of the version `latest` names: what the gate compares a new version with."""
    if not current or not current.get("version"):
        return None
    try:
        return _get_json(store, f"{prefix(kind, str(current['version']))}/manifest.json")
    except MissingObject:
        raise CorruptObject(f"{latest_key(kind)} in {store.url} names {current['version']}, which has no "
                            f"manifest (`mlgo-farm vocab promote` a listed version to repair it)") from None


def _write(store: ObjectStore, index: list[dict[str, Any]], versions: list[dict[str, Any]], entry: dict[str, Any],
           current: dict[str, Any] | None, move: bool, created: bool) -> None:
    """The index (if it changed), then the pointer (if it moves); a failure is undone as far as it safely can."""
    kind, version = entry["kind"], entry["version"]
    try:
        old_index: bytes | None = store.get(INDEX_KEY)
    except MissingObject:
        old_index = None
    wrote_index = False
    try:
        if versions != index:
            store.put(INDEX_KEY, _json({"format": 1, "versions": versions}), JSON)
            wrote_index = True
        if move and current != _pointer(entry):
            store.put(latest_key(kind), _json(_pointer(entry)), JSON)
    except StoreError:
        _undo(store, kind, version, old_index, wrote_index, created)
        raise


def _list_and_point(store: ObjectStore, stored: dict[str, Any], created: bool, gate: Gate,
                    latest: dict[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    """List the version (judged by the gate against `latest`'s manifest unless already listed), then
    move `latest` if it may. Returns the version's index entry and the version `latest` names afterwards.

    An already listed version keeps its recorded verdict, and `latest` moves to it only to finish
    a publish whose pointer write was cut short (its entry says `latest`): so republishing cannot
    undo a promotion, and a candidate stays a candidate.
    """
    kind, version = stored["kind"], stored["version"]
    index = read_index(store)
    current = read_latest(store, kind)
    listed = _find(index, kind, version)
    if listed is None:
        verdict = judge(stored, latest, gate)
        entry = {**index_entry(stored), "gate": verdict.to_dict()}
        move = verdict.passed and _is_newer(entry, current, created)
    else:
        entry = listed
        move = accepted(entry) and entry.get("state", "latest") == "latest" and _is_newer(entry, current, False)
    in_force = version if move else (current or {}).get("version")
    versions = restate(_with_entry(index, entry), kind, in_force)
    _write(store, index, versions, entry, current, move, created)
    return _find(versions, kind, version), in_force


def check_validated(manifest: dict[str, Any], digest: str) -> None:
    """The manifest records a passed validation of exactly these bytes (sha256 `digest`)."""
    validation = manifest.get("validation")
    if not isinstance(validation, dict) or validation.get("ok") is not True:
        raise ValidationError("vocabulary has not passed validation; nothing published")
    if validation.get("sha256") != digest:
        raise ValidationError("the validation record is not for these bytes (its sha256 differs); nothing published")


def check_publishable(data: bytes, manifest: dict[str, Any], key: bytes | None = None) -> str:
    """All publishing requires of a vocabulary and its manifest, before the store is touched; returns the kind."""
    kind = check_kind(str(manifest.get("kind")))
    digest = sha256(data)
    if manifest.get("sha256") != digest:
        raise InputError("vocabulary does not match the sha256 in its manifest; nothing published")
    verify(data, manifest, farm_key() if key is None else key)
    vocab = parse(data)
    check_schema(kind, vocab)
    check_magnitude(vocab)
    check_validated(manifest, digest)
    return kind


def publish(store: ObjectStore, data: bytes, manifest: dict[str, Any], when: float | None = None,
            key: bytes | None = None, gate: Gate | None = None) -> dict[str, Any]:
    """Publish a validated, signed vocabulary (call under `locks.publish_lock`).

    Returns {kind, version, sha256, created, latest, state, gate}: `latest` is the version
    `latest` names afterwards (None when there is none), `state` this version's, `gate` the
    verdict. `gate` defaults to the `[gate]` settings.
    """
    kind = check_publishable(data, manifest, key)
    gate = gate_from_settings() if gate is None else gate
    digest = sha256(data)
    read_index(store)  # a corrupt index, latest pointer or latest manifest fails before anything is uploaded
    latest = _latest_manifest(store, kind, read_latest(store, kind))
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
    entry, in_force = _list_and_point(store, stored, created, gate, latest)
    return {"kind": kind, "version": stored["version"], "sha256": digest, "created": created,
            "latest": in_force, "state": entry["state"], "gate": entry.get("gate")}


def promote(store: ObjectStore, kind: str, version: str, reason: str, by: str = "",
            when: float | None = None) -> dict[str, Any]:
    """Make a listed, intact version `latest` whatever the gate said (call under `locks.publish_lock`).

    The operator's override: the index entry records who, when, why and which version was
    `latest` before, and keeps the gate's verdict beside it. Returns the version's entry.
    """
    check_kind(kind)
    if check_version_name(version) == "latest":
        raise InputError("promote names a version, not `latest`")
    if not reason.strip():
        raise InputError("a promotion needs a reason (--reason): it is recorded with the version")
    index = read_index(store)
    listed = _find(index, kind, version)
    if listed is None:
        raise InputError(f"no {kind} vocabulary version {version} is listed in {store.url}")
    manifest = _get_json(store, f"{prefix(kind, version)}/manifest.json")
    if sha256(store.get(f"{prefix(kind, version)}/vocab.json")) != manifest.get("sha256"):
        raise CorruptObject(f"{prefix(kind, version)}/vocab.json does not match its manifest's sha256; not promoted")
    current = read_latest(store, kind)
    if (current or {}).get("version") == version:
        return listed
    when = time.time() if when is None else when
    entry = {**listed, "promoted": {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when)), "by": by,
                                    "reason": " ".join(reason.split()), "previous": (current or {}).get("version")}}
    versions = restate(_with_entry(index, entry), kind, version)
    _write(store, index, versions, entry, current, True, False)
    log.info("%s vocabulary %s promoted to latest by %s: %s", kind, version, by or "?", reason)
    return _find(versions, kind, version)


def settle(store: ObjectStore, kind: str, version: str, outcome: Check) -> dict[str, Any] | None:
    """Record the outcome of a listed version's pending rule; `latest` moves to it if every rule now holds
    (and it is newer than `latest`). Call under `locks.publish_lock`.

    Returns the version's entry, or None when it has no such rule pending (settled before, promoted,
    or published without it): a repeated size check changes nothing.
    """
    index = read_index(store)
    listed = _find(index, kind, version)
    if listed is None or outcome.rule not in ((listed.get("gate") or {}).get("pending") or ()):
        return None
    entry = {**listed, "gate": settled(listed["gate"], outcome)}
    current = read_latest(store, kind)
    move = accepted(entry) and _is_newer(entry, current, False)
    versions = restate(_with_entry(index, entry), kind, version if move else (current or {}).get("version"))
    _write(store, index, versions, entry, current, move, False)
    log.info("%s vocabulary %s: %s %s%s", kind, version, outcome.rule, "holds" if outcome.ok else "fails",
             "; now latest" if move else "")
    return _find(versions, kind, version)


def newest(store: ObjectStore, kind: str, rule: str) -> str | None:
    """The newest version that is `latest` or waits only for `rule`: what a consumer settling `rule` uses."""
    current = (read_latest(store, kind) or {}).get("version")
    waiting = [v for v in read_index(store) if v.get("kind") == kind
               and (v.get("version") == current or awaits_only(v.get("gate"), rule))]
    return str(max(waiting, key=lambda v: str(v.get("published_at")))["version"]) if waiting else None


def summary(result: dict[str, Any]) -> str:
    """One line for a publish result: a candidate with the gate's reasons, or `latest` staying on a newer version."""
    what = "published" if result["created"] else "already published"
    latest = result.get("latest", result["version"])
    pending = (result.get("gate") or {}).get("pending") or []
    if result.get("state") == "candidate" and pending and awaits_only(result.get("gate"), pending[0]):
        what += f", awaiting {' and '.join(pending)}; latest stays at {latest or 'none'} until then"
    elif result.get("state") == "candidate":
        reasons = "; ".join((result.get("gate") or {}).get("reasons") or ["not promoted"])
        what += f" as a candidate, latest stays at {latest or 'none'}: {reasons}"
    elif latest != result["version"]:
        what += f"; latest stays at {latest}, published later"
    return f"{result['kind']} {result['version']} ({what})"


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
    write_atomic(Path(out), data)  # 0644: a downloaded vocabulary is for every user of the machine
    return manifest


def llvm_flag(kind: str, path: Path) -> str:
    """The option that makes LLVM tools (opt, llc, llvm-ir2vec) use the file; clang needs `-mllvm` before it."""
    option = "ir2vec-vocab-path" if kind == "ir" else "mir2vec-vocab-path"
    return f"-{option}={Path(path).absolute()}"
