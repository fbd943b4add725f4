"""The caches that let a nightly run at a new revision redo only what changed.

Two content-addressed caches under one directory (`[cache] dir`, default `<var_dir>/cache`),
shared by every build on the worker and safe for concurrent builds:

* `ccache/`: translation unit -> bitcode, through ccache (`workers.ccache`);
* `triplets/`: module -> deduplicated triplet lines, the farm's own (`workers.tripletcache`).

They are on by default and never change a result: a warm run's corpus and dataset are byte for
byte a cold run's. `[cache] enabled = false` (`MLGO_FARM_CACHE_ENABLED`, or `--no-cache` on a
command, which calls `disable`) turns both off. The caches are resolved from the settings where
the work happens (per TU, per module), so a command needs no plumbing to use them. Identities of
the tools enter every key, so a new toolchain never meets an old entry.

    python -m workers.cache stats|clear
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from farm.config import load_settings
from farm.envvalues import env_key
from farm.errors import FarmError, ToolError
from farm.toolchain import Toolchain
from workers.ccache import CompileCache, find_ccache
from workers.tripletcache import TripletCache

log = logging.getLogger(__name__)

ENABLED_VARIABLE = env_key("cache", "enabled")
#: The tools each result comes from; their identities are part of the key.
TRIPLET_TOOLS = {"ir": ("opt", "llvm-ir2vec"), "mir": ("opt", "llc", "llvm-ir2vec")}
#: Farm code that shapes triplet lines: an entry made by other code is never used.
_TRIPLET_CODE = ("triplets.py", "mir.py")
#: Shared libraries the Debian tools load: hashing 100+ MB on every start is too slow, so their
#: size and mtime stand for them (a new package changes both; the version is in the key anyway).
_LIBRARY_PATTERNS = ("libLLVM*.so*", "libclang-cpp*.so*")

_memo_lock = threading.Lock()
_digests: dict[tuple, str] = {}
_warned: set[str] = set()


@dataclass(frozen=True)
class CacheSettings:
    dir: Path
    compile_max_bytes: int
    triplets_max_bytes: int


def current() -> CacheSettings | None:
    """The worker's cache settings, or None when caching is off (read each time: tests and `--no-cache` change them)."""
    s = load_settings()
    if not s.cache.enabled:
        return None
    root = Path(s.cache.dir).absolute() if s.cache.dir else s.var_dir / "cache"
    return CacheSettings(root, s.cache.compile_max_mb << 20, s.cache.triplets_max_mb << 20)


def _file_digest(path: Path) -> str:
    """sha256 of a file, computed once per (path, inode, size, mtime) in this process."""
    st = path.stat()
    memo = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
    with _memo_lock:
        if memo in _digests:
            return _digests[memo]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    with _memo_lock:
        _digests[memo] = h.hexdigest()
    return h.hexdigest()


def toolchain_identity(tc: Toolchain, tools: Sequence[str], extra: Sequence[str] = ()) -> str:
    """A digest of what decides the tools' output: LLVM version and commit, each tool's bytes, the shared
    libraries' size and mtime, and `extra` (the farm's own part)."""
    parts = [f"llvm {tc.version}", f"commit {tc.commit}"]
    for tool in tools:
        real = Path(os.path.realpath(tc.path(tool)))
        parts.append(f"{tool} {_file_digest(real)}")
    lib_dir = Path(os.path.realpath(tc.bin_dir)).parent / "lib"
    libs = {Path(os.path.realpath(p)) for pattern in _LIBRARY_PATTERNS for p in lib_dir.glob(pattern)}
    for lib in sorted(libs):
        try:
            st = lib.stat()
        except OSError:
            continue
        parts.append(f"{lib.name} {st.st_size} {st.st_mtime_ns}")
    parts.extend(extra)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _code_identity() -> str:
    here = Path(__file__).parent
    return "farm " + "".join(_file_digest(here / name) for name in _TRIPLET_CODE)


def _warn_once(what: str, message: str) -> None:
    with _memo_lock:
        if what in _warned:
            return
        _warned.add(what)
    log.warning(message)


def for_compile(toolchain: Toolchain) -> CompileCache | None:
    """The worker's compile cache for `toolchain`, or None: caching off, or ccache not installed."""
    s = current()
    if s is None:
        return None
    ccache = find_ccache()
    if ccache is None:
        _warn_once("ccache", "ccache is not installed (deploy/setup.sh installs it): every TU is compiled")
        return None
    identity = _identity_or_none(toolchain, ("clang",))
    return None if identity is None else CompileCache(s.dir, s.compile_max_bytes, identity, ccache)


def for_triplets(toolchain: Toolchain, kind: str) -> TripletCache | None:
    """The worker's triplet cache for `kind` made with `toolchain`, or None when caching is off."""
    s = current()
    if s is None:
        return None
    identity = _identity_or_none(toolchain, TRIPLET_TOOLS[kind], (_code_identity(),))
    return None if identity is None else TripletCache(s.dir / "triplets", s.triplets_max_bytes, identity)


def _identity_or_none(tc: Toolchain, tools: Sequence[str], extra: Sequence[str] = ()) -> str | None:
    """The identity, or None (uncached) if a tool cannot be read: the run then fails, or not, as it would."""
    try:
        return toolchain_identity(tc, tools, extra)
    except (ToolError, OSError) as e:
        _warn_once(f"identity {tc.bin_dir}", f"cannot identify the tools in {tc.bin_dir} ({e}): running uncached")
        return None


def disable() -> None:
    """Caching off for this process and the tools it starts: what `--no-cache` does. The caches are looked
    up where the work happens, from the settings, so the flag is that setting."""
    os.environ[ENABLED_VARIABLE] = "false"


def _stats(s: CacheSettings) -> None:
    store = TripletCache(s.dir / "triplets", s.triplets_max_bytes, "")
    entries = store.entries()
    print(f"cache {s.dir}")
    print(f"  triplets: {len(entries)} entries, {sum(e[1] for e in entries) >> 20} MiB of {s.triplets_max_bytes >> 20}")
    ccache = find_ccache()
    if ccache is None:
        print("  compile: ccache is not installed")
        return
    st = CompileCache(s.dir, s.compile_max_bytes, "", ccache).stats()
    hits = st.get("direct_cache_hit", 0) + st.get("preprocessed_cache_hit", 0)
    print(f"  compile: {st.get('files_in_cache', 0)} files, {st.get('cache_size_kibibyte', 0) >> 10} MiB of "
          f"{s.compile_max_bytes >> 20}; {hits} hits, {st.get('cache_miss', 0)} misses since zeroed")


def _clear(s: CacheSettings) -> None:
    import shutil

    shutil.rmtree(s.dir / "triplets", ignore_errors=True)
    ccache = find_ccache()
    if ccache is not None:
        CompileCache(s.dir, s.compile_max_bytes, "", ccache).clear()
    print(f"cleared {s.dir}")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m workers.cache", description="the worker's compile and triplet caches")
    p.add_argument("action", choices=("stats", "clear"))
    args = p.parse_args(argv)
    try:
        s = current()
        if s is None:
            print("caching is off ([cache] enabled = false)")
        elif args.action == "stats":
            _stats(s)
        else:
            _clear(s)
    except FarmError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
