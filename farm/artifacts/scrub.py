"""`mlgo-farm store verify`: every file of every published version read back and checked against its manifest.

Publishing reads each file back once (farm/artifacts/versions.py) and `download` checks what it fetches, but a
disk or a bucket can rot afterwards, and a copy or a restore can truncate: the dashboard then refuses such a
file when someone asks for it (master/dashboard/files.py). The scrub finds every one at once, before anyone
asks: each version with a manifest (a version exists once its manifest does) of every kind (farm/artifacts/
kinds.py), each of its files (the kind's, and the optional ones its manifest records: a policy's model.weights)
hashed in chunks against the digest its manifest records; a manifest, an
index or a `latest` pointer that does not parse; and an index entry or a pointer naming a version that has no
manifest. Files without a manifest are an upload cut short, never listed nor served (the next publish of the
same content removes them): not counted. One line per bad object, so a cron mail or a monitoring check reads it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from farm.artifacts.kinds import DATASET, KINDS, MANIFEST, ArtifactKind, check_version_name
from farm.artifacts.versions import get_json, read_index, read_latest
from farm.embeddings import KINDS as DATA_KINDS
from farm.errors import InputError
from farm.objectstore import CorruptObject, MissingObject, ObjectStore

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Scrub:
    """What a scrub read: published versions, objects checked (their files and manifests), the bad ones' lines."""

    versions: int
    objects: int
    bad: tuple[str, ...]


def _versions(kind: ArtifactKind, store: ObjectStore) -> tuple[set[str], dict[tuple[str, str], set[str]]]:
    """(every group with a key under the kind's root, (group, version) -> the file names stored under it)."""
    groups: set[str] = set()
    found: dict[tuple[str, str], set[str]] = {}
    for key in store.list(f"{kind.root}/"):
        parts = key.split("/")
        if len(parts) < 3 or (kind is DATASET and parts[1] not in DATA_KINDS):  # `datasets/shards/`: staging
            continue
        groups.add(parts[1])
        if len(parts) == 4:
            found.setdefault((parts[1], parts[2]), set()).add(parts[3])
    return groups, found


def _digests(kind: ArtifactKind, manifest: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return kind.digests(manifest)
    except (TypeError, ValueError):  # a dataset's `files` that is not an object
        return {}


def _check(store: ObjectStore, key: str, expected: Any) -> str | None:
    """Why the object `key` is bad (None: its bytes hash to `expected`)."""
    if not isinstance(expected, str) or not _SHA256.match(expected):
        return f"{key}: its manifest records no sha256 for it"
    try:
        got, size = store.sha256(key)
    except MissingObject:
        return f"{key}: missing (its manifest records sha256 {expected})"
    if got != expected:
        return f"{key}: sha256 {got} ({size} bytes) is not the {expected} its manifest records"
    return None


def _named(kind: ArtifactKind, store: ObjectStore, groups: Iterable[str], published: set[tuple[str, str]],
           bad: Callable[[str], None]) -> None:
    """Index entries and `latest` pointers that do not parse or name a version with no manifest."""
    try:
        for entry in read_index(kind, store):
            group, version = str(entry.get(kind.group)), str(entry.get("version"))
            if (group, version) not in published:
                bad(f"{kind.index_key}: lists {group} {kind.noun} {version}, which has no manifest")
    except CorruptObject as e:
        bad(str(e))
    for group in sorted(groups):
        try:
            version = kind.in_force(read_latest(kind, store, group))
        except CorruptObject as e:
            bad(str(e))
            continue
        if version is not None and (group, version) not in published:
            bad(f"{kind.latest_key(group)}: names {kind.noun} {version}, which has no manifest")


def verify(store: ObjectStore, bad: Callable[[str], None] = lambda line: None,
           kinds: Iterable[ArtifactKind] = KINDS) -> Scrub:
    """Check every published version of `kinds` in `store`; `bad(line)` hears of each bad object as it is found
    (a scrub of a large store takes a while). Store failures (unreachable) are StoreError, as everywhere."""
    lines: list[str] = []

    def found(line: str) -> None:
        lines.append(line)
        bad(line)

    versions = objects = 0
    for kind in kinds:
        groups, stored = _versions(kind, store)
        published = {gv for gv, names in stored.items() if MANIFEST in names}
        for group, version in sorted(published):
            try:
                base = kind.prefix(group, check_version_name(version))
            except InputError:
                continue  # no version name: nothing publishes or serves it
            versions += 1
            objects += 1
            try:
                manifest = get_json(store, f"{base}/{MANIFEST}")
            except CorruptObject as e:
                found(str(e))
                continue
            digests = _digests(kind, manifest)
            for name in (*kind.files, *(n for n in kind.optional if n in digests)):  # what the manifest records
                objects += 1
                problem = _check(store, f"{base}/{name}", digests.get(name))
                if problem is not None:
                    found(problem)
        _named(kind, store, groups, published, found)
    return Scrub(versions, objects, tuple(lines))
