"""The publish lock: one publisher at a time, so identical requests make one version.

A directory store is locked with flock on a file in it; an S3 store with a Redis lock (the
Celery broker's Redis) that expires, so a killed worker cannot hold it forever.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
from collections.abc import Iterator

from farm.errors import StoreError
from farm.store import FileStore, ObjectStore

log = logging.getLogger(__name__)
LOCK_NAME = "mlgo-farm:vocab-publish"


@contextlib.contextmanager
def _file_lock(store: FileStore) -> Iterator[None]:
    store.root.mkdir(parents=True, exist_ok=True)
    with open(store.root / ".vocab-publish.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextlib.contextmanager
def _redis_lock(url: str, timeout: float, wait: float) -> Iterator[None]:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=10)
    lock = client.lock(LOCK_NAME, timeout=timeout, blocking_timeout=wait)
    try:
        acquired = lock.acquire()
    except redis.exceptions.RedisError as e:
        raise StoreError(f"cannot take the publish lock in Redis at {url}: {e}") from None
    if not acquired:
        raise StoreError(f"the publish lock in Redis at {url} is busy after {wait:g}s")
    try:
        yield
    finally:
        try:
            lock.release()
        except redis.exceptions.LockError:
            log.warning("publish lock expired before release (publish took over %ss)", timeout)
        except redis.exceptions.RedisError as e:
            log.warning("could not release the publish lock: %s", e)
        client.close()


def publish_lock(store: ObjectStore, redis_url: str, timeout: float = 300, wait: float = 120):
    """The lock that serializes publishing to `store`."""
    if isinstance(store, FileStore):
        return _file_lock(store)
    return _redis_lock(redis_url, timeout, wait)
