"""Which store objects the dashboard serves, and the stable download names it adds on top of them.

Only published artifacts leave the store over HTTP: the `vocab/` and `policies/` prefixes (what
`vocab publish` and `policy publish` wrote: versions, manifests, `index.json`, `latest.json`),
the regression reports under `regression/`, and the published triplet datasets: exactly
`datasets/{kind}/latest.json` and the four files of `datasets/{kind}/{id}/` (`dataset publish`
writes the manifest after the three text files, so an id without one is not served). Everything
else in the bucket (`vocab-staging/`, `datasets/shards/` of a sharded run, a half-written
temporary, any other name under `datasets/`) is refused exactly like a key that does not exist,
so a URL cannot tell an outsider what else the store holds. Keys go through farm.store.check_key
(no `..`, no leading `/`, no odd characters) and, for the directory store, the resolved file must
still lie under the store's root (a symbolic link cannot lead out of it).

Stable names that are not objects: `{root}/{kind}/latest/{file}` follows the kind's `latest.json`
pointer, and `{file}.sha256` beside a version's artifact is the checksum its manifest records,
in `sha256sum -c` format, so a user checks the bytes against what the farm validated.
"""

from __future__ import annotations

import contextlib
import json
import mimetypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farm.errors import InputError
from farm.kinds import KINDS
from farm.store import FileStore, MissingObject, ObjectStore, check_key
from vocabgen.dataset import FILES as DATASET_FILES
from vocabgen.dataset import MANIFEST as DATASET_MANIFEST
from vocabgen.versions import check_version_name

#: Published prefixes: their versioned artifact file, as named in each version's manifest sha256.
ARTIFACTS = {"vocab": "vocab.json", "policies": "model.onnx"}
#: Where `dataset publish` puts datasets (its `shards/` staging is never served).
DATASETS = "datasets"
#: Prefixes served at all (regression reports and published datasets read-only beside the artifacts).
SERVED = (*ARTIFACTS, "regression", DATASETS)
_TYPES = {".json": "application/json", ".html": "text/html; charset=utf-8", ".txt": "text/plain; charset=utf-8",
          ".png": "image/png", ".svg": "image/svg+xml", ".onnx": "application/octet-stream",
          ".sha256": "text/plain; charset=utf-8"}


class NotServed(Exception):
    """The key names nothing the dashboard serves (missing, refused or unsafe): HTTP 404."""


@dataclass(frozen=True)
class Served:
    key: str
    data: bytes
    content_type: str
    #: True for a versioned object (never changes); False for `latest` and the indexes.
    immutable: bool
    version: str | None = None


def content_type(name: str) -> str:
    return _TYPES.get(Path(name).suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"


def allowed(key: str) -> str:
    """`key` if the dashboard may serve it, else NotServed."""
    try:
        check_key(key)
    except InputError:
        raise NotServed(key) from None
    parts = key.split("/")
    if parts[0] not in SERVED or any(p.startswith(".") for p in parts) or len(parts) < 2:
        raise NotServed(key)
    if parts[0] == DATASETS and not _dataset_key(parts):
        raise NotServed(key)
    return key


def _dataset_key(parts: list[str]) -> bool:
    """`datasets/{kind}/latest.json` or a published file of `datasets/{kind}/{id}/`: a known kind, so never
    `datasets/shards/...` (a sharded run's parts, deleted after its merge)."""
    if len(parts) < 3 or parts[1] not in KINDS:
        return False
    if len(parts) == 3:
        return parts[2] == "latest.json"
    return len(parts) == 4 and parts[3] in (*DATASET_FILES, DATASET_MANIFEST)


def _read(store: ObjectStore, key: str) -> bytes:
    allowed(key)
    if isinstance(store, FileStore):
        path = (store.root / key).resolve()
        if not path.is_relative_to(store.root.resolve()) or not path.is_file():
            raise NotServed(key)
    try:
        return store.get(key)
    except MissingObject:
        raise NotServed(key) from None


def read_json(store: ObjectStore, key: str) -> dict[str, Any]:
    try:
        obj = json.loads(_read(store, key))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise NotServed(key) from None
    if not isinstance(obj, dict):
        raise NotServed(key)
    return obj


def latest_version(store: ObjectStore, root: str, kind: str) -> str:
    """The version `{root}/{kind}/latest.json` names (NotServed when there is none or it is not a plain name)."""
    version = read_json(store, f"{root}/{kind}/latest.json").get("version")
    try:
        return check_version_name(str(version))
    except InputError:
        raise NotServed(f"{root}/{kind}/latest") from None


def manifest(store: ObjectStore, root: str, kind: str, version: str) -> dict[str, Any]:
    return read_json(store, f"{root}/{kind}/{version}/manifest.json")


def validated_with(store: ObjectStore, root: str, kind: str, version: str) -> str | None:
    """The LLVM version the manifest's validation record names (None when it names none or is unreadable)."""
    try:
        value = (manifest(store, root, kind, check_version_name(version)).get("validation") or {}).get("llvm_version")
    except (NotServed, InputError, AttributeError):
        return None
    return str(value) if value else None


def checksum_line(digest: str, name: str) -> bytes:
    """One line `sha256sum -c` reads: the digest, two spaces (text mode), the file name."""
    return f"{digest}  {name}\n".encode()


def serve(store: ObjectStore, key: str) -> Served:
    """The bytes behind a download path: a store object, `latest/` resolved, or a `.sha256` made from the manifest."""
    parts = key.split("/")
    if len(parts) == 4 and parts[0] in ARTIFACTS:
        root, kind, version, name = parts
        if version == "latest":
            version = latest_version(store, root, kind)
            got = serve(store, f"{root}/{kind}/{version}/{name}")
            return Served(key, got.data, got.content_type, immutable=False, version=version)
        artifact = ARTIFACTS[root]
        if name == f"{artifact}.sha256":
            digest = manifest(store, root, kind, version).get("sha256")
            if not isinstance(digest, str) or len(digest) != 64:
                raise NotServed(key)
            return Served(key, checksum_line(digest, artifact), content_type(name), immutable=True, version=version)
        return Served(key, _read(store, key), content_type(name), immutable=True, version=version)
    if len(parts) == 4 and parts[0] == DATASETS:
        # a dataset id is the digest of its files: they never change once its manifest says they are published
        allowed(key)
        if not store.exists(f"{'/'.join(parts[:3])}/{DATASET_MANIFEST}"):
            raise NotServed(key)
        return Served(key, _read(store, key), content_type(key), immutable=True, version=parts[2])
    return Served(key, _read(store, key), content_type(key), immutable=False)


def dataset_ids(store: ObjectStore, kind: str) -> list[str]:
    """The published datasets of `kind`: the ids under `datasets/{kind}/` that have a manifest."""
    if kind not in KINDS:
        return []
    ids = []
    for key in store.list(f"{DATASETS}/{kind}/"):
        parts = key.split("/")
        if len(parts) == 4 and parts[3] == DATASET_MANIFEST and _dataset_key(parts):
            with contextlib.suppress(NotServed):
                ids.append(allowed(key).split("/")[2])
    return sorted(ids)


def dataset_manifest(store: ObjectStore, kind: str, dataset_id: str) -> dict[str, Any]:
    return read_json(store, f"{DATASETS}/{kind}/{dataset_id}/{DATASET_MANIFEST}")


def latest_dataset(store: ObjectStore, kind: str) -> str | None:
    """The id `datasets/{kind}/latest.json` names (None when there is none or it names no plain id)."""
    try:
        dataset_id = str(read_json(store, f"{DATASETS}/{kind}/latest.json").get("id") or "")
        return allowed(f"{DATASETS}/{kind}/{dataset_id}/{DATASET_MANIFEST}").split("/")[2]
    except NotServed:
        return None


def versions(store: ObjectStore, root: str) -> list[dict[str, Any]]:
    """The entries of `{root}/index.json` (empty when nothing is published yet)."""
    try:
        listed = read_json(store, f"{root}/index.json").get("versions", [])
    except NotServed:
        return []
    return [v for v in listed if isinstance(v, dict)] if isinstance(listed, list) else []
