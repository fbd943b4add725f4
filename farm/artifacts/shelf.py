"""One handle per artifact kind, `VOCABULARIES`, `POLICIES`, `DATASETS` (`handle(kind)`): the door to its versions.

Why a handle and not the functions of farm/artifacts/versions.py: every caller of a kind used to name the
kind and its group check at each call, and the roles wrapped them in one-line forwards that other roles
then bypassed. A `Shelf` binds the kind once, so `VOCABULARIES.settle(store, "ir", version, check)` is
the same call from vocabgen/, policytrain/ and regression/, and the state machine it drives
(docs/artifacts.md) has one entrance.

What a role requires before publishing (a signature, a validation, a gate's verdict) stays with the role
(vocabgen/publish.py, policyhost/publish.py, workers/dataset.py), which checks, then calls `publish` here
with the files and, for a gated kind, its `judge`. The farm imports no role, so a group check is here only
when the farm knows the groups: a vocabulary's kind is an embedding kind (farm/embeddings.py); a policy's
advisor is policyhost's to check, at its own doors (its CLI, `fetch_cached`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farm.artifacts import versions
from farm.artifacts.kinds import DATASET, POLICY, VOCAB, ArtifactKind
from farm.artifacts.verdict import Check
from farm.embeddings import check_kind
from farm.objectstore import ObjectStore


def _any_group(group: str) -> str:
    return group


@dataclass(frozen=True)
class Shelf:
    """The versions of one artifact kind in an object store (call the writing methods under the publish lock:
    `farm.locks.publish_lock`)."""

    kind: ArtifactKind
    #: a group name as given -> as the kind files it, or a one-line InputError for a group it does not know
    check_group: Callable[[str], str] = _any_group

    def publish(self, store: ObjectStore, files: Mapping[str, bytes], manifest: Mapping[str, Any], *,
                when: float | None = None, judge: versions.Judge | None = None, against_latest: bool = False,
                raw_manifest: bytes | None = None) -> dict[str, Any]:
        """Publish a version the role has checked: {group field, version, sha256, created, latest, previous,
        state, gate} (farm/artifacts/versions.py `publish`)."""
        return versions.publish(self.kind, store, files, manifest, when=when, judge=judge,
                                against_latest=against_latest, raw_manifest=raw_manifest)

    def settle(self, store: ObjectStore, group: str, version: str, outcome: Check) -> dict[str, Any] | None:
        """Record the outcome of a version's pending rule; `latest` moves to it when every rule holds and it is
        newer. None when the rule was not pending (settled before): a repeated check changes nothing."""
        return versions.settle(self.kind, store, self.check_group(group), version, outcome)

    def promote(self, store: ObjectStore, group: str, version: str, reason: str, by: str = "",
                when: float | None = None) -> dict[str, Any]:
        """The operator's override: make a listed, intact version `latest` whatever its gate said."""
        return versions.promote(self.kind, store, self.check_group(group), version, reason, by, when)

    def promote_as_operator(self, store: ObjectStore, group: str, version: str, reason: str) -> str:
        """`promote` as the `promote` verbs run it: under the farm's publish lock, by the user running it; the line
        they print ("GROUP VERSION is latest (was PREVIOUS)")."""
        import getpass

        from farm.config import load_settings
        from farm.locks import publish_lock

        s = load_settings()
        with publish_lock(store, s.celery.broker_url, settings=s):
            entry = self.promote(store, group, version, reason, by=getpass.getuser())
        was = (entry.get("promoted") or {}).get("previous")
        return f"{group} {entry['version']} is latest" + (f" (was {was})" if was else "")

    def resolve(self, store: ObjectStore, group: str, version: str = "latest") -> str:
        """A concrete version name; `latest` follows the group's pointer."""
        return versions.resolve(self.kind, store, self.check_group(group), version)

    def held_back(self, store: ObjectStore, group: str) -> dict[str, str] | None:
        """The group's newest candidate while nothing is `latest`: {version, why, promote}; None when none is listed."""
        return versions.held_back(self.kind, store, self.check_group(group))

    def show(self, store: ObjectStore, group: str, version: str = "latest") -> dict[str, Any]:
        """A version's manifest (`latest` resolved)."""
        return versions.show(self.kind, store, self.check_group(group), version)

    def download(self, store: ObjectStore, group: str, version: str, out: Path,
                 name: str | None = None) -> dict[str, Any]:
        """Fetch a version's file (the kind's first) to `out` after checking its sha256; the manifest."""
        return versions.download(self.kind, store, self.check_group(group), version, out, name)

    def download_files(self, store: ObjectStore, group: str, version: str,
                       outs: Mapping[str, Path]) -> dict[str, Any]:
        """Fetch several of a version's files (name -> where), all checked before any is written; the manifest."""
        return versions.download_files(self.kind, store, self.check_group(group), version, outs)

    def read_index(self, store: ObjectStore) -> list[dict[str, Any]]:
        """Every listed version of every group, with its state (`{root}/index.json`)."""
        return versions.read_index(self.kind, store)

    def entry(self, store: ObjectStore, group: str, version: str) -> dict[str, Any] | None:
        """What the index lists of one version (its state, its gate's record), None when it is not listed."""
        group = self.check_group(group)
        return next((v for v in self.read_index(store) if self.kind.listed(v, group, version)), None)

    def read_latest(self, store: ObjectStore, group: str) -> dict[str, Any] | None:
        """The group's `latest` pointer, None when there is none yet."""
        return versions.read_latest(self.kind, store, self.check_group(group))

    def newest(self, store: ObjectStore, group: str, rule: str) -> str | None:
        """The newest version that is `latest` or waits only for `rule`: what a consumer settling `rule` uses."""
        return versions.newest(self.kind, store, self.check_group(group), rule)

    def find_by_hash(self, store: ObjectStore, group: str, identity: str) -> str | None:
        """The complete version holding this content (its sha256, or a dataset's id), None when none does; removes
        incomplete uploads of it on the way (call under the publish lock)."""
        return versions.find_by_hash(self.kind, store, self.check_group(group), identity)


VOCABULARIES = Shelf(VOCAB, lambda kind: check_kind(kind, "vocabulary kind"))
POLICIES = Shelf(POLICY)
DATASETS = Shelf(DATASET)
_SHELVES = {s.kind.root: s for s in (VOCABULARIES, POLICIES, DATASETS)}


def handle(kind: ArtifactKind) -> Shelf:
    """The handle of a kind declared in farm/artifacts/kinds.py."""
    return _SHELVES[kind.root]
