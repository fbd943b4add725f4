"""What an artifact kind is to the store: its keys, how its versions are named, listed and pointed to.

An `ArtifactKind` is data: the store (farm/artifacts/store.py) publishes, settles, promotes,
resolves and downloads every kind with the same code, and the dashboard derives the keys it
serves from the same declarations (farm/artifacts/kinds.py). Keys, for a kind rooted at `vocab`
and a group `ir` (the value of the kind's grouping field: a vocabulary's `kind`, a policy's
`advisor`):

    vocab/index.json                    every listed version of every group, with its state
    vocab/ir/latest.json                the pointer: the version in force
    vocab/ir/{version}/{file}...        the artifact's files, then
    vocab/ir/{version}/manifest.json    written last: a version exists once its manifest does
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from farm.artifacts.verdict import accepted
from farm.errors import InputError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+=@-]{0,127}$")
#: How much of a sha256 a version name carries (what find-by-hash matches names on).
SHORT_HASH = 12
MANIFEST = "manifest.json"


def check_version_name(name: str) -> str:
    """Reject names that could escape the version's prefix (`/`, `..`) or are not plain."""
    if name == "latest":
        return name
    if "/" in name or ".." in name or not _NAME.match(name):
        raise InputError(f"invalid version name {name!r}: letters, digits and . _ + = @ - only, no '/' or '..'")
    return name


def day(when: float | None) -> str:
    """`YYYYMMDD` (UTC): the date every version name starts with."""
    return time.strftime("%Y%m%d", time.gmtime(when))


def timestamp(when: float) -> str:
    """A publication time as the index and the manifests record it."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


@dataclass(frozen=True)
class ArtifactKind:
    #: what a version is called in messages: "no ir vocabulary has been published to ..."
    noun: str
    #: the key prefix of the kind: versions under `{root}/{group}/`, the index at `{root}/index.json`
    root: str
    #: the manifest (and index) field that groups versions; each group has its own `latest`
    group: str
    #: the artifact's files, uploaded before the manifest and each checked against `digests`
    files: tuple[str, ...]
    #: manifest -> {file: sha256} the manifest records for the artifact's files
    digests: Callable[[Mapping[str, Any]], dict[str, Any]]
    #: (manifest, publication time) -> the version's name
    version_name: Callable[[Mapping[str, Any], float], str]
    #: stored manifest (with `version` and `published_at`) -> what the index lists of the version
    index_entry: Callable[[Mapping[str, Any]], dict[str, Any]]
    #: the index entry's fields the `latest` pointer carries
    pointer_fields: tuple[str, ...]
    #: the `mlgo-farm` verb of the kind (named in repair advice)
    verb: str
    #: the manifest field naming the content: its sha256 (a version name ends with a short form of it),
    #: or, for a kind named by its content alone, the version name itself
    identity: str = "sha256"
    named_by_content: bool = False
    #: whether the stored manifest carries `version` and `published_at` (a dataset's keeps its bytes: the
    #: index records both for it)
    stamped: bool = True
    #: whether `latest.json` also carries the whole manifest (what a dataset's consumers read)
    pointer_manifest: bool = False
    #: the pointer's field naming the version in force (a dataset's pointer names its `id`)
    pointer_version: str = "version"

    @property
    def index_key(self) -> str:
        return f"{self.root}/index.json"

    def latest_key(self, group: str) -> str:
        return f"{self.root}/{group}/latest.json"

    def prefix(self, group: str, version: str) -> str:
        return f"{self.root}/{group}/{check_version_name(version)}"

    def manifest_key(self, group: str, version: str) -> str:
        return f"{self.prefix(group, version)}/{MANIFEST}"

    def in_force(self, pointer: Mapping[str, Any] | None) -> str | None:
        """The version a `latest` pointer names (None: no pointer)."""
        version = (pointer or {}).get(self.pointer_version)
        return None if version is None else str(version)

    def served(self) -> tuple[str, ...]:
        """Every file of a version: the artifact's, then the manifest."""
        return (*self.files, MANIFEST)

    def listed(self, entry: Mapping[str, Any], group: str, version: str) -> bool:
        return (entry.get(self.group), entry.get("version")) == (group, version)

    def restate(self, versions: list[dict[str, Any]], group: str, latest: str | None) -> list[dict[str, Any]]:
        """The index with every entry of `group` in the state `latest` (a version name or None) implies."""
        out = []
        for v in versions:
            if v.get(self.group) == group:
                state = "latest" if v.get("version") == latest else "superseded" if accepted(v) else "candidate"
                v = {**v, "state": state}
            out.append(v)
        return out
