"""Publishing a vocabulary: what the farm requires of one, the gate that judges it, and what a publish says.

A version is `vocab/{kind}/{version}/vocab.json` plus `manifest.json` (farm/artifacts/kinds.py
declares the kind). Only a vocabulary whose manifest records a passed validation of exactly its
bytes (the validation's sha256) and carries the farm's signature over its training claims
(farm/signing.py) is published. Everything else is the vocabularies' handle,
`farm.artifacts.VOCABULARIES` (farm/artifacts/shelf.py), which every role calls directly: the
crash-safe order of the writes, `latest` only moving forward in time, the index with each version's
state, promotion by an operator, settling a pending rule, resolve, show, download (docs/artifacts.md).

A new version becomes `latest` only if it passes the promotion gate (vocabgen/gate.py) against
the current `latest`; otherwise it is listed as a `candidate` with the gate's reasons.
`VOCABULARIES.promote` (`mlgo-farm vocab promote`) is the operator's override: it moves `latest`
to any listed version (back in time too: a rollback), recording who, when and why; republishing
never undoes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from farm.answer import Answer
from farm.artifacts import VOCABULARIES
from farm.artifacts.verdict import awaits_only
from farm.errors import InputError
from farm.objectstore import ObjectStore
from farm.signing import farm_key, verify
from farm.vocabfile import ValidationError, check_magnitude, check_schema, parse, sha256
from vocabgen.dataset import check_kind
from vocabgen.gate import Gate, gate_from_settings, promotion_verdict

__all__ = ["check_publishable", "llvm_flag", "publish", "retrained", "summary"]
#: what a publish result says (the store's also names `previous`)
_RESULT = ("kind", "version", "sha256", "created", "latest", "state", "gate")


def check_validated(manifest: dict[str, Any], digest: str) -> None:
    """The manifest records a passed validation of exactly these bytes (sha256 `digest`)."""
    validation = manifest.get("validation")
    if not isinstance(validation, dict) or validation.get("ok") is not True:
        raise ValidationError("vocabulary has not passed validation; nothing published")
    if validation.get("sha256") != digest:
        raise ValidationError("the validation record is not for these bytes (its sha256 differs); nothing published")


def check_publishable(data: bytes, manifest: dict[str, Any], key: bytes | None = None) -> str:
    """All publishing requires of a vocabulary and its manifest, before the store is touched; returns the kind."""
    kind = check_kind(str(manifest.get("kind")))
    digest = sha256(data)
    if manifest.get("sha256") != digest:
        raise InputError("vocabulary does not match the sha256 in its manifest; nothing published")
    verify(data, manifest, farm_key() if key is None else key)
    vocab = parse(data)
    check_schema(kind, vocab)
    check_magnitude(vocab)
    check_validated(manifest, digest)
    return kind


def publish(store: ObjectStore, data: bytes, manifest: dict[str, Any], when: float | None = None,
            key: bytes | None = None, gate: Gate | None = None) -> dict[str, Any]:
    """Publish a validated, signed vocabulary (call under `farm.locks.publish_lock`).

    Returns {kind, version, sha256, created, latest, state, gate}: `latest` is the version
    `latest` names afterwards (None when there is none), `state` this version's, `gate` the
    verdict. `gate` defaults to the `[gate]` settings.
    """
    check_publishable(data, manifest, key)
    gate = gate_from_settings() if gate is None else gate
    result = VOCABULARIES.publish(store, {"vocab.json": data}, manifest, when=when, against_latest=True,
                                  judge=lambda record, latest: promotion_verdict(record, latest, gate))
    return {k: result[k] for k in _RESULT}


def summary(result: dict[str, Any]) -> str:
    """One line for a publish result: a candidate with the gate's reasons, or `latest` staying on a newer version."""
    what = "published" if result["created"] else "already published"
    latest = result.get("latest", result["version"])
    pending = (result.get("gate") or {}).get("pending") or []
    if result.get("state") == "candidate" and pending and awaits_only(result.get("gate"), pending[0]):
        what += f", awaiting {' and '.join(pending)}; latest stays at {latest or 'none'} until then"
    elif result.get("state") == "candidate":
        reasons = "; ".join((result.get("gate") or {}).get("reasons") or ["not promoted"])
        what += f" as a candidate, latest stays at {latest or 'none'}: {reasons}"
    elif latest != result["version"]:
        what += f"; latest stays at {latest}, published later"
    return f"{result['kind']} {result['version']} ({what})"


def retrained(result: dict[str, Any]) -> Answer:
    """What `vocab retrain --wait` answers for the chain's publish result: its facts, and for people the version and
    whether it is published, waiting for a rule (`awaiting`) or a candidate with the gate's reasons."""
    gate = result.get("gate") or {}
    pending = gate.get("pending") or []
    waits = result.get("state") == "candidate" and pending and awaits_only(gate, pending[0])
    return Answer({"kind": result["kind"], "version": result["version"], "created": bool(result["created"]),
                   "state": result.get("state"), "latest": result.get("latest"), "awaiting": pending if waits else [],
                   "reasons": gate.get("reasons") or [], "gate": gate}, _retrained_said)


def _retrained_said(f: Mapping[str, Any]) -> str:
    what = "published" if f["created"] else "already published"
    if f["awaiting"]:
        return (f"{f['kind']} {f['version']} ({what}, awaiting {' and '.join(f['awaiting'])}; latest stays at "
                f"{f['latest'] or 'none'} until then)")
    line = f"{f['kind']} {f['version']} ({what})"
    if f["state"] == "candidate":  # a second line, for people
        line += f"\n  a candidate, not latest (latest stays at {f['latest'] or 'none'}): {'; '.join(f['reasons'])}"
    return line


def llvm_flag(kind: str, path: Path) -> str:
    """The option that makes LLVM tools (opt, llc, llvm-ir2vec) use the file; clang needs `-mllvm` before it."""
    option = "ir2vec-vocab-path" if kind == "ir" else "mir2vec-vocab-path"
    return f"-{option}={Path(path).absolute()}"
