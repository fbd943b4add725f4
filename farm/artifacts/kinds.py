"""The farm's artifact kinds, declared once: what a kind is to the store, then vocabularies, policies, datasets.

An `ArtifactKind` is data: its prefix in the store, the field its versions are grouped by, its
files, how a version is named, what the index and the `latest` pointer say of it. The version code
(farm/artifacts/versions.py, reached through each kind's handle in farm/artifacts/shelf.py) is the
same for all three, and the dashboard (master/dashboard/files.py) derives the keys it serves from
these declarations. Keys, for a kind rooted at `vocab` and a group `ir` (the value of the kind's
grouping field: a vocabulary's `kind`, a policy's `advisor`; docs/artifacts.md has the whole layout):

    vocab/index.json                    every listed version of every group, with its state
    vocab/ir/latest.json                the pointer: the version in force
    vocab/ir/{version}/{file}...        the artifact's files, then
    vocab/ir/{version}/manifest.json    written last: a version exists once its manifest does

What a role requires of an artifact before it is published (a vocabulary's schema, a policy's
features, a dataset's file checksums) stays with the role (vocabgen/publish.py, policyhost/publish.py,
workers/dataset.py), which checks before it calls its kind's handle.

Adding a kind: declare it here (its root, group field, files, naming, index and pointer fields) and
its handle in farm/artifacts/shelf.py, write its check in the role that makes it, and publish with
`handle(KIND).publish(...)`; index, `latest`, promotion, settling, find-by-hash and download come with it.
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
    #: manifest -> {file: sha256} the manifest records for the artifact's files (and the optional files it holds)
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
    #: files a version holds only when its manifest records them (`digests` names them): a policy's native weights.
    #: Recorded, such a file is the version's like the others: uploaded before the manifest, checked against it on
    #: publish, download, serving and scrub; a version without one (published before it existed) is whole as it is.
    optional: tuple[str, ...] = ()
    #: the command that makes a listed version `latest` whatever its gate said ({group}, {version} filled in),
    #: which a "nothing is latest" message names when a candidate waits; empty: the kind has no such verb
    promote_usage: str = ""

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

    def held(self, manifest: Mapping[str, Any]) -> tuple[str, ...]:
        """The files of the version `manifest` describes: the kind's, then the optional ones it records."""
        if not self.optional:
            return self.files
        recorded = self.digests(manifest)
        return (*self.files, *(name for name in self.optional if name in recorded))

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

# --- the kinds ---------------------------------------------------------------------------------------


def _one(name: str):
    """`digests` of a kind with one file whose sha256 is the manifest's `sha256`."""
    return lambda manifest: {name: manifest.get("sha256")}


def vocab_version_name(manifest: Mapping[str, Any], when: float | None = None) -> str:
    """`YYYYMMDD-<llvm commit or version>-<kind>-d<dim>-<sha256[:12]>`."""
    lineage = manifest.get("lineage") or {}
    commit = lineage.get("llvm_commit")
    llvm = commit[:12] if commit else f"llvm{lineage.get('llvm_version') or 'unknown'}"
    return check_version_name(
        f"{day(when)}-{llvm}-{manifest['kind']}-d{manifest['dimension']}-{manifest['sha256'][:SHORT_HASH]}"
    )


def coverage_counts(coverage: Any) -> Any:
    """The manifest's coverage without the filler names: a MIR version lists some 7,000 of them, and the
    index (read by every `vocab list`) would grow by that each night; the manifest keeps them."""
    if not isinstance(coverage, dict):
        return coverage
    return {s: {k: v for k, v in c.items() if k != "filler"} if isinstance(c, dict) else c
            for s, c in coverage.items()}


def vocab_index_entry(manifest: Mapping[str, Any]) -> dict[str, Any]:
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


VOCAB = ArtifactKind(
    noun="vocabulary", root="vocab", group="kind", files=("vocab.json",), digests=_one("vocab.json"),
    version_name=vocab_version_name, index_entry=vocab_index_entry, verb="vocab",
    promote_usage="mlgo-farm vocab promote {group} {version} --reason '...'",
    pointer_fields=("kind", "version", "sha256", "dimension", "dataset_id", "published_at"),
)


def policy_version_name(manifest: Mapping[str, Any], when: float) -> str:
    """`YYYYMMDD-<llvm commit or version>-<advisor>-<ir2vec or novocab>-<sha256[:12]>`."""
    llvm = manifest.get("llvm") or {}
    commit = llvm.get("llvm_commit")
    tag = commit[:12] if commit else f"llvm{llvm.get('llvm_version') or 'unknown'}"
    vocab = "ir2vec" if manifest.get("vocab_version") else "novocab"
    return check_version_name(f"{day(when)}-{tag}-{manifest['advisor']}-{vocab}-{manifest['sha256'][:SHORT_HASH]}")


#: what `policies/index.json` lists of every version (from its manifest)
POLICY_INDEX_FIELDS = ("advisor", "version", "sha256", "vocab_version", "dataset_id", "llvm_version", "llvm_commit",
                       "published_at", "heldout_agreement", "heldout_majority_baseline", "validation_ratio",
                       "heldout_geomean")


def policy_index_entry(manifest: Mapping[str, Any]) -> dict[str, Any]:
    flat = {**manifest, **(manifest.get("llvm") or {}), **(manifest.get("metrics") or {}),
            "dataset_id": (manifest.get("training") or {}).get("dataset_id")}
    return {k: flat.get(k) for k in POLICY_INDEX_FIELDS}


#: a policy version's optional file: the native host's weights (policyhost/publish.py), the same network as its
#: model.onnx; its manifest's `weights` record ({"file", "sha256", "format_version"}) says the version holds it
POLICY_WEIGHTS = "model.weights"


def policy_digests(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """model.onnx's sha256 (the manifest's `sha256`) and, when the manifest has a `weights` record, model.weights'
    (None when that record is not an object: a version whose weights cannot verify, never one without them)."""
    out = {"model.onnx": manifest.get("sha256")}
    if "weights" in manifest:
        record = manifest["weights"]
        out[POLICY_WEIGHTS] = record.get("sha256") if isinstance(record, Mapping) else None
    return out


POLICY = ArtifactKind(
    noun="policy", root="policies", group="advisor", files=("model.onnx",), digests=policy_digests,
    version_name=policy_version_name, index_entry=policy_index_entry, verb="policy",
    pointer_fields=("advisor", "version", "sha256", "vocab_version", "published_at"), optional=(POLICY_WEIGHTS,),
    promote_usage="mlgo-farm policy promote --advisor {group} {version} --reason '...'",
)

#: a dataset's files (OpenKE layout; workers/dataset.py writes them, vocabgen/dataset.py reads them)
DATASET_FILES = ("train2id.txt", "entity2id.txt", "relation2id.txt")


def dataset_index_entry(manifest: Mapping[str, Any]) -> dict[str, Any]:
    llvm = manifest.get("llvm") or {}
    return {"kind": manifest["kind"], "version": manifest["version"], "id": manifest["id"],
            "published_at": manifest["published_at"], "llvm_version": llvm.get("llvm_version"),
            "llvm_commit": llvm.get("llvm_commit"), "modules_used": manifest.get("modules_used"),
            "triplets": (manifest.get("triplets") or {}).get("unique"), "entities": manifest.get("entities"),
            "relations": manifest.get("relations")}


#: A dataset's id is the digest of its files: its version name, so it is found by that name alone. Its
#: manifest is stored as written (the index records when it was published), and `latest.json` carries
#: the manifest whole, as `vocab train` and the dashboard read it.
DATASET = ArtifactKind(
    noun="dataset", root="datasets", group="kind", files=DATASET_FILES,
    digests=lambda manifest: dict(manifest.get("files") or {}),
    version_name=lambda manifest, when: check_version_name(str(manifest["id"])), index_entry=dataset_index_entry,
    verb="dataset", pointer_fields=("kind", "id", "published_at"), identity="id",
    named_by_content=True, stamped=False, pointer_manifest=True, pointer_version="id",
)

KINDS = (VOCAB, POLICY, DATASET)
