"""Artifacts named by URL: a policy or vocabulary fetched over HTTP(S) from a master's dashboard, checked by sha256.

A command in a mail or on a page must work wherever the master's URL reaches, not only where
the farm's store is (`store:VERSION` resolves against the store of the machine that runs it).
So those commands name artifacts by their dashboard download URLs (`.../store/policies/inline/V/
model.onnx`) with the sha256 the farm recorded, and the verbs that run them fetch the bytes,
check them and cache them by digest. Without a given sha256 the `.sha256` file the dashboard
serves beside every artifact is the one trusted (same origin: it guards against a cut download,
not against the server). The manifest beside a version's file, when there is one and it records
the same sha256, is kept beside the cached file, so the version is known (regression/lineage.py
records runs by version) and a policy brings its vocabulary's name.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import urllib.parse
from pathlib import Path
from typing import Any

from farm import jsonio
from farm.artifacts import urlget
from farm.artifacts.kinds import check_version_name
from farm.atomic import atomic_file, write_atomic
from farm.errors import FarmError, InputError, StoreError

_SHA256 = re.compile(r"[0-9a-f]{64}")
#: Seconds one fetch (one URL, its redirects and its whole body) may take before it is a one-line error.
TIMEOUT = 300
#: The most bytes one artifact may have: a vocabulary is a few MB, a policy less. Streamed to disk, so
#: the cap is about the disk and the time a hostile server may take, not memory.
MAX_BYTES = 256 << 20
#: The most bytes of a `.sha256` file and of a manifest.
SHA256_BYTES, MANIFEST_BYTES = 4096, 16 << 20
MANIFEST = "manifest.json"
#: The manifest fields that name versions: checked like a version given on the command line, since they reach
#: file names, the report and the history.
VERSION_FIELDS = ("version", "vocab_version")


def is_url(spec: object) -> bool:
    return isinstance(spec, str) and spec.startswith(("http://", "https://"))


def check_sha256(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().lower()
    if not _SHA256.fullmatch(value):
        raise InputError(f"sha256 {value[:80]!r} must be 64 hexadecimal digits")
    return value


def _sibling(url: str, name: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path=parts.path.rsplit("/", 1)[0] + "/" + name))


def check_manifest(m: Any, digest: str, where: str) -> dict[str, Any] | None:
    """`m` when it is a manifest recording `digest` (else None: only the bytes are known); a version it names that
    is not a plain version name (`../../tmp/x`) is refused in one line, as `--version` would be."""
    if not (isinstance(m, dict) and m.get("sha256") == digest):
        return None
    for name in VERSION_FIELDS:
        value = m.get(name)
        if value is None:
            continue
        try:
            if not isinstance(value, str):
                raise InputError(f"invalid version name {str(value)[:80]!r}: not a string")
            check_version_name(value)
        except InputError as e:
            raise InputError(f"{where}: {name}: {e}") from None
    return m


def _manifest(url: str, digest: str, timeout: float) -> dict[str, Any] | None:
    """The manifest beside `url` if the server has one recording `digest` (else None: only the bytes are known)."""
    where = _sibling(url, MANIFEST)
    try:
        m = jsonio.loads(urlget.get_bytes(where, MANIFEST_BYTES, timeout), where, StoreError)
    except StoreError:
        return None
    return check_manifest(m, digest, where)


def _file_sha256(path: Path) -> str | None:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def fetch(url: str, sha256: str | None, cache: Path, name: str, *, limit: int | None = None,
          timeout: float | None = None) -> tuple[Path, dict[str, Any] | None]:
    """`url`'s bytes as `cache/<sha256>/<name>` once their sha256 is checked (nothing is kept on a mismatch), and
    the manifest beside it that records the same sha256 (or None). A cached copy is checked again on every use.
    Each URL is one bounded fetch (farm/artifacts/urlget.py): at most `limit` bytes (MAX_BYTES) streamed to disk,
    within `timeout` seconds in all (TIMEOUT)."""
    limit = MAX_BYTES if limit is None else limit
    timeout = TIMEOUT if timeout is None else timeout
    if not is_url(url):
        raise InputError(f"{url!r} is not an http(s) URL")
    urlget.check_url(url)  # a bad URL is the user's error, before anything is asked of a server
    digest = check_sha256(sha256)
    if digest is None:
        line = urlget.get_bytes(f"{url}.sha256", SHA256_BYTES, timeout).decode(errors="replace").split()
        digest = check_sha256(line[0]) if line else None
        if digest is None:
            raise InputError(f"{url}.sha256 is empty: give the sha256 to check")
    out = Path(cache) / digest / name
    if _file_sha256(out) != digest:
        try:
            with atomic_file(out) as f:
                got = urlget.get_to(url, f, limit, timeout)
                if got != digest:
                    raise FarmError(f"checksum mismatch for {url}: expected sha256 {digest}, got {got}; "
                                    f"nothing kept")
        except BaseException:
            with contextlib.suppress(OSError):
                out.parent.rmdir()  # the digest's directory, when nothing else is in it
            raise
    beside = out.with_name(MANIFEST)
    manifest = None
    if beside.is_file():
        try:
            manifest = check_manifest(jsonio.load_file(beside), digest, str(beside))
        except InputError:
            manifest = None  # a damaged or hostile copy: asked for again, and replaced if the server's is good
    if manifest is None:
        manifest = _manifest(url, digest, timeout)
        if manifest is not None:
            write_atomic(beside, json.dumps(manifest, sort_keys=True).encode())
    return out, manifest
