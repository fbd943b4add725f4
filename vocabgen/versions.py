"""Readable, immutable version names and the store keys of a version."""

from __future__ import annotations

import re
import time
from typing import Any

from farm.errors import InputError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+=@-]{0,127}$")
SHORT_HASH = 12


def check_version_name(name: str) -> str:
    """Reject names that could escape the version's prefix (`/`, `..`) or are not plain."""
    if name == "latest":
        return name
    if "/" in name or ".." in name or not _NAME.match(name):
        raise InputError(f"invalid version name {name!r}: letters, digits and . _ + = @ - only, no '/' or '..'")
    return name


def version_name(manifest: dict[str, Any], when: float | None = None) -> str:
    """`YYYYMMDD-<llvm commit or version>-<kind>-d<dim>-<sha256[:12]>`."""
    lineage = manifest.get("lineage") or {}
    commit = lineage.get("llvm_commit")
    llvm = commit[:12] if commit else f"llvm{lineage.get('llvm_version') or 'unknown'}"
    day = time.strftime("%Y%m%d", time.gmtime(when))
    return check_version_name(
        f"{day}-{llvm}-{manifest['kind']}-d{manifest['dimension']}-{manifest['sha256'][:SHORT_HASH]}"
    )


def prefix(kind: str, version: str) -> str:
    return f"vocab/{kind}/{check_version_name(version)}"


def latest_key(kind: str) -> str:
    return f"vocab/{kind}/latest.json"


INDEX_KEY = "vocab/index.json"
