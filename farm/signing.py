"""The farm's signature on what training says about a vocabulary (and about a policy: policyhost/publish.py).

A manifest's metrics, lineage (dataset id, LLVM version) and parameters are only as true as the
process that wrote them: a manifest copied from another vocabulary, its sha256 edited to match,
would publish the other vocabulary's metrics and dataset id. So training signs, with a key only
the farm holds, the canonical JSON of the manifest as training wrote it (the sha256 of the bytes,
lineage, metrics, parameters, dataset, coverage, ...) and publishing refuses a manifest whose
signature does not verify against the bytes it is published with. Fields added after training
(the validation record, which publishing computes again anyway, the version name and the
publication time) are not signed.

HMAC-SHA256, not a public-key signature: the same farm signs and verifies, and the key never
leaves it. The key is `[vocab] signing_key` (or `MLGO_FARM_VOCAB_SIGNING_KEY`), else generated
once into `<var_dir>/secrets/vocab-signing-key` (mode 0600). Celery workers on several hosts
must all be configured with the same key, or a vocabulary trained on one host cannot be
published by another; the key id in each signature says which key signed it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from farm.errors import FarmError, InputError

KEY_FILE = "vocab-signing-key"
ALGORITHM = "hmac-sha256"
#: Manifest fields written after training: not part of what training vouches for.
UNSIGNED = frozenset({"signature", "validation", "version", "published_at"})


class SignatureError(InputError):
    """The manifest's claims are not tied to its bytes by this farm's signature: nothing is published."""


def farm_key(settings=None) -> bytes:
    """The configured signing key, else the one generated once for this var directory.

    Generation happens under a file lock: two workers training for the first time at once must
    not each write a key of their own (the second rename would orphan the first one's signatures).
    """
    from farm.config import load_settings
    from farm.locks import file_lock
    from farm.secrets import ensure_secret, read_secret, secrets_dir

    s = settings or load_settings()
    if s.vocab.signing_key:
        return s.vocab.signing_key.encode()
    path = secrets_dir(s.var_dir) / KEY_FILE
    key = read_secret(path)
    if not key:
        with file_lock(path.with_name(f".{KEY_FILE}.lock")):
            key = ensure_secret(path, "", nbytes=32)
    if not key:
        raise FarmError(f"no vocabulary signing key in {path}")
    return key.encode()


def key_id(key: bytes) -> str:
    """A public name for a key (not the key): tells a wrong key from a forged manifest."""
    return hashlib.sha256(b"mlgo-farm vocab signing key id\0" + key).hexdigest()[:16]


def _payload(data: bytes, manifest: dict[str, Any]) -> bytes:
    """Canonical JSON of the signed fields, with the sha256 of the actual bytes."""
    claims = {k: v for k, v in manifest.items() if k not in UNSIGNED}
    claims["sha256"] = hashlib.sha256(data).hexdigest()
    return json.dumps(claims, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _mac(key: bytes, data: bytes, manifest: dict[str, Any]) -> str:
    return hmac.new(key, _payload(data, manifest), hashlib.sha256).hexdigest()


def sign(data: bytes, manifest: dict[str, Any], key: bytes) -> dict[str, Any]:
    """`manifest` with the farm's signature over its training claims and `data`."""
    unsigned = {k: v for k, v in manifest.items() if k != "signature"}
    return {**unsigned, "signature": {"algorithm": ALGORITHM, "key_id": key_id(key),
                                      "hmac": _mac(key, data, unsigned)}}


#: what is signed -> the command that trains (and so signs) it
TRAINERS = {"vocabulary": "mlgo-farm vocab train", "policy": "mlgo-farm policy train-bc"}


def verify(data: bytes, manifest: dict[str, Any], key: bytes, what: str = "vocabulary") -> None:
    """Raise a one-line SignatureError unless this farm signed exactly these claims for exactly these bytes."""
    sig = manifest.get("signature")
    if not isinstance(sig, dict) or not isinstance(sig.get("hmac"), str):
        raise SignatureError(f"the {what}'s manifest is not signed by this farm (trained elsewhere, or by hand); "
                             f"train it with `{TRAINERS[what]}`; nothing published")
    if sig.get("algorithm") != ALGORITHM:
        raise SignatureError(f"unknown manifest signature algorithm {sig.get('algorithm')!r}; nothing published")
    if sig.get("key_id") != key_id(key):
        raise SignatureError(f"the manifest was signed with another farm key (key id {sig.get('key_id')}, this "
                             f"host's is {key_id(key)}): configure the same [vocab] signing_key on every host; "
                             f"nothing published")
    if not hmac.compare_digest(sig["hmac"], _mac(key, data, manifest)):
        raise SignatureError(f"the manifest's signature does not match its {what} bytes, lineage, metrics and "
                             f"parameters (copied from another {what} or edited); nothing published")
