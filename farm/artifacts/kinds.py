"""The farm's artifact kinds, declared once: vocabularies, inliner policies, triplet datasets.

Each is an ArtifactKind (farm/artifacts/kind.py): its prefix in the store, the field its versions
are grouped by, its files, how a version is named, what the index and the `latest` pointer say of
it. The store code (farm/artifacts/store.py) is the same for all three; what a role requires of
an artifact before it is published (a vocabulary's schema, a policy's features, a dataset's file
checksums) stays with the role (vocabgen/publish.py, policyhost/store.py, workers/dataset.py),
which passes its check along. The dashboard (master/dashboard/files.py) serves the keys these
declarations name.

Adding a kind: declare it here (its root, group field, files, naming, index and pointer fields),
write its check in the role that makes it, and publish with `store.publish(KIND, ...)`; index,
`latest`, promotion, settling, find-by-hash and download come with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from farm.artifacts.kind import SHORT_HASH, ArtifactKind, check_version_name, day


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


POLICY = ArtifactKind(
    noun="policy", root="policies", group="advisor", files=("model.onnx",), digests=_one("model.onnx"),
    version_name=policy_version_name, index_entry=policy_index_entry, verb="policy",
    pointer_fields=("advisor", "version", "sha256", "vocab_version", "published_at"),
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
