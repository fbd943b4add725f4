"""Which store objects the dashboard serves, and the stable download names it adds on top of them.

Only published artifacts leave the store over HTTP: the `vocab/` and `policies/` prefixes (what
`vocab publish` and `policy publish` wrote: versions, manifests, `index.json`, `latest.json`),
the regression reports under `regression/`, and the published triplet datasets: exactly
`datasets/{kind}/latest.json` and the four files of `datasets/{kind}/{id}/` (`dataset publish`
writes the manifest after the three text files, so an id without one is not served). Everything
else in the bucket (`vocab-staging/`, `datasets/shards/` of a sharded run, a half-written
temporary, any other name under `datasets/`) is refused exactly like a key that does not exist,
so a URL cannot tell an outsider what else the store holds. Keys go through farm.objectstore.check_key
(no `..`, no leading `/`, no odd characters, no name over 255 bytes, no key over 1,024 bytes: S3's
limit, and the directory store's file system would answer ENAMETOOLONG) and, for the directory store,
the file a link resolves to must itself be a served key under the same prefix as the URL's (a link
under `regression/` never serves `vocab-staging/` or `vocab/`; one under a dataset never another
dataset), and a link loop or any other unreadable path is a key that does not exist.

Objects are served open, to be streamed (master/dashboard/stream.py), never read whole: a Blob is the
open reader, its size and what identifies its bytes (inode and modification time, or S3's ETag) so
that their sha256 (the ETag) is computed once per object (master/dashboard/memo.py).

Stable names that are not objects: `{root}/{kind}/latest/{file}` follows the kind's `latest.json`
pointer, and `{file}.sha256` beside a version's artifact (and beside a policy's `model.weights`) is the checksum
its manifest records, in `sha256sum -c` format, so a user checks the bytes against what the farm validated.

A version's files (a vocabulary's `vocab.json`, a policy's `model.onnx` and, when its manifest records them,
`model.weights`, a dataset's three text files) are
served only if their bytes hash to the sha256 their manifest records: a file truncated or rotten on disk
(or in a bucket) is a CorruptObject, which the app answers with an error and never caches (app.py). A
Served names the digest its bytes must have; the app compares it with the digest it computes once per
object identity. The indexes, pointers and manifests are read by `read_json` through the farm's one JSON
reader (farm/jsonio.py): one that does not parse (a 5,001-digit integer, arrays 100,000 deep, no JSON at
all) or holds an integer no float holds is a CorruptObject too, one line naming the key, never a traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import mimetypes
import os
import re
import stat
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from farm import jsonio
from farm.artifacts.kinds import DATASET, POLICY, VOCAB, ArtifactKind, check_version_name
from farm.artifacts.kinds import MANIFEST as DATASET_MANIFEST
from farm.embeddings import KINDS
from farm.errors import InputError
from farm.objectstore import CorruptObject, FileStore, MissingObject, ObjectStore, S3Store, check_key

#: Published prefixes: their versioned artifact file, as named in each version's manifest sha256 (the kinds'
#: declarations, farm/artifacts/kinds.py).
ARTIFACTS = {kind.root: kind.files[0] for kind in (VOCAB, POLICY)}
#: The kinds whose version files are checked against their manifest's digests before they are served.
VERSIONED: dict[str, ArtifactKind] = {kind.root: kind for kind in (VOCAB, POLICY, DATASET)}
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
#: Where `dataset publish` puts datasets (its `shards/` staging is never served).
DATASETS = DATASET.root
DATASET_FILES = DATASET.files
#: Prefixes served at all (regression reports and published datasets read-only beside the artifacts).
SERVED = (*ARTIFACTS, "regression", DATASETS)
#: The longest name of one path segment and of a whole key that can name anything (file systems; S3's key limit).
MAX_NAME, MAX_KEY = 255, 1024
#: Bytes hashed per read when computing a digest.
_HASH_CHUNK = 1024 * 1024
_TYPES = {".json": "application/json", ".html": "text/html; charset=utf-8", ".txt": "text/plain; charset=utf-8",
          ".png": "image/png", ".svg": "image/svg+xml", ".onnx": "application/octet-stream",
          ".sha256": "text/plain; charset=utf-8"}


class NotServed(Exception):
    """The key names nothing the dashboard serves (missing, refused or unsafe): HTTP 404."""


@dataclass(frozen=True)
class Blob:
    """A store object opened for serving: read `reader` to the end, then close it."""

    reader: BinaryIO
    size: int
    #: What identifies these bytes (the same identity, the same bytes): the key of their digest in a cache.
    identity: Hashable
    #: Another reader of the same bytes (for the digest when `reader` cannot seek back).
    reopen: Callable[[], BinaryIO]

    def sha256(self) -> str:
        """The bytes' sha256, read in chunks (constant memory); `reader` is left at the start."""
        h = hashlib.sha256()
        seekable = self.reader.seekable()
        src = self.reader if seekable else self.reopen()
        try:
            while chunk := src.read(_HASH_CHUNK):
                h.update(chunk)
        finally:
            if seekable:
                self.reader.seek(0)
            else:
                src.close()
        return h.hexdigest()


@dataclass(frozen=True)
class Served:
    key: str
    content_type: str
    #: True for a versioned object (never changes); False for `latest` and the indexes.
    immutable: bool
    version: str | None = None
    #: A short answer made here (a checksum line), or
    data: bytes | None = None
    #: a store object, open, to be streamed.
    blob: Blob | None = None
    #: (its key, the sha256 its version's manifest records): a version's file is served only with that digest.
    expected: tuple[str, str] | None = None

    def close(self) -> None:
        if self.blob is not None:
            self.blob.reader.close()

    def read(self) -> bytes:
        """The whole bytes (for the pages that compare two versions), closing the blob."""
        if self.blob is None:
            return self.data or b""
        try:
            return self.blob.reader.read()
        finally:
            self.close()


def content_type(name: str) -> str:
    return _TYPES.get(Path(name).suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"


def allowed(key: str) -> str:
    """`key` if the dashboard may serve it, else NotServed."""
    if len(key.encode()) > MAX_KEY or any(len(p.encode()) > MAX_NAME for p in key.split("/")):
        raise NotServed(key[:100])
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


def _scope(parts: list[str]) -> list[str]:
    """The prefix a key's URL names, which a link may not lead out of: a dataset's directory, else the root."""
    return parts[:3] if parts[0] == DATASETS else parts[:1]


def _open_file(store: FileStore, key: str) -> Blob:
    try:
        root = store.root.resolve()
        path = (store.root / key).resolve()
        if not path.is_relative_to(root):
            raise NotServed(key)
        real = path.relative_to(root).as_posix()
        if real != key and (_scope(real.split("/")) != _scope(key.split("/")) or allowed(real) != real):
            raise NotServed(key)  # a link that leaves the URL's prefix, or leads to something not served
        reader = path.open("rb")
    except (OSError, RuntimeError, ValueError):  # too long a name, a link loop, not a file, unreadable
        raise NotServed(key) from None
    st = os.fstat(reader.fileno())
    if not stat.S_ISREG(st.st_mode):
        reader.close()
        raise NotServed(key)
    identity = ("file", str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    return Blob(reader, st.st_size, identity, reopen=lambda: path.open("rb"))


def _open_s3(store: S3Store, key: str) -> Blob:
    """A streaming GET (botocore's StreamingBody); its reopen asks for the same ETag only."""
    got = store._call(f"get {key}", store.client.get_object, Bucket=store.bucket, Key=store._key(key))
    etag = got.get("ETag", "")

    def reopen() -> BinaryIO:
        return store._call(f"get {key}", store.client.get_object, Bucket=store.bucket, Key=store._key(key),
                           IfMatch=etag)["Body"]

    return Blob(got["Body"], int(got["ContentLength"]), ("s3", store.url, key, etag, got["ContentLength"]), reopen)


def open_blob(store: ObjectStore, key: str) -> Blob:
    """The served object `key`, open for streaming (NotServed when it is refused, missing or unreadable)."""
    allowed(key)
    try:
        if isinstance(store, FileStore):
            return _open_file(store, key)
        if isinstance(store, S3Store):
            return _open_s3(store, key)
        data = store.get(key)
    except MissingObject:
        raise NotServed(key) from None
    return Blob(io.BytesIO(data), len(data), ("bytes", hashlib.sha256(data).hexdigest()), lambda: io.BytesIO(data))


def _read(store: ObjectStore, key: str) -> bytes:
    """A small object (an index, a manifest) whole."""
    with open_blob(store, key).reader as reader:
        return reader.read()


def read_json(store: ObjectStore, key: str) -> dict[str, Any]:
    """A small JSON object of the store (an index, a pointer, a manifest): NotServed when there is none, a one-line
    CorruptObject when it is not what the farm writes (the pages show what they read as numbers: an integer no
    float holds would raise OverflowError in one of them)."""
    obj = jsonio.loads(_read(store, key), key, CorruptObject)
    if not isinstance(obj, dict):
        raise CorruptObject(f"{key}: not a JSON object")
    found = jsonio.find(obj, jsonio.beyond_float)
    if found is not None:
        raise CorruptObject(f"{key}: {found[0]} is {jsonio.digits(found[1])}, beyond any number")
    return obj


def expected_digest(store: ObjectStore, key: str) -> str | None:
    """The sha256 the manifest of `key`'s version records for it, when `key` is a version's file
    (`{root}/{group}/{version}/{file}` of a kind, farm/artifacts/kinds.py); None for any other key. NotServed
    when the version has no manifest (an upload cut short: not published), CorruptObject when it records none."""
    parts = key.split("/")
    kind = VERSIONED.get(parts[0])
    if kind is None or len(parts) != 4 or parts[3] not in (*kind.files, *kind.optional):
        return None
    where = "/".join((*parts[:3], DATASET_MANIFEST))
    try:
        digests = kind.digests(read_json(store, where))
    except (TypeError, ValueError):  # a dataset's `files` that is not an object
        digests = {}
    if parts[3] in kind.optional and parts[3] not in digests:
        raise NotServed(key)  # not the version's (a policy's weights stored beside, before manifests recorded them)
    digest = digests.get(parts[3])
    if not isinstance(digest, str) or not _SHA256.match(digest):
        raise CorruptObject(f"{where}: records no sha256 for {parts[3]}")
    return digest


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
    """What a download path serves: a store object (open: stream it, then close it), `latest/` resolved, or a
    `.sha256` made from the manifest."""
    allowed(key)
    parts = key.split("/")
    if len(parts) == 4 and parts[0] in ARTIFACTS:
        root, kind, version, name = parts
        if version == "latest":
            version = latest_version(store, root, kind)
            got = serve(store, f"{root}/{kind}/{version}/{name}")
            return dataclasses.replace(got, key=key, immutable=False, version=version)
        declared = VERSIONED[root]
        held = name.removesuffix(".sha256")
        if name.endswith(".sha256") and held in (*declared.files, *declared.optional):
            digest = declared.digests(manifest(store, root, kind, version)).get(held)
            if not isinstance(digest, str) or len(digest) != 64:
                raise NotServed(key)
            return Served(key, content_type(name), immutable=True, version=version,
                          data=checksum_line(digest, held))
        return _versioned(store, key, version)
    if len(parts) == 4 and parts[0] == DATASETS:
        # a dataset id is the digest of its files: they never change once its manifest says they are published
        # (a file is checked against the manifest, so one without a manifest is NotServed)
        return _versioned(store, key, parts[2])
    return Served(key, content_type(key), immutable=False, blob=open_blob(store, key))


def _versioned(store: ObjectStore, key: str, version: str) -> Served:
    """A file of a published version: immutable, with the digest its manifest records when it is one of the
    kind's files (the manifest is read before the file is opened: nothing is left open when it fails)."""
    digest = expected_digest(store, key)
    return Served(key, content_type(key), immutable=True, version=version, blob=open_blob(store, key),
                  expected=None if digest is None else (key, digest))


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
