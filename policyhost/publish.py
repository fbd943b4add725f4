"""Publishing a policy: what the farm requires of one, what a publish says, and a published model cached locally.

A version is `policies/{advisor}/{version}/model.onnx` plus `manifest.json` (sha256, advisor,
features, training corpus and dataset, vocabulary version when it reads IR2Vec features,
parameters, held-out metrics, LLVM version/commit, validation); farm/artifacts/kinds.py declares
the kind. Only a model whose manifest records a passed validation of exactly its bytes is
published (policyhost/release.py validates). Everything else is the policies' handle,
`farm.artifacts.POLICIES` (farm/artifacts/shelf.py), which every role calls directly, as for
vocabularies: the order of the writes, `latest` only moving forward in time, the index with each
version's state, the same content published again yielding the version that holds it, resolve,
show, download (docs/artifacts.md). The handle knows no advisors (the farm imports no role): an
advisor named by a user is checked where it comes in (the CLI's choices, `fetch_cached`).

A retrained policy is published *pending* its size check (`pending="policy_size"`): listed as a
`candidate` whose gate record waits for that rule, `latest` unchanged; the check
(regression/tasks.py) settles it with `POLICIES.settle`, which moves `latest` when it holds. The
manifest carries the farm's signature over its training claims and the model's bytes
(farm/signing.py, the same key as vocabularies'), so held-out metrics and lineage cannot be copied
onto another model.

Beside `model.onnx` a version may hold `model.weights` (and `model.weights.sha256`): the same network for the native
host (policyhost/standalone/mlgo-policy-host.c), in the format policytrain/native_export.py writes. Its callers hand
its bytes in (policyhost imports no trainer); `check_weights` reads its header and refuses, in one line, a file of
another format version or whose features are not the model's. It is stored after the version's manifest, never
replaced once stored, and is no part of the version's identity (the model's sha256).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from farm import jsonio
from farm.answer import Answer
from farm.artifacts import POLICIES
from farm.artifacts.verdict import Check, Verdict
from farm.artifacts.versions import sha256
from farm.atomic import write_atomic
from farm.errors import InputError, StoreError
from farm.objectstore import ObjectStore
from farm.signing import farm_key, verify
from policyhost import advisors

__all__ = ["SCHEME", "WEIGHTS", "check_publishable", "check_weights", "fetch_cached", "publish", "retrained",
           "sha256", "summary", "weights_features"]
#: `--policy store:latest` / `store:VERSION`
SCHEME = "store:"
#: the native host's weights file beside `model.onnx` (docs/policies.md, "The weights file")
WEIGHTS = "model.weights"
#: the one format version of the weights file the native host reads (policytrain/native_export.py's FORMAT_VERSION)
WEIGHTS_MAGIC, WEIGHTS_VERSION = b"MLGOPOLW", 1


def weights_features(data: bytes) -> list[str]:
    """The feature names a weights file's header lists, in order (InputError in one line: not a weights file,
    another format version, a truncated header or a missing trailer)."""
    if len(data) < 32 or data[:8] != WEIGHTS_MAGIC:
        raise InputError("not an MLGO policy weights file (no MLGOPOLW magic)")
    version, nf = struct.unpack_from("<2I", data, 8)
    if version != WEIGHTS_VERSION:
        raise InputError(f"weights file has format version {version}; the native host reads version {WEIGHTS_VERSION}")
    at, names = 28, []
    try:
        for _ in range(nf):
            (n,) = struct.unpack_from("<I", data, at)
            names.append(data[at + 4:at + 4 + n].decode())
            if len(data) < at + 12 + n:
                raise struct.error
            at += 12 + n
    except (struct.error, UnicodeDecodeError):
        raise InputError("weights file is truncated or its feature names are not UTF-8") from None
    if data[-4:] != b"END1":
        raise InputError("weights file has no END1 trailer (truncated)")
    return names


def check_weights(data: bytes, manifest: dict[str, Any]) -> None:
    """A weights file is the model's: its format version the host reads and its features exactly the manifest's."""
    try:
        names = weights_features(data)
    except InputError as e:
        raise InputError(f"{e}; nothing published") from None
    features = manifest.get("features") or []
    if sorted(names) != sorted(features):
        extra = sorted(set(names) ^ set(features))
        raise InputError(f"the weights file's features are not the model's ({len(names)} against {len(features)}, "
                         f"first differing {extra[0] if extra else '(order)'!r}); nothing published")


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
            key: bytes | None = None, pending: str | None = None, weights: bytes | None = None) -> dict[str, Any]:
    """Publish a validated, signed policy (call under `farm.locks.publish_lock`).

    Returns {advisor, version, sha256, created, latest, previous, state, gate, weights}: `previous` is the
    version `latest` named before (the policy a new one is judged against). With `pending` (a
    rule name) a new version is listed as a candidate waiting for that rule (`settle`). With `weights` (the native
    host's file for this model), the version holds `model.weights` and its `.sha256` too; `weights` in the result
    is its sha256 (None: the version has none).
    """
    check_publishable(data, manifest, key)
    if weights is not None:
        check_weights(weights, manifest)

    def waiting(_record: Any, current: dict[str, Any] | None) -> Verdict | None:
        if not pending:
            return None
        wait = Check(pending, False, "waiting for its size check on the regression benchmarks", pending=True)
        return Verdict((wait,), (current or {}).get("version"))

    result = POLICIES.publish(store, {"model.onnx": data}, manifest, when=when, judge=waiting)
    return {**result, "weights": _store_weights(store, result["advisor"], result["version"], weights)}


def _store_weights(store: ObjectStore, advisor: str, version: str, weights: bytes | None) -> str | None:
    """`model.weights` and its `.sha256` beside the version's model (after its manifest: a reader finds a version
    whole, with or without weights); an existing one is kept, never replaced. Its sha256, or None."""
    key = f"{POLICIES.kind.root}/{advisor}/{version}/{WEIGHTS}"
    if store.exists(key) and store.exists(f"{key}.sha256"):
        return store.sha256(key)[0]
    if weights is None:
        return None
    digest = sha256(weights)
    store.put(key, weights)
    if store.sha256(key)[0] != digest:
        store.delete(key)
        raise StoreError(f"{key} read back with a different sha256")
    store.put(f"{key}.sha256", f"{digest}  {WEIGHTS}\n".encode(), "text/plain")
    return digest


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


def fetch_cached(store: ObjectStore, advisor: str, version: str, cache: Path) -> tuple[Path, dict[str, Any]]:
    """The model of a published version as a local file under `cache`, its sha256 checked on every use.

    Cached as `{cache}/{advisor}/{version}.onnx` beside `{version}.json` (its manifest): the file
    stem is the version, which is what the history records.
    """
    advisor = advisors.get(advisor).name
    manifest = POLICIES.show(store, advisor, version)
    path = Path(cache) / advisor / f"{manifest['version']}.onnx"
    if not (path.is_file() and sha256(path.read_bytes()) == manifest.get("sha256")):
        POLICIES.download(store, advisor, manifest["version"], path)
    write_atomic(path.with_suffix(".json"), jsonio.dumps(manifest))
    return path, manifest
