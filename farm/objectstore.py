"""Bytes under keys: the object store, S3 through boto3 or a local directory as the embedded default.

The lower of the farm's two storage layers: it knows objects, not versions. What a key means (a
vocabulary's files, an index, a `latest` pointer) is the upper layer's, farm/artifacts/ (docs/artifacts.md).
Both back ends share one small interface (`ObjectStore`) keyed by `/`-separated names such as
`vocab/ir/<version>/vocab.json`. Writes of one object are atomic in both. Every failure is a
one-line StoreError (a full disk under the directory store included), so callers and Celery's
retry policy treat both back ends alike. The directory store's objects are 0644 and its
directories 0755: a web server running as another user serves them as they are.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlparse

from farm.atomic import describe, write_atomic
from farm.errors import FarmError, InputError, StoreError

_KEY = re.compile(r"^[A-Za-z0-9._+=@-]+(/[A-Za-z0-9._+=@-]+)*$")
#: Bytes read per step when an object is hashed.
_CHUNK = 1 << 20


def check_key(key: str) -> str:
    """Reject keys that could escape their prefix (`..`, leading `/`, odd characters)."""
    if not _KEY.match(key) or any(part in (".", "..") for part in key.split("/")):
        raise InputError(f"invalid object key {key!r}")
    return key


class ObjectStore(Protocol):
    url: str

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None: ...
    def get(self, key: str) -> bytes: ...
    def exists(self, key: str) -> bool: ...
    def list(self, prefix: str = "") -> list[str]: ...
    def delete(self, key: str) -> None: ...
    def link(self, key: str) -> str: ...
    def sha256(self, key: str) -> tuple[str, int]: ...


class MissingObject(StoreError):
    """The key does not exist in the store."""


class CorruptObject(StoreError):
    """An object in the store is not what the farm wrote (not JSON, not an object): retrying cannot help."""


class FileStore:
    """A directory on local disk laid out exactly like the bucket.

    A bucket has no directories, so this store leaves none that hold nothing: a failed put removes
    the directories it made, and a delete removes the directories it empties (up to the root). A
    failed or rolled-back publish thus leaves the tree exactly as it was, not an empty version
    directory the dashboard would list.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root).absolute()
        self.url = self.root.as_uri()

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        path = self._path(key)
        for attempt in (1, 2):
            try:
                write_atomic(path, data)  # 0644, new directories 0755
                return
            except FarmError as e:  # a full disk, a read-only or unwritable directory: the store failed
                if attempt == 1 and not path.parent.is_dir():
                    continue  # a concurrent delete pruned the directory just made for this object
                self._prune(path.parent)
                if isinstance(e, StoreError):
                    raise
                raise StoreError(str(e)) from None  # "cannot write <path>: no space left on device"

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise MissingObject(f"{key} not found in {self.url}") from None
        except OSError as e:
            raise StoreError(f"get {key} from {self.url} failed: {describe(e)}") from None

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def list(self, prefix: str = "") -> list[str]:
        if not self.root.is_dir():
            return []
        keys = []
        for dirpath, _, files in os.walk(self.root):
            for f in files:
                if f.startswith("."):
                    continue  # temporaries of write_atomic
                key = Path(dirpath, f).relative_to(self.root).as_posix()
                if key.startswith(prefix):
                    keys.append(key)
        return sorted(keys)

    def delete(self, key: str) -> None:
        path = self._path(key)
        try:
            path.unlink(missing_ok=True)
        except OSError as e:
            raise StoreError(f"delete {key} in {self.url} failed: {describe(e)}") from None
        self._prune(path.parent)

    def _prune(self, directory: Path) -> None:
        """Remove `directory` and its ancestors below the root while they are empty (rmdir refuses others)."""
        while directory != self.root and self.root in directory.parents:
            try:
                directory.rmdir()
            except OSError:  # not empty (or gone, or not ours to remove): the objects above stay reachable
                return
            directory = directory.parent

    def link(self, key: str) -> str:
        return self._path(key).as_uri()

    def sha256(self, key: str) -> tuple[str, int]:
        """(sha256, size) of an object, read in chunks (`store verify` holds one chunk, never a whole model)."""
        h, size = hashlib.sha256(), 0
        try:
            with self._path(key).open("rb") as f:
                while chunk := f.read(_CHUNK):
                    h.update(chunk)
                    size += len(chunk)
        except FileNotFoundError:
            raise MissingObject(f"{key} not found in {self.url}") from None
        except OSError as e:
            raise StoreError(f"get {key} from {self.url} failed: {describe(e)}") from None
        return h.hexdigest(), size


class S3Store:
    """An S3 bucket (AWS, MinIO, or any S3 endpoint) under an optional key prefix."""

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        endpoint_url: str | None = None,
        region: str = "us-east-1",
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        connect_timeout: float = 5,
        retries: int = 2,
    ) -> None:
        import boto3
        from botocore.config import Config

        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.endpoint_url = endpoint_url or None
        self.url = f"s3://{bucket}/{self.prefix}".rstrip("/")
        cfg = Config(
            connect_timeout=connect_timeout,
            read_timeout=30,
            retries={"max_attempts": retries, "mode": "standard"},
        )
        self.client = boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name=region,
            aws_access_key_id=access_key_id or None,
            aws_secret_access_key=secret_access_key or None,
            config=cfg,
        )

    def _key(self, key: str) -> str:
        check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def _call(self, what: str, fn, **kwargs):
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return fn(**kwargs)
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            if code in ("NoSuchKey", "404", "NotFound"):
                raise MissingObject(f"{what}: not found in {self.url}") from None
            raise StoreError(f"{what} on {self.url} failed: {code or e}") from None
        except BotoCoreError as e:
            raise StoreError(f"{what} on {self.url} failed: {e}") from None

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        self._call(
            f"put {key}",
            self.client.put_object,
            Bucket=self.bucket,
            Key=self._key(key),
            Body=data,
            ContentType=content_type,
        )

    def get(self, key: str) -> bytes:
        resp = self._call(f"get {key}", self.client.get_object, Bucket=self.bucket, Key=self._key(key))
        return resp["Body"].read()

    def sha256(self, key: str) -> tuple[str, int]:
        """(sha256, size) of an object, its body streamed in chunks."""
        from botocore.exceptions import BotoCoreError

        body = self._call(f"get {key}", self.client.get_object, Bucket=self.bucket, Key=self._key(key))["Body"]
        h, size = hashlib.sha256(), 0
        try:
            for chunk in body.iter_chunks(_CHUNK):
                h.update(chunk)
                size += len(chunk)
        except (BotoCoreError, OSError) as e:
            raise StoreError(f"get {key} on {self.url} failed: {e}") from None
        finally:
            body.close()
        return h.hexdigest(), size

    def exists(self, key: str) -> bool:
        try:
            self._call(f"head {key}", self.client.head_object, Bucket=self.bucket, Key=self._key(key))
        except MissingObject:
            return False
        return True

    def list(self, prefix: str = "") -> list[str]:
        full = self._key(prefix.rstrip("/")) if prefix else self.prefix
        strip = len(self.prefix) + 1 if self.prefix else 0
        keys: list[str] = []
        token = None
        while True:
            kwargs = {"Bucket": self.bucket, "Prefix": full}
            if token:
                kwargs["ContinuationToken"] = token
            resp = self._call(f"list {prefix or '/'}", self.client.list_objects_v2, **kwargs)
            keys += [o["Key"][strip:] for o in resp.get("Contents", [])]
            if not resp.get("IsTruncated"):
                return sorted(k for k in keys if k.startswith(prefix))
            token = resp["NextContinuationToken"]

    def delete(self, key: str) -> None:
        self._call(f"delete {key}", self.client.delete_object, Bucket=self.bucket, Key=self._key(key))

    def link(self, key: str) -> str:
        base = self.endpoint_url or f"https://{self.bucket}.s3.amazonaws.com"
        if self.endpoint_url:
            return f"{base.rstrip('/')}/{self.bucket}/{self._key(key)}"
        return f"{base}/{self._key(key)}"

    def ensure_bucket(self) -> None:
        """Create the bucket if it does not exist (for MinIO and loopback endpoints)."""
        from botocore.exceptions import ClientError

        try:
            self.client.head_bucket(Bucket=self.bucket)
        except ClientError:
            self._call("create bucket", self.client.create_bucket, Bucket=self.bucket)


def open_store(url: str, *, endpoint_url: str = "", region: str = "us-east-1",
               access_key_id: str = "", secret_access_key: str = "") -> ObjectStore:
    """Open `file:///dir` or `s3://bucket/prefix`."""
    u = urlparse(url)
    if u.scheme == "file":
        if u.netloc not in ("", "localhost") or not u.path.startswith("/"):  # file://var/store: a host named "var"
            raise InputError(f"store URL {url!r} is not an absolute file URL: use file:///abs/dir")
        return FileStore(Path(unquote(u.path)))
    if u.scheme == "s3":
        if not u.netloc:
            raise InputError(f"store URL {url!r} names no bucket")
        return S3Store(u.netloc, u.path, endpoint_url, region, access_key_id, secret_access_key)
    raise InputError(f"unsupported store URL {url!r}: use file:///dir or s3://bucket/prefix")


def store_from_settings(settings=None) -> ObjectStore:
    """The store the configuration names (embedded directory under var/ by default)."""
    from farm.config import load_settings

    s = settings or load_settings()
    return open_store(
        s.store_url,
        endpoint_url=s.store.endpoint_url,
        region=s.store.region,
        access_key_id=s.store.access_key_id,
        secret_access_key=s.store.secret_access_key,
    )
