"""Locks: the publish lock (one publisher at a time, so identical requests make one version) and local
output directories shared by concurrent tasks.

A directory store is locked with flock on a file in it; an S3 store with a Redis lock (the
Celery broker's Redis) that expires, so a killed worker cannot hold it forever. The kernel
drops an flock when its holder dies. The Redis URL gets the farm's password like every other
client's (farm.secrets.effective_redis_url), and no message names it unredacted.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

from farm.config import Settings, load_settings
from farm.errors import StoreError
from farm.objectstore import FileStore, ObjectStore
from farm.secrets import effective_redis_url, redact

log = logging.getLogger(__name__)
LOCK_NAME = "mlgo-farm:vocab-publish"


@contextlib.contextmanager
def file_lock(path: Path, wait: bool = True) -> Iterator[bool]:
    """An exclusive flock on `path` (created, with its directory, if missing). `wait=False`: do not wait for
    another holder; the block gets False then (and holds nothing)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def dir_lock(target: Path):
    """The lock of output directory `target`: a hidden lock file beside it."""
    target = Path(target).absolute()
    return file_lock(target.with_name(f".{target.name}.lock"))


def made_once(target: Path, marker: str, make: Callable[[], object]) -> Path:
    """`target`, made by `make()` under its lock unless a complete copy (one holding `marker`) is there.

    Concurrent tasks that need the same local output (a package's corpus, say) make it once: the
    others wait for the lock, then find it complete. Without the lock both would build, and the
    second's rename would fail on (or swap away) the first's copy while it is being read. A
    complete copy is never replaced, so readers need no lock.
    """
    target = Path(target)
    if (target / marker).is_file():
        return target
    with dir_lock(target):
        if not (target / marker).is_file():
            make()
    return target


@contextlib.contextmanager
def _redis_lock(url: str, timeout: float, wait: float) -> Iterator[None]:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=10)
    lock = client.lock(LOCK_NAME, timeout=timeout, blocking_timeout=wait)
    try:
        acquired = lock.acquire()
    except redis.exceptions.RedisError as e:
        client.close()
        reason = " ".join(str(e).split())
        raise StoreError(redact(f"cannot take the publish lock in Redis at {url}: {reason}")) from None
    if not acquired:
        client.close()
        raise StoreError(redact(f"the publish lock in Redis at {url} is busy after {wait:g}s"))
    try:
        yield
    finally:
        try:
            lock.release()
        except redis.exceptions.LockError:
            log.warning("publish lock expired before release (publish took over %ss)", timeout)
        except redis.exceptions.RedisError as e:
            log.warning("could not release the publish lock: %s", redact(str(e)))
        client.close()


def publish_lock(store: ObjectStore, redis_url: str, timeout: float = 300, wait: float = 120,
                 settings: Settings | None = None):
    """The lock that serializes publishing to `store`; `redis_url` as configured (the password is added here)."""
    if isinstance(store, FileStore):
        return file_lock(store.root / ".vocab-publish.lock")
    return _redis_lock(effective_redis_url(redis_url, settings or load_settings()), timeout, wait)
