"""A local benchmark's sources named by URL: a run that builds a `--bench-dir` publishes its files to the store as
one tarball under a content-addressed key, and the run's reproduce command names it by its dashboard URL and
sha256 (`--bench-url URL --bench-sha256 HEX`) instead of a directory on the farm host. `regress run` fetches and
checks it like a URL policy (farm/artifacts/remote.py: one home for URL fetches) and unpacks it."""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import shutil
import tarfile
from pathlib import Path

from farm.errors import FarmError, InputError

log = logging.getLogger(__name__)

#: Where a benchmark's sources go in the store (the dashboard serves everything under `regression/`).
PREFIX = "regression/sources"
#: The most bytes of a benchmark's sources, packed or unpacked.
MAX_BYTES = 64 << 20


def pack(directory: Path) -> bytes:
    """The regular files under `directory` as a tar.gz with one top-level folder, the directory's name: the same
    files give the same bytes (sorted, no times, no owners)."""
    directory = Path(directory)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for f in sorted(p for p in directory.rglob("*") if p.is_file() and not p.is_symlink()):
            data = f.read_bytes()
            info = tarfile.TarInfo(f"{directory.name}/{f.relative_to(directory).as_posix()}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue(), compresslevel=9, mtime=0)


def key(directory: Path, data: bytes) -> tuple[str, str]:
    """(store key, sha256) of `directory`'s packed sources."""
    digest = hashlib.sha256(data).hexdigest()
    return f"{PREFIX}/{digest}/{Path(directory).name}.tar.gz", digest


def publish(store, directory: Path) -> tuple[str, str]:
    """Put `directory`'s sources in the store once (content-addressed: the same sources, the same key)."""
    data = pack(directory)
    if len(data) > MAX_BYTES:
        raise InputError(f"benchmark directory {directory}: its sources exceed {MAX_BYTES >> 20} MB")
    where, digest = key(directory, data)
    if not store.exists(where):
        store.put(where, data, "application/gzip")
        store.put(f"{where}.sha256", f"{digest}  {where.rsplit('/', 1)[1]}\n".encode(), "text/plain")
    return where, digest


def fetch(url: str, sha256: str | None, into: Path) -> Path:
    """The benchmark directory of `url`'s tarball, checked against `sha256` and unpacked under `into`."""
    from farm.artifacts import remote

    archive, _ = remote.fetch(url, sha256, Path(into) / "download", "sources.tar.gz", limit=MAX_BYTES)
    digest = archive.parent.name
    out = Path(into) / "src" / digest
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = tar.getmembers()
            if sum(m.size for m in members) > MAX_BYTES:
                raise InputError(f"{url}: its sources exceed {MAX_BYTES >> 20} MB unpacked")
            tops = {m.name.split("/", 1)[0] for m in members}
            tar.extractall(out, filter="data")  # no absolute paths, no `..`, no links out
    except (tarfile.TarError, OSError) as e:
        raise FarmError(f"{url}: not a benchmark's sources tarball: {e}") from None
    if len(tops) != 1 or not (out / next(iter(tops))).is_dir():
        raise FarmError(f"{url}: a benchmark's sources tarball has one top-level folder")
    return out / next(iter(tops))


def sources_of(req, published: dict[str, tuple[str, str]]) -> dict[str, str]:
    """{benchmark: sha256 of its packed sources} of a run request's local benchmarks (the published digest when the
    run published them: `pack` makes the same files the same bytes)."""
    return {b.name: published[b.name][1] if b.name in published else key(b.local_dir, pack(b.local_dir))[1]
            for b in req.benchmarks if b.local_dir is not None}


def publish_local(req, settings) -> dict[str, tuple[str, str]]:
    """The sources of a run request's local benchmarks put in the store when the run publishes (so its reproduce
    command names them by URL): {benchmark: (store key, sha256)}. A store that refuses them leaves the command naming
    the directory, with a warning; the run goes on."""
    local = [b for b in req.benchmarks if b.local_dir is not None]
    if not (req.publish and local):
        return {}
    from farm.objectstore import store_from_settings

    try:
        store = store_from_settings(settings)
        return {b.name: publish(store, b.local_dir) for b in local}
    except (OSError, FarmError) as e:
        log.warning("benchmark sources not published (the reproduce command names their directory): %s", e)
        return {}
