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

import hashlib
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from farm.atomic import write_atomic
from farm.errors import FarmError, InputError, StoreError

_SHA256 = re.compile(r"[0-9a-f]{64}")
#: Seconds one request may take before the fetch is a one-line error.
TIMEOUT = 120
#: The most bytes one artifact may have (a vocabulary is a few MB, a policy less).
MAX_BYTES = 1 << 30
MANIFEST = "manifest.json"


def is_url(spec: object) -> bool:
    return isinstance(spec, str) and spec.startswith(("http://", "https://"))


def check_sha256(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().lower()
    if not _SHA256.fullmatch(value):
        raise InputError(f"sha256 {value[:80]!r} must be 64 hexadecimal digits")
    return value


def _get(url: str, limit: int = MAX_BYTES) -> bytes:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers={"User-Agent": "mlgo-farm"}),
                                    timeout=TIMEOUT) as r:
            data = r.read(limit + 1)
    except urllib.error.HTTPError as e:
        raise StoreError(f"{url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        raise StoreError(f"{url}: {getattr(e, 'reason', None) or e}") from None
    if len(data) > limit:
        raise StoreError(f"{url}: more than {limit} bytes")
    return data


def _sibling(url: str, name: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path=parts.path.rsplit("/", 1)[0] + "/" + name))


def _manifest(url: str, digest: str) -> dict[str, Any] | None:
    """The manifest beside `url` if the server has one recording `digest` (else None: only the bytes are known)."""
    try:
        m = json.loads(_get(_sibling(url, MANIFEST), 16 << 20))
    except (StoreError, ValueError):
        return None
    return m if isinstance(m, dict) and m.get("sha256") == digest else None


def fetch(url: str, sha256: str | None, cache: Path, name: str) -> tuple[Path, dict[str, Any] | None]:
    """`url`'s bytes as `cache/<sha256>/<name>` once their sha256 is checked (nothing is kept on a mismatch), and
    the manifest beside it that records the same sha256 (or None). A cached copy is checked again on every use."""
    if not is_url(url):
        raise InputError(f"{url!r} is not an http(s) URL")
    digest = check_sha256(sha256)
    if digest is None:
        line = _get(f"{url}.sha256", 4096).decode(errors="replace").split()
        digest = check_sha256(line[0] if line else "") if line else None
        if digest is None:
            raise InputError(f"{url}.sha256 is empty: give the sha256 to check")
    out = Path(cache) / digest / name
    if not (out.is_file() and hashlib.sha256(out.read_bytes()).hexdigest() == digest):
        data = _get(url)
        got = hashlib.sha256(data).hexdigest()
        if got != digest:
            raise FarmError(f"checksum mismatch for {url}: expected sha256 {digest}, got {got}; nothing kept")
        write_atomic(out, data)
    beside = out.with_name(MANIFEST)
    manifest = None
    if beside.is_file():
        try:
            manifest = json.loads(beside.read_text())
        except ValueError:
            manifest = None
    if not isinstance(manifest, dict) or manifest.get("sha256") != digest:
        manifest = _manifest(url, digest)
        if manifest is not None:
            write_atomic(beside, json.dumps(manifest, sort_keys=True).encode())
    return out, manifest
