"""Readable, immutable version names, the store keys of a version, and what the index says of each version."""

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


def index_entry(manifest: dict[str, Any]) -> dict[str, Any]:
    """What `vocab/index.json` says of a version (publishing adds the gate's verdict and the state)."""
    metrics = manifest.get("metrics") or {}
    holdout = metrics.get("holdout") or {}
    lineage = manifest.get("lineage") or {}
    return {
        "kind": manifest["kind"],
        "version": manifest["version"],
        "sha256": manifest["sha256"],
        "dimension": manifest["dimension"],
        "dataset_id": lineage.get("dataset_id"),
        "llvm_version": lineage.get("llvm_version"),
        "llvm_commit": lineage.get("llvm_commit"),
        "published_at": manifest["published_at"],
        "mrr": holdout.get("mrr"),
        "hits_at_10": holdout.get("hits_at_10"),
        "analogy": (metrics.get("analogy") or {}).get("score"),
        "analogy_all": (metrics.get("analogy") or {}).get("score_all"),
        "coverage": coverage_counts(manifest.get("coverage")),
    }


def coverage_counts(coverage: Any) -> Any:
    """The manifest's coverage without the filler names: a MIR version lists some 7,000 of them, and the
    index (read by every `vocab list`) would grow by that each night; the manifest keeps them."""
    if not isinstance(coverage, dict):
        return coverage
    return {s: {k: v for k, v in c.items() if k != "filler"} if isinstance(c, dict) else c
            for s, c in coverage.items()}


def accepted(entry: dict[str, Any]) -> bool:
    """Whether a listed version may be `latest`: it passed the gate or was promoted (or predates the gate)."""
    gate = entry.get("gate")
    return bool(entry.get("promoted")) or not isinstance(gate, dict) or gate.get("passed") is True


def restate(versions: list[dict[str, Any]], kind: str, latest: str | None, by: str = "kind") -> list[dict[str, Any]]:
    """The index with every entry whose `by` field is `kind` in the state `latest` (a version name or None)
    implies (the policies' index groups by "advisor")."""
    out = []
    for v in versions:
        if v.get(by) == kind:
            state = "latest" if v.get("version") == latest else "superseded" if accepted(v) else "candidate"
            v = {**v, "state": state}
        out.append(v)
    return out
