"""The farm's signature ties a manifest's metrics and lineage to its vocabulary bytes."""

from __future__ import annotations

import copy
import json
import stat
from pathlib import Path

import pytest

from farm.objectstore import FileStore
from farm.signing import SignatureError, farm_key, key_id, sign, verify
from farm.vocabfile import sha256
from tests.vocabgen.conftest import handmade_manifest, handmade_vocab
from vocabgen import publish as pub

KEY = b"a farm key for the tests"


def _edit(manifest: dict, path: tuple[str, ...], value) -> dict:
    edited = copy.deepcopy(manifest)
    where = edited
    for part in path[:-1]:
        where = where[part]
    where[path[-1]] = value
    return edited


def test_a_signed_manifest_verifies_after_a_json_round_trip_and_with_unsigned_fields_added() -> None:
    """Celery stages manifests as JSON and the validate task adds its record; publishing adds a version."""
    data = handmade_vocab()
    manifest = json.loads(json.dumps(handmade_manifest(data, KEY)))
    verify(data, {**manifest, "validation": {"ok": True}, "version": "v", "published_at": "now"}, KEY)
    assert manifest["signature"]["key_id"] == key_id(KEY) != key_id(KEY + b"!")
    assert KEY.decode() not in json.dumps(manifest), "the key itself is never in a manifest"


@pytest.mark.parametrize("path", [("lineage", "dataset_id"), ("dataset", "id"), ("metrics", "holdout", "mrr"),
                                  ("parameters", "epochs"), ("dimension",), ("kind",)])
def test_any_edited_claim_fails(path: tuple[str, ...]) -> None:
    data = handmade_vocab()
    manifest = handmade_manifest(data, KEY)
    with pytest.raises(SignatureError, match=r"^the manifest's signature does not match its vocabulary bytes, "
                                             r"lineage, metrics and parameters \(copied from another vocabulary "
                                             r"or edited\); nothing published$"):
        verify(data, _edit(manifest, path, "forged"), KEY)


def test_a_manifest_copied_from_another_vocabulary_fails_even_with_its_sha256_fixed() -> None:
    a, b = handmade_vocab(salt=1), handmade_vocab(salt=2)
    copied = {**handmade_manifest(a, KEY, dataset="ir-aaaaaaaaaaaaaaaa", mrr=0.9), "sha256": sha256(b)}
    with pytest.raises(SignatureError, match="does not match its vocabulary bytes"):
        verify(b, copied, KEY)
    verify(b, handmade_manifest(b, KEY), KEY)


def test_unsigned_and_foreign_manifests_fail_with_one_line_each() -> None:
    data = handmade_vocab()
    manifest = handmade_manifest(data, KEY)
    unsigned = {k: v for k, v in manifest.items() if k != "signature"}
    with pytest.raises(SignatureError, match=r"^the vocabulary's manifest is not signed by this farm"):
        verify(data, unsigned, KEY)
    with pytest.raises(SignatureError, match=rf"^the manifest was signed with another farm key \(key id "
                                             rf"{key_id(KEY)}, this host's is {key_id(b'other')}\): configure the "
                                             rf"same \[vocab\] signing_key on every host"):
        verify(data, manifest, b"other")
    with pytest.raises(SignatureError, match="unknown manifest signature algorithm 'md5'"):
        verify(data, _edit(manifest, ("signature", "algorithm"), "md5"), KEY)
    assert sign(data, manifest, KEY) == manifest, "signing again replaces the signature, it does not nest"


def test_the_generated_key_is_made_once_and_private(tmp_path: Path) -> None:
    from farm.config import load_settings

    key = farm_key()
    path = load_settings().var_dir / "secrets" / "vocab-signing-key"
    assert path.read_text().strip().encode() == key and len(key) >= 40
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert farm_key() == key


def test_processes_making_the_key_at_once_agree_on_one(tmp_path: Path) -> None:
    """Celery workers training for the first time at once must sign with the same generated key."""
    import os
    import subprocess
    import sys

    code = "from farm.signing import farm_key; print(farm_key().decode())"
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=os.environ)
             for _ in range(6)]
    keys = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert len(keys) == 1 and keys == {farm_key().decode()}


def test_a_configured_key_is_used_and_nothing_is_generated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Celery host configured with the same key verifies what any of them signed."""
    from farm.config import load_settings

    monkeypatch.setenv("MLGO_FARM_VOCAB_SIGNING_KEY", "shared by every host")
    assert farm_key() == b"shared by every host"
    assert not (load_settings().var_dir / "secrets" / "vocab-signing-key").exists()


def test_publish_refuses_a_forged_manifest_and_writes_nothing(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store")
    key = farm_key()
    a, b = handmade_vocab(salt=1), handmade_vocab(salt=2)
    copied = {**handmade_manifest(a, key, mrr=0.9), "sha256": sha256(b),
              "validation": {"ok": True, "sha256": sha256(b)}}
    with pytest.raises(SignatureError, match="does not match its vocabulary bytes"):
        pub.publish(store, b, copied)
    with pytest.raises(SignatureError, match="signed with another farm key"):
        pub.publish(store, b, handmade_manifest(b, b"another farm"))
    assert store.list("") == []
    assert pub.publish(store, b, handmade_manifest(b, key))["created"]
