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

Beside `model.onnx` a version may hold `model.weights`: the same network for the native host
(policyhost/standalone/mlgo-policy-host.c), in the format policytrain/native_export.py writes. It is part of the
version like the model: the manifest records it (`weights`: file, sha256, format version; `weights_record`), inside
what the farm signs (policyhost/release.py's manifest_for takes the bytes), so it is uploaded before the manifest and
checked against it wherever the model is (publish, download, the dashboard, `store verify`): a weights file edited
or swapped after publishing fails like an edited model. Its callers hand its bytes in (policyhost imports no
trainer); `check_weights` reads its header and refuses, in one line, a file of another format version or whose
features are not the model's. The version's identity stays the model's sha256: the same model published again is
the version that holds it, with the weights it was first published with (none, for a version published before
versions held them: it downloads and verifies as it always did, and says it has no native weights).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from farm import jsonio
from farm.answer import Answer
from farm.artifacts import POLICIES
from farm.artifacts.kinds import POLICY, POLICY_WEIGHTS
from farm.artifacts.verdict import Check, Verdict
from farm.artifacts.versions import sha256
from farm.atomic import write_atomic
from farm.errors import InputError
from farm.objectstore import ObjectStore
from farm.signing import farm_key, verify
from policyhost import advisors

__all__ = ["SCHEME", "WEIGHTS", "check_publishable", "check_weights", "fetch_cached", "publish", "retrained",
           "sha256", "summary", "weights_features", "weights_record"]
#: `--policy store:latest` / `store:VERSION`
SCHEME = "store:"
#: the native host's weights file beside `model.onnx` (docs/policies.md, "The weights file"), an optional file of
#: the policy kind (farm/artifacts/kinds.py)
WEIGHTS = POLICY_WEIGHTS
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


def weights_record(weights: bytes) -> dict[str, Any]:
    """What a policy's manifest records of its weights file (signed with the rest: release.manifest_for)."""
    try:
        weights_features(weights)  # a weights file at all, of the format version the host reads
    except InputError as e:
        raise InputError(f"{e}; nothing published") from None
    return {"file": WEIGHTS, "sha256": sha256(weights), "format_version": WEIGHTS_VERSION}


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
    rule name) a new version is listed as a candidate waiting for that rule (`settle`). `weights` are the native
    host's file for this model, which the manifest must record (`weights_record`) and only then: the version holds
    `model.weights`. `weights` in the result is the sha256 the stored version's manifest records (None: it has none;
    the same model published before without weights stays the version it was).
    """
    check_publishable(data, manifest, key)
    recorded = manifest.get("weights")
    if weights is not None and not recorded:
        raise InputError("the weights file is not in the policy's manifest (write the manifest with it); "
                         "nothing published")
    if recorded and weights is None:
        raise InputError(f"the policy's manifest records {WEIGHTS} but no weights file was given; nothing published")
    if weights is not None:
        if sha256(weights) != (recorded.get("sha256") if isinstance(recorded, dict) else None):
            raise InputError("the weights file does not match the sha256 in the policy's manifest; nothing published")
        check_weights(weights, manifest)

    def waiting(_record: Any, current: dict[str, Any] | None) -> Verdict | None:
        if not pending:
            return None
        wait = Check(pending, False, "waiting for its size check on the regression benchmarks", pending=True)
        return Verdict((wait,), (current or {}).get("version"))

    files = {"model.onnx": data, **({WEIGHTS: weights} if weights is not None else {})}
    result = POLICIES.publish(store, files, manifest, when=when, judge=waiting)
    stored = POLICIES.show(store, result["advisor"], result["version"]) if not result["created"] else manifest
    return {**result, "weights": POLICIES.kind.digests(stored).get(WEIGHTS)}


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

    Cached as `{cache}/{advisor}/{version}.onnx` beside `{version}.json` (its manifest) and, when the version holds
    them, `{version}.weights` (the native host's: policyhost/native.py builds with them): the file stem is the
    version, which is what the history records.
    """
    advisor = advisors.get(advisor).name
    manifest = POLICIES.show(store, advisor, version)
    path = Path(cache) / advisor / f"{manifest['version']}.onnx"
    wanted = {"model.onnx": path, **({WEIGHTS: path.with_suffix(".weights")} if WEIGHTS in POLICY.held(manifest)
                                     else {})}
    digests = POLICY.digests(manifest)
    if not all(p.is_file() and sha256(p.read_bytes()) == digests.get(name) for name, p in wanted.items()):
        POLICIES.download_files(store, advisor, manifest["version"], wanted)
    write_atomic(path.with_suffix(".json"), jsonio.dumps(manifest))
    return path, manifest
