"""Versioned policies in the object store: what publishing requires of a policy, its summary, a cached copy.

A version is `policies/{advisor}/{version}/model.onnx` plus `manifest.json` (sha256, advisor,
features, training corpus and dataset, vocabulary version when it reads IR2Vec features,
parameters, held-out metrics, LLVM version/commit, validation); farm/artifacts/kinds.py declares
the kind. Only a model whose manifest records a passed validation of exactly its bytes is
published (policyhost/release.py validates). The store (farm/artifacts/store.py) does the rest,
as for vocabularies: the order of the writes, `latest` only moving forward in time, the index with
each version's state, the same content published again yielding the version that holds it.

A retrained policy is published *pending* its size check (`pending="policy_size"`): listed as a
`candidate` whose gate record waits for that rule, `latest` unchanged; the check
(regression/policygate.py) settles it with `settle`, which moves `latest` when it holds. The
manifest carries the farm's signature over its training claims and the model's bytes
(farm/signing.py, the same key as vocabularies'), so held-out metrics and lineage cannot be copied
onto another model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from farm import jsonio
from farm.answer import Answer
from farm.artifacts import store as artifacts
from farm.artifacts.kinds import POLICY
from farm.artifacts.store import sha256
from farm.artifacts.verdict import Check, Verdict
from farm.atomic import write_atomic
from farm.errors import InputError
from farm.signing import farm_key, verify
from farm.store import ObjectStore
from policyhost import advisors

__all__ = ["SCHEME", "check_publishable", "download", "fetch_cached", "publish", "read_index", "read_latest",
           "resolve", "retrained", "settle", "sha256", "show", "summary"]
#: `--policy store:latest` / `store:VERSION`
SCHEME = "store:"


def check_publishable(data: bytes, manifest: dict[str, Any], key: bytes | None = None) -> str:
    """All publishing requires of a model and its manifest, before the store is touched; returns the advisor."""
    advisor = advisors.get(str(manifest.get("advisor"))).name
    digest = sha256(data)
    if manifest.get("sha256") != digest:
        raise InputError("policy model does not match the sha256 in its manifest; nothing published")
    verify(data, manifest, farm_key() if key is None else key, what="policy")
    validation = manifest.get("validation")
    if not isinstance(validation, dict) or validation.get("ok") is not True:
        raise InputError("policy has not passed validation; nothing published")
    if validation.get("sha256") != digest:
        raise InputError("the validation record is not for these bytes (its sha256 differs); nothing published")
    if not isinstance(manifest.get("features"), list) or not manifest["features"]:
        raise InputError("policy manifest lists no features; nothing published")
    return advisor


def publish(store: ObjectStore, data: bytes, manifest: dict[str, Any], when: float | None = None,
            key: bytes | None = None, pending: str | None = None) -> dict[str, Any]:
    """Publish a validated, signed policy (call under `farm.locks.publish_lock`).

    Returns {advisor, version, sha256, created, latest, previous, state, gate}: `previous` is the
    version `latest` named before (the policy a new one is judged against). With `pending` (a
    rule name) a new version is listed as a candidate waiting for that rule (`settle`).
    """
    check_publishable(data, manifest, key)

    def waiting(_record: Any, current: dict[str, Any] | None) -> Verdict | None:
        if not pending:
            return None
        wait = Check(pending, False, "waiting for its size check on the regression benchmarks", pending=True)
        return Verdict((wait,), (current or {}).get("version"))

    return artifacts.publish(POLICY, store, {"model.onnx": data}, manifest, when=when, judge=waiting)


def settle(store: ObjectStore, advisor: str, version: str, outcome: Check) -> dict[str, Any] | None:
    """Record the outcome of a listed version's pending rule; `latest` moves to it if it holds and the
    version is newer (call under the publish lock). None when nothing was pending (settled before)."""
    return artifacts.settle(POLICY, store, advisor, version, outcome)


def read_index(store: ObjectStore) -> list[dict[str, Any]]:
    return artifacts.read_index(POLICY, store)


def read_latest(store: ObjectStore, advisor: str) -> dict[str, Any] | None:
    return artifacts.read_latest(POLICY, store, advisor)


def summary(result: dict[str, Any]) -> str:
    what = "published" if result["created"] else "already published"
    pending = (result.get("gate") or {}).get("pending") or []
    if result.get("state") == "candidate":
        why = "awaiting " + " and ".join(pending) if pending else "; ".join((result.get("gate") or {}).get("reasons")
                                                                           or ["not promoted"])
        what += f" as a candidate, {why}; latest stays at {result.get('latest') or 'none'}"
    elif result.get("latest", result["version"]) != result["version"]:
        what += f"; latest stays at {result['latest']}, published later"
    return f"policy {result['advisor']} {result['version']} ({what})"


#: The facts of a retrained, size-checked policy (the retrain chain's result) that `policy retrain --wait` answers.
RETRAINED = ("advisor", "version", "created", "state", "latest", "previous", "size_check", "vocab_state")


def retrained(result: dict[str, Any], failed_code: int) -> Answer:
    """What `policy retrain --wait` answers: the chain's facts, and for people the line its size check said
    (regression/tasks.py makes it, beside the check); `failed_code` when the size check held the policy back."""
    ok = (result.get("size_check") or {}).get("ok", True)
    return Answer({k: result.get(k) for k in RETRAINED}, lambda _: str(result["summary"]), 0 if ok else failed_code)


def resolve(store: ObjectStore, advisor: str, version: str) -> str:
    return artifacts.resolve(POLICY, store, advisors.get(advisor).name, version)


def show(store: ObjectStore, advisor: str, version: str = "latest") -> dict[str, Any]:
    return artifacts.show(POLICY, store, advisors.get(advisor).name, version)


def download(store: ObjectStore, advisor: str, version: str, out: Path) -> dict[str, Any]:
    """Fetch a version to `out` after checking its sha256 (nothing is written on a mismatch)."""
    return artifacts.download(POLICY, store, advisors.get(advisor).name, version, out)


def fetch_cached(store: ObjectStore, advisor: str, version: str, cache: Path) -> tuple[Path, dict[str, Any]]:
    """The model of a published version as a local file under `cache`, its sha256 checked on every use.

    Cached as `{cache}/{advisor}/{version}.onnx` beside `{version}.json` (its manifest): the file
    stem is the version, which is what the history records.
    """
    manifest = show(store, advisor, version)
    path = Path(cache) / advisor / f"{manifest['version']}.onnx"
    if not (path.is_file() and sha256(path.read_bytes()) == manifest.get("sha256")):
        download(store, advisor, manifest["version"], path)
    write_atomic(path.with_suffix(".json"), jsonio.dumps(manifest))
    return path, manifest
