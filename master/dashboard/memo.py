"""What the dashboard computes from published, immutable versions, computed once: an LRU with single flight.

A published version never changes (its name ends in its digest, and `vocab publish` / `policy publish`
never rewrite one), so what is derived from it — a diff of two versions, the sha256 of a stored object
identified by its inode or its S3 ETag — is the same on every request. Without a cache, anonymous
visitors asking for one diff page at once kept the master's one Python process (and with it the REST API
and the web UI, which share its GIL) busy for a minute. Concurrent requests for the same key wait for
the one computation already under way instead of starting their own; a computation that fails is not
kept (the next request tries again).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any


class Memo:
    """A bounded LRU of computed values; `computed` counts the computations that ran (what tests check)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.computed = 0
        self._values: OrderedDict[Hashable, Any] = OrderedDict()
        self._flights: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()

    def _cached(self, key: Hashable) -> tuple[bool, Any]:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return True, self._values[key]
            return False, None

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The value for `key`, from `compute()` once per key while it stays among the `size` most recent."""
        hit, value = self._cached(key)
        if hit:
            return value
        with self._lock:
            flight = self._flights.setdefault(key, threading.Lock())
        with flight:
            hit, value = self._cached(key)
            if hit:
                return value
            try:
                value = compute()
            except BaseException:
                with self._lock:
                    self._flights.pop(key, None)
                raise
            with self._lock:  # kept before its flight ends: a request arriving now finds the value
                self.computed += 1
                self._values[key] = value
                while len(self._values) > self.size:
                    self._values.popitem(last=False)
                self._flights.pop(key, None)
            return value

    def forget(self, key: Hashable) -> None:
        """Drop `key`'s value: what it was computed from turned out not to be what the key promised (bytes that
        rotted in place keep their inode, size and mtime), so the next request computes it again."""
        with self._lock:
            self._values.pop(key, None)
