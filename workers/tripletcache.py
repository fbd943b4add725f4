"""The farm's module -> triplets cache: what `llvm-ir2vec` made of one module, keyed by its inputs.

A nightly run at a new revision meets mostly modules whose bitcode did not change; their triplets
come from here instead of `opt`/`llc`/`llvm-ir2vec`. The key covers everything the result depends
on (the bitcode's sha256, the kind, the levels chosen for the module, the per-tool timeout, which
decides which modules time out, the MIR extractor's version, the plan's options such as predicate triplets and march
levels, and an identity of the tools and of the farm code that shapes the lines), so an entry
can only ever stand for the result a cold run would compute.

Entries are files `<root>/<2 hex>/<key>`, shared by every build on the worker:

* written to a temporary file beside the target and renamed, so a reader sees a whole entry or none;
* each carries the sha256 of its payload: a torn or corrupted entry is detected, deleted and the
  module recomputed (the cache is only ever a shortcut, never a source of truth);
* bounded: past `max_bytes` the least recently used entries are deleted (a hit refreshes an
  entry's mtime, which is the recency). Each process scans the directory again after writing a
  sixteenth of the bound, so concurrent writers overshoot by at most that much each.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
import time
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farm import jsonio
from farm.errors import InputError

log = logging.getLogger(__name__)

#: Version of the entry layout below; entries of another version are never read (2: compare predicates).
FORMAT = 2
_MAGIC = b"mlgo-farm triplets %d\n" % FORMAT
_DIGEST_LEN = 64
_TMP_PREFIX = ".tmp."
#: After a scan, evict down to this fraction of the bound, so that the next writes do not each scan.
_LOW_WATER = 0.8
#: A temporary file this old belongs to a writer that died; the scan removes it.
_STALE_TMP_SECONDS = 3600

#: Failures that may not repeat on the same input (Toolchain's messages for time-outs and kills).
_UNREPEATABLE = ("timed out after", "SIGKILL", "SIGTERM", "SIGINT", "SIGHUP", "signal 9")
#: What this process saw: hits, misses, stored, corrupt (detected and deleted), evicted.
STATS: Counter[str] = Counter()
_lock = threading.Lock()
_written_since_scan: dict[Path, int] = {}
_warned: set[Path] = set()


@dataclass(frozen=True)
class Entry:
    """One module's result as the dataset needs it."""

    lines: Set[bytes]  # unique `head\ttail\trelation` lines
    raw: int  # triplet lines before deduplication (the manifest counts them)
    max_relation: int
    lost_functions: tuple[str, ...] = ()  # MIR functions the reader left out (workers/mirtriplets.py)
    mir: bytes | None = None  # MIR: the text of a file LLVM parsed, the source of the entity map
    failure: str | None = None  # why the module is skipped (a failure that repeats on the same input)
    module: str | None = None  # the module a failure was met on: its reason names it
    predicates: Set[bytes] = frozenset()  # IR: `ICmp\tICMP_slt` pairs of its compares (workers/predicates.py)
    compares: int = 0  # compares read, before deduplication


def _count(what: str, n: int = 1) -> None:
    with _lock:
        STATS[what] += n


def encode(key: str, e: Entry) -> bytes:
    """The bytes of an entry file: magic, sha256 of the payload, then the payload."""
    lines = b"".join(ln + b"\n" for ln in sorted(e.lines))
    header = {"key": key, "raw": e.raw, "max_relation": e.max_relation, "lost_functions": list(e.lost_functions),
              "lines_bytes": len(lines), "mir_bytes": None if e.mir is None else len(e.mir),
              "failure": e.failure, "module": e.module,
              "predicates": sorted(p.decode() for p in e.predicates), "compares": e.compares}
    payload = zlib.compress(json.dumps(header, sort_keys=True).encode() + b"\n" + lines + (e.mir or b""))
    return _MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def decode(key: str, data: bytes) -> Entry:
    """The entry in `data`, or ValueError if it is not exactly what `encode` wrote for `key`."""
    start = len(_MAGIC)
    if not data.startswith(_MAGIC) or data[start + _DIGEST_LEN:start + _DIGEST_LEN + 1] != b"\n":
        raise ValueError("not a triplet cache entry of this version")
    payload = data[start + _DIGEST_LEN + 1:]
    if hashlib.sha256(payload).hexdigest().encode() != data[start:start + _DIGEST_LEN]:
        raise ValueError("checksum mismatch")
    try:
        head, body = zlib.decompress(payload).split(b"\n", 1)
        h = jsonio.loads(head, "its header")
    except (zlib.error, ValueError, InputError) as err:
        raise ValueError(f"unreadable payload: {err}") from None
    n, m = h["lines_bytes"], h["mir_bytes"]
    if h["key"] != key or len(body) != n + (m or 0):
        raise ValueError("entry belongs to another key or has the wrong length")
    lines = body[:n].split(b"\n")[:-1]
    return Entry(set(lines), h["raw"], h["max_relation"], tuple(h["lost_functions"]),
                 None if m is None else body[n:], h["failure"], h["module"],
                 frozenset(p.encode() for p in h["predicates"]), h["compares"])


class TripletCache:
    """Triplet entries under `root`, at most about `max_bytes`, for one toolchain and farm code (`identity`)."""

    def __init__(self, root: Path, max_bytes: int, identity: str) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.identity = identity

    def key(self, bitcode: Path, kind: str, levels: Sequence[str], timeout: float,
            options: Mapping[str, Any] | None = None) -> str | None:
        """The entry name for this module run: a sha256 over every input of the result.

        `options` are the plan's other switches (predicate triplets, march levels, the digest of
        the code behind them): turning one on or off gives another key. None if the bitcode cannot
        be read: the module then runs uncached and fails as it would.
        """
        h = hashlib.sha256()
        try:
            with open(bitcode, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        except OSError:
            return None
        fields = {"format": FORMAT, "identity": self.identity, "bitcode": h.hexdigest(), "kind": kind,
                  "levels": list(levels), "timeout": timeout, "options": dict(options or {})}
        if kind == "mir":  # MIR lines come from the farm's reader: another version, another result
            from workers.mirtriplets import VERSION

            fields["mir_extractor"] = VERSION
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / key

    def get(self, key: str, module: str) -> Entry | None:
        """The entry for `key` as seen by `module`, or None; a corrupted entry is deleted (and counted) and is a miss.

        A failure met on another module with the same bitcode is a miss too: its reason names that module.
        """
        p = self.path(key)
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            _count("misses")
            return None
        except OSError as err:
            _warn(self.root, f"cannot read {p}: {err.strerror}")
            _count("misses")
            return None
        try:
            entry = decode(key, data)
        except (ValueError, KeyError, TypeError) as err:
            log.warning("triplet cache: deleting corrupted entry %s (%s); recomputing the module", p, err)
            with contextlib.suppress(OSError):
                p.unlink()
            _count("corrupt")
            _count("misses")
            return None
        if entry.failure is not None and entry.module != module:
            _count("misses")
            return None
        with contextlib.suppress(OSError):
            os.utime(p)  # recency for the eviction; a read-only cache still serves
        _count("hits")
        return entry

    def put_failure(self, key: str, module: str, reason: str, private: Sequence[Path]) -> None:
        """Remember that `module` fails, if it would fail again the same way on the same input.

        MIR on LLVM 22 crashes on whole modules deterministically; without this every nightly run
        would crash on them again. A time-out or a killed tool may pass next time, and a reason
        naming a run's own directories (`private`: its scratch space, the corpus) would not read
        the same in another run: neither is stored.
        """
        if any(word in reason for word in _UNREPEATABLE) or any(str(d) in reason for d in private):
            return
        self.put(key, Entry(set(), 0, -1, failure=reason, module=module))

    def put(self, key: str, entry: Entry) -> None:
        """Store `entry` atomically; a failure to write is a warning (the run does not need the cache)."""
        p = self.path(key)
        data = encode(key, entry)
        tmp = None
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=p.parent)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o644)
            os.replace(tmp, p)
            tmp = None
        except OSError as err:
            _warn(self.root, f"cannot store {p}: {err.strerror or err}")
            return
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        _count("stored")
        with _lock:
            seen = _written_since_scan.get(self.root)
            _written_since_scan[self.root] = (seen or 0) + len(data)
            due = seen is None or seen + len(data) >= self.max_bytes // 16
            if due:
                _written_since_scan[self.root] = 0
        if due:
            self.evict()

    def entries(self) -> list[tuple[int, int, Path]]:
        """(mtime_ns, size, path) of every entry; stale temporaries of dead writers are removed."""
        found = []
        now = time.time()
        for sub in _scandir(self.root):
            if not sub.is_dir(follow_symlinks=False):
                continue
            for e in _scandir(Path(sub.path)):
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue  # evicted or replaced meanwhile
                if e.name.startswith(_TMP_PREFIX):
                    if now - st.st_mtime > _STALE_TMP_SECONDS:
                        with contextlib.suppress(OSError):
                            os.unlink(e.path)
                    continue
                found.append((st.st_mtime_ns, st.st_size, Path(e.path)))
        return found

    def size(self) -> int:
        return sum(size for _, size, _ in self.entries())

    def evict(self) -> int:
        """Delete least recently used entries until the cache is under its bound; the bytes freed."""
        with _lock:  # one scan at a time in this process; other processes may scan too (unlink is idempotent)
            found = sorted(self.entries())
            total = sum(size for _, size, _ in found)
            if total <= self.max_bytes:
                return 0
            freed, target = 0, int(self.max_bytes * _LOW_WATER)
            for _, size, p in found:
                if total - freed <= target:
                    break
                with contextlib.suppress(OSError):
                    p.unlink()
                freed += size
                STATS["evicted"] += 1
        log.info("triplet cache %s: evicted %d bytes (bound %d)", self.root, freed, self.max_bytes)
        return freed


def _warn(root: Path, why: str) -> None:
    """Once per cache and process: an unusable cache would otherwise say so for every module."""
    with _lock:
        if root in _warned:
            return
        _warned.add(root)
    log.warning("triplet cache %s unusable (%s): modules run uncached", root, why)


def _scandir(d: Path) -> Iterable[os.DirEntry]:
    try:
        with os.scandir(d) as it:
            return list(it)
    except (FileNotFoundError, NotADirectoryError):
        return []
