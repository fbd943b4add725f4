"""The versions of every artifact kind, over the object store: publish, settle, promote, resolve, show, download.

The upper of the farm's two storage layers (the lower, farm/objectstore.py, keeps bytes under keys).
Every function takes the kind (farm/artifacts/kinds.py) and the object store; roles reach them through
their kind's handle (farm/artifacts/shelf.py), and docs/artifacts.md draws the states and the keys.

A version is its files plus `manifest.json` under `{root}/{group}/{version}/` (farm/artifacts/kinds.py);
it exists once its manifest does. The same content published again yields the version that
already holds it. What a role requires of an artifact (validation, signature, schema) is checked
by the role before it calls `publish`; the store guarantees the rest, for every kind alike.

Order of the writes, so that every failure leaves `latest` naming a version the index lists and
the index listing only complete versions: the files, the manifest (all read back and checked),
then `{root}/index.json`, then `{root}/{group}/latest.json`. A failure undoes what this publish
wrote, but only what provably nothing refers to (a put that reported failure may still have
landed, on S3 above all): what cannot be undone is a complete, consistent state the next publish
finishes. Leftovers of an interrupted upload (files without a manifest) are never listed and are
removed by the next publish of the same content.

`latest` only moves forward in time: republishing an existing version older than the current
latest leaves `latest` alone, and so does a new version stamped earlier (a host's clock behind).
A new version judged by a gate (`judge`) becomes `latest` only if the verdict passes; otherwise it
is listed as a `candidate` with the verdict's reasons, or with a rule pending that a later step
`settle`s. Every index entry carries its `state` (`latest`, `candidate`, or `superseded`: passed
or promoted, but not the latest now); the `latest` pointer remains the truth the index's states
are written from. `promote` is the operator's override: it moves `latest` to any listed version
(back in time too: a rollback), recording who, when and why; republishing never undoes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from farm import jsonio
from farm.artifacts.kinds import MANIFEST, SHORT_HASH, ArtifactKind, check_version_name, timestamp
from farm.artifacts.verdict import Check, Verdict, accepted, awaits_only, settled
from farm.atomic import write_atomic
from farm.errors import InputError, NothingPublished, StoreError
from farm.objectstore import CorruptObject, MissingObject, ObjectStore

log = logging.getLogger(__name__)
JSON = "application/json"
#: (the version's record, the baseline: `latest`'s manifest or pointer) -> its verdict, None for no gate
Judge = Callable[[Mapping[str, Any], Mapping[str, Any] | None], Verdict | None]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _dumps(data: Mapping[str, Any]) -> bytes:
    return jsonio.dumps(data).encode()


def _content_type(name: str) -> str:
    return JSON if name.endswith(".json") else "text/plain" if name.endswith(".txt") else "application/octet-stream"


def get_json(store: ObjectStore, key: str) -> dict[str, Any]:
    obj = jsonio.loads(store.get(key), f"{key} in {store.url}", CorruptObject)
    if not isinstance(obj, dict):
        raise CorruptObject(f"{key} in {store.url} is not a JSON object")
    return obj


def read_index(kind: ArtifactKind, store: ObjectStore) -> list[dict[str, Any]]:
    try:
        versions = get_json(store, kind.index_key).get("versions", [])
    except MissingObject:
        return []
    if not isinstance(versions, list) or not all(isinstance(v, dict) for v in versions):
        raise CorruptObject(f"{kind.index_key} in {store.url}: \"versions\" is not a list of objects")
    return versions


def read_latest(kind: ArtifactKind, store: ObjectStore, group: str) -> dict[str, Any] | None:
    """The group's `latest` pointer, or None when there is none yet."""
    try:
        return get_json(store, kind.latest_key(group))
    except MissingObject:
        return None


def _mismatch(kind: ArtifactKind, store: ObjectStore, base: str, manifest: Mapping[str, Any]) -> str | None:
    """The first of the version's files whose bytes are not what its manifest records (None: all intact)."""
    digests = kind.digests(manifest)
    return next((name for name in kind.held(manifest) if sha256(store.get(f"{base}/{name}")) != digests.get(name)),
                None)


def _version_dirs(kind: ArtifactKind, store: ObjectStore, group: str) -> dict[str, set[str]]:
    """version -> file names present under `{root}/{group}/`."""
    dirs: dict[str, set[str]] = {}
    for key in store.list(f"{kind.root}/{group}/"):
        parts = key.split("/")
        if len(parts) == 4:
            dirs.setdefault(parts[2], set()).add(parts[3])
    return dirs


def find_by_hash(kind: ArtifactKind, store: ObjectStore, group: str, identity: str) -> str | None:
    """The complete version holding content `identity` (the manifest's `kind.identity`); deletes incomplete
    leftovers of it (call under the lock). A kind named by its content is looked up by that name alone."""
    if kind.named_by_content:
        if not store.exists(kind.manifest_key(group, identity)):
            return None
        candidates = {identity: {MANIFEST}}
    else:
        candidates = {v: files for v, files in _version_dirs(kind, store, group).items()
                      if v.endswith(f"-{identity[:SHORT_HASH]}")}
    for version, files in sorted(candidates.items()):
        base = kind.prefix(group, version)
        if MANIFEST not in files:
            log.warning("removing incomplete upload %s", base)
            for name in files:
                store.delete(f"{base}/{name}")
            continue
        m = get_json(store, f"{base}/{MANIFEST}")
        if m.get(kind.identity) == identity and _mismatch(kind, store, base, m) is None:
            return version
    return None


def _upload(kind: ArtifactKind, store: ObjectStore, base: str, files: Mapping[str, bytes], raw: bytes,
            manifest: Mapping[str, Any]) -> None:
    """The files, then the manifest, all read back; a failure deletes them (the manifest first)."""
    held = kind.held(manifest)
    try:
        for name in held:
            store.put(f"{base}/{name}", files[name], _content_type(name))
        store.put(f"{base}/{MANIFEST}", raw, JSON)
        if (name := _mismatch(kind, store, base, manifest)) is not None:
            raise StoreError(f"{base}/{name} read back with a different sha256")
        if kind.digests(get_json(store, f"{base}/{MANIFEST}")) != kind.digests(manifest):
            raise StoreError(f"{base}/{MANIFEST} read back with a different sha256")
    except StoreError:
        for name in (MANIFEST, *reversed(held)):
            with contextlib.suppress(StoreError):
                store.delete(f"{base}/{name}")
        raise


def _is_newer(kind: ArtifactKind, entry: Mapping[str, Any], current: Mapping[str, Any] | None, created: bool) -> bool:
    """Whether `latest` may move to `entry`: never back in time.

    A new version published in the same second as the current latest is the newer one; an
    existing version must be strictly newer (republishing old content must not move `latest`).
    """
    if current is None or kind.in_force(current) == entry["version"]:
        return True
    then = str(current.get("published_at") or "")
    return entry["published_at"] >= then if created else entry["published_at"] > then


def _find(kind: ArtifactKind, index: list[dict[str, Any]], group: str, version: str) -> dict[str, Any] | None:
    return next((v for v in index if kind.listed(v, group, version)), None)


def _with_entry(kind: ArtifactKind, index: list[dict[str, Any]], entry: dict[str, Any]) -> list[dict[str, Any]]:
    versions = [v for v in index if not kind.listed(v, entry[kind.group], entry["version"])]
    versions.append(entry)
    versions.sort(key=lambda v: (str(v.get(kind.group)), str(v.get("published_at")), str(v.get("version"))))
    return versions


def _undo(kind: ArtifactKind, store: ObjectStore, group: str, version: str, old_index: bytes | None,
          wrote_index: bool, created: bool) -> None:
    """Take back a failed publish or promotion, as far as nothing can refer to what is removed.

    The index is restored only while `latest` does not name the version, and the files (of a new
    version only) are deleted only while the index does not list it (manifest first: a version
    exists while its manifest does). Any store failure here stops the undo and leaves a
    consistent state.
    """
    try:
        if wrote_index:
            if kind.in_force(read_latest(kind, store, group)) == version:
                return  # the latest put landed after all: the publish is complete
            if old_index is None:
                store.delete(kind.index_key)
            else:
                store.put(kind.index_key, old_index, JSON)
        if not created or any(kind.listed(v, group, version) for v in read_index(kind, store)):
            return
        for name in (MANIFEST, *reversed((*kind.files, *kind.optional))):  # deleting what is not there is no error
            store.delete(f"{kind.prefix(group, version)}/{name}")
    except StoreError as e:
        log.warning("could not take back the failed publish of %s %s %s (the store is consistent; publishing "
                    "again completes it): %s", group, kind.noun, version, e)


def _pointer(kind: ArtifactKind, store: ObjectStore, entry: Mapping[str, Any],
             manifest: Mapping[str, Any] | None) -> dict[str, Any]:
    pointer = {k: entry[k] for k in kind.pointer_fields}
    if kind.pointer_manifest:
        pointer["manifest"] = manifest if manifest is not None else get_json(
            store, kind.manifest_key(entry[kind.group], entry["version"]))
    return pointer


def _write(kind: ArtifactKind, store: ObjectStore, index: list[dict[str, Any]], entry: dict[str, Any],
           current: dict[str, Any] | None, move: bool, created: bool,
           manifest: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The index in the states `move` implies (if it changed), then the pointer (if it moves); a failure is
    undone as far as it safely can. Returns the entry as listed."""
    group, version = entry[kind.group], entry["version"]
    versions = kind.restate(_with_entry(kind, index, entry), group,
                            version if move else kind.in_force(current))
    pointer = _pointer(kind, store, entry, manifest) if move else None
    try:
        old_index: bytes | None = store.get(kind.index_key)
    except MissingObject:
        old_index = None
    wrote_index = False
    try:
        if versions != index:
            store.put(kind.index_key, _dumps({"format": 1, "versions": versions}), JSON)
            wrote_index = True
        if pointer is not None and current != pointer:
            store.put(kind.latest_key(group), _dumps(pointer), JSON)
    except StoreError:
        _undo(kind, store, group, version, old_index, wrote_index, created)
        raise
    return _find(kind, versions, group, version) or entry


def _latest_manifest(kind: ArtifactKind, store: ObjectStore, group: str,
                     current: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The manifest of the version `latest` names: what a gate compares a new version with."""
    if not kind.in_force(current):
        return None
    try:
        return get_json(store, kind.manifest_key(group, str(kind.in_force(current))))
    except MissingObject:
        raise CorruptObject(f"{kind.latest_key(group)} in {store.url} names {kind.in_force(current)}, which has no "
                            f"manifest (`mlgo-farm {kind.verb} promote` a listed version to repair it)") from None


def publish(kind: ArtifactKind, store: ObjectStore, files: Mapping[str, bytes], manifest: Mapping[str, Any], *,
            when: float | None = None, judge: Judge | None = None, against_latest: bool = False,
            raw_manifest: bytes | None = None) -> dict[str, Any]:
    """Publish a checked artifact (call under `farm.locks.publish_lock`).

    `judge(record, baseline)` gives a new version's verdict: the baseline is `latest`'s manifest with
    `against_latest` (read, like the index, before anything is uploaded), else `latest`'s pointer. A
    kind whose manifest is not `stamped` stores `raw_manifest` (its bytes as written) when given.
    Returns {group field, version, sha256 (the identity), created, latest, previous, state, gate}:
    `latest` is the version `latest` names afterwards, `previous` the one it named before.
    """
    group, identity = str(manifest[kind.group]), str(manifest[kind.identity])
    held = kind.held(manifest)  # an optional file the manifest does not record would be stored unverifiable
    if set(held) - set(files) or set(files) & set(kind.optional) - set(held):
        raise InputError(f"{group} {kind.noun}: the files given ({', '.join(sorted(files))}) are not the ones its "
                         f"manifest records ({', '.join(held)}); nothing published")
    existing = find_by_hash(kind, store, group, identity)
    read_index(kind, store)  # a corrupt index, pointer or baseline fails before anything is uploaded
    before = read_latest(kind, store, group)
    baseline = _latest_manifest(kind, store, group, before) if against_latest else before
    now = time.time() if when is None else when
    version = existing or kind.version_name(manifest, now)
    if existing:
        stored = get_json(store, kind.manifest_key(group, version))
    else:
        stored = {**manifest, "version": version, "published_at": timestamp(now)} if kind.stamped else dict(manifest)
        raw = _dumps(stored) if kind.stamped or raw_manifest is None else raw_manifest
        _upload(kind, store, kind.prefix(group, version), files, raw, stored)
    created = not existing
    record = {**stored, "version": version, "published_at": stored.get("published_at") or timestamp(now)}
    index = read_index(kind, store)
    current = read_latest(kind, store, group)
    listed = _find(kind, index, group, version)
    if listed is None:
        entry = kind.index_entry(record)
        verdict = judge(record, baseline if against_latest else current) if judge else None
        if verdict is not None:
            entry["gate"] = verdict.to_dict()
    else:
        entry = listed
    move = accepted(entry) and entry.get("state", "latest") == "latest" and \
        _is_newer(kind, entry, current, created and listed is None)
    entry = _write(kind, store, index, entry, current, move, created, stored)
    return {kind.group: group, "version": version, "sha256": identity, "created": created,
            "latest": version if move else kind.in_force(current),
            "previous": kind.in_force(before), "state": entry.get("state"), "gate": entry.get("gate")}


def promote(kind: ArtifactKind, store: ObjectStore, group: str, version: str, reason: str, by: str = "",
            when: float | None = None) -> dict[str, Any]:
    """Make a listed, intact version `latest` whatever its gate said (call under the publish lock).

    The operator's override: the index entry records who, when, why and which version was
    `latest` before, and keeps the gate's verdict beside it. Returns the version's entry.
    """
    if check_version_name(version) == "latest":
        raise InputError("promote names a version, not `latest`")
    if not reason.strip():
        raise InputError("a promotion needs a reason (--reason): it is recorded with the version")
    index = read_index(kind, store)
    listed = _find(kind, index, group, version)
    if listed is None:
        raise InputError(f"no {group} {kind.noun} version {version} is listed in {store.url}")
    base = kind.prefix(group, version)
    manifest = get_json(store, f"{base}/{MANIFEST}")
    if (name := _mismatch(kind, store, base, manifest)) is not None:
        raise CorruptObject(f"{base}/{name} does not match its manifest's sha256; not promoted")
    current = read_latest(kind, store, group)
    if kind.in_force(current) == version:
        return listed
    entry = {**listed, "promoted": {"at": timestamp(time.time() if when is None else when), "by": by,
                                    "reason": " ".join(reason.split()), "previous": kind.in_force(current)}}
    entry = _write(kind, store, index, entry, current, True, False, manifest)
    log.info("%s %s %s promoted to latest by %s: %s", group, kind.noun, version, by or "?", reason)
    return entry


def settle(kind: ArtifactKind, store: ObjectStore, group: str, version: str, outcome: Check) -> dict[str, Any] | None:
    """Record the outcome of a listed version's pending rule; `latest` moves to it if every rule now holds
    (and it is newer than `latest`). Call under the publish lock.

    Returns the version's entry, or None when it has no such rule pending (settled before, promoted,
    or published without it): a repeated check changes nothing.
    """
    index = read_index(kind, store)
    listed = _find(kind, index, group, version)
    if listed is None or outcome.rule not in ((listed.get("gate") or {}).get("pending") or ()):
        return None
    entry = {**listed, "gate": settled(listed["gate"], outcome)}
    current = read_latest(kind, store, group)
    move = accepted(entry) and _is_newer(kind, entry, current, False)
    entry = _write(kind, store, index, entry, current, move, False)
    log.info("%s %s %s: %s %s%s", group, kind.noun, version, outcome.rule, "holds" if outcome.ok else "fails",
             "; now latest" if move else "")
    return entry


def newest(kind: ArtifactKind, store: ObjectStore, group: str, rule: str) -> str | None:
    """The newest version that is `latest` or waits only for `rule`: what a consumer settling `rule` uses."""
    current = kind.in_force(read_latest(kind, store, group))
    waiting = [v for v in read_index(kind, store) if v.get(kind.group) == group
               and (v.get("version") == current or awaits_only(v.get("gate"), rule))]
    return str(max(waiting, key=lambda v: str(v.get("published_at")))["version"]) if waiting else None


def held_back(kind: ArtifactKind, store: ObjectStore, group: str) -> dict[str, str] | None:
    """The group's newest candidate while no version is `latest`: {version, why (its gate's reasons, one line),
    promote (the command that makes it latest)}; None when nothing of the group is listed."""
    listed = [v for v in read_index(kind, store) if v.get(kind.group) == group and v.get("version")]
    waiting = [v for v in listed if v.get("state") == "candidate"] or listed
    if not waiting:
        return None
    newest = max(waiting, key=lambda v: (str(v.get("published_at")), str(v.get("version"))))
    gate = newest.get("gate") if isinstance(newest.get("gate"), dict) else {}
    reasons = [" ".join(str(r).split()) for r in gate.get("reasons") or () if str(r).strip()]
    version = str(newest["version"])
    usage = kind.promote_usage or f"mlgo-farm {kind.verb} promote {{group}} {{version}} --reason '...'"
    return {"version": version, "why": "; ".join(reasons) or "not promoted",
            "promote": usage.format(group=group, version=version)}


def nothing_latest(kind: ArtifactKind, store: ObjectStore, group: str) -> NothingPublished:
    """The one line a request for `latest` answers when the group has no `latest`: where it looked and, when a
    candidate waits, which one, why it was held back and how to make it latest."""
    waiting = held_back(kind, store, group)
    if waiting is None:
        return NothingPublished(f"no {group} {kind.noun} has been published to {store.url}")
    return NothingPublished(f"no {group} {kind.noun} is latest in {store.url}; the newest candidate "
                            f"{waiting['version']} was held back ({waiting['why']}): {waiting['promote']} makes it "
                            f"latest")


def resolve(kind: ArtifactKind, store: ObjectStore, group: str, version: str) -> str:
    """A concrete version name; `latest` follows the group's pointer."""
    check_version_name(version)
    if version != "latest":
        return version
    pointer = read_latest(kind, store, group)
    if pointer is None:
        raise nothing_latest(kind, store, group)
    return check_version_name(kind.in_force(pointer) or "")


def show(kind: ArtifactKind, store: ObjectStore, group: str, version: str) -> dict[str, Any]:
    """A version's manifest (`latest` resolved)."""
    version = resolve(kind, store, group, version)
    try:
        return get_json(store, kind.manifest_key(group, version))
    except MissingObject:
        raise InputError(f"no {group} {kind.noun} version {version} in {store.url}") from None


def download(kind: ArtifactKind, store: ObjectStore, group: str, version: str, out: Path,
             name: str | None = None) -> dict[str, Any]:
    """Fetch a version's file `name` (the kind's first) to `out` after checking its sha256 (nothing is written
    on a mismatch); 0644: a download is for every user of the machine. Returns the manifest."""
    return download_files(kind, store, group, version, {name or kind.files[0]: Path(out)})


def download_files(kind: ArtifactKind, store: ObjectStore, group: str, version: str,
                   outs: Mapping[str, Path]) -> dict[str, Any]:
    """Fetch a version's files (name -> where), every one checked against its manifest before any is written (a
    mismatch: StoreError, one line; a file the version does not hold: InputError). Returns the manifest."""
    version = resolve(kind, store, group, version)
    manifest = show(kind, store, group, version)
    digests, held = kind.digests(manifest), kind.held(manifest)
    checked: list[tuple[Path, bytes]] = []
    for name, out in outs.items():
        key = f"{kind.prefix(group, version)}/{name}"
        if name not in held:
            raise InputError(f"{group} {kind.noun} {version} has no {name}")
        data = store.get(key)
        got, expected = sha256(data), digests.get(name)
        if got != expected:
            raise StoreError(f"checksum mismatch for {key}: manifest says {expected}, got {got}; nothing written")
        checked.append((Path(out), data))
    for out, data in checked:
        write_atomic(out, data)
    return manifest
