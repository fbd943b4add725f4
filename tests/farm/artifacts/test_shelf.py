"""Each artifact kind's handle (farm/artifacts/shelf.py) on S3 over loopback (moto's server): publish a version,
then one that waits for a rule, settle it, promote the first back, resolve, show and download, for vocabularies,
policies and datasets alike. The handle runs no role's checks (signatures, validation: the roles' tests), so the
artifacts here are bytes and the manifest fields the kind's names, index entry and pointer read."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from farm.artifacts import DATASETS, POLICIES, VOCABULARIES, Shelf, handle
from farm.artifacts.kinds import DATASET, KINDS, POLICY, VOCAB, ArtifactKind
from farm.artifacts.verdict import POLICY_SIZE, Check, Verdict
from farm.errors import InputError
from farm.objectstore import S3Store
from tests import servers

DAY = 86400
T0 = 1_790_000_000.0


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _vocabulary(salt: int) -> tuple[dict[str, bytes], dict, bytes | None]:
    data = json.dumps({"Opcodes": {"Ret": [salt, 0.5]}}).encode()
    return {"vocab.json": data}, {"kind": "ir", "sha256": _sha(data), "dimension": 2,
                                  "lineage": {"dataset_id": "ir-0", "llvm_version": "22.1.8"}}, None


def _policy(salt: int) -> tuple[dict[str, bytes], dict, bytes | None]:
    data = b"onnx model %d" % salt
    return {"model.onnx": data}, {"advisor": "inline", "sha256": _sha(data), "vocab_version": None,
                                  "llvm": {"llvm_version": "22.1.8"}, "metrics": {}}, None


def _dataset(salt: int) -> tuple[dict[str, bytes], dict, bytes | None]:
    files = {name: b"%d %s\n" % (salt, name.encode()) for name in DATASET.files}
    digests = {name: _sha(data) for name, data in files.items()}
    manifest = {"kind": "ir", "id": f"ir-{_sha(json.dumps(digests).encode())[:16]}", "files": digests,
                "llvm": {"llvm_version": "22.1.8"}}
    raw = json.dumps(manifest).encode()
    return {**files, "manifest.json": raw}, manifest, raw


#: kind -> (its handle, its group in these tests, an artifact of it by salt)
CASES = {"vocabulary": (VOCABULARIES, "ir", _vocabulary), "policy": (POLICIES, "inline", _policy),
         "dataset": (DATASETS, "ir", _dataset)}


def _waits(kind: ArtifactKind):
    """A judge that leaves the version waiting for `policy_size`, as the retrain chain's publish does."""
    return lambda _record, current: Verdict((Check(POLICY_SIZE, False, "waiting for its size check", pending=True),),
                                            kind.in_force(current))


@pytest.fixture(scope="module")
def s3() -> Iterator[servers.S3Endpoint]:
    ep = servers.start_s3()
    yield ep
    ep.stop()


@pytest.fixture
def store(s3: servers.S3Endpoint, request) -> S3Store:
    """A fresh prefix of the loopback bucket per test."""
    store = S3Store("mlgo-artifacts", request.node.name.replace("[", "-").rstrip("]"), s3.url,
                    access_key_id="testing", secret_access_key="testing", connect_timeout=2, retries=1)
    store.ensure_bucket()
    return store


def test_every_declared_kind_has_one_handle() -> None:
    assert [handle(k) for k in KINDS] == [VOCABULARIES, POLICIES, DATASETS]
    assert (VOCABULARIES.kind, POLICIES.kind, DATASETS.kind) == (VOCAB, POLICY, DATASET)
    assert all(isinstance(handle(k), Shelf) for k in KINDS)


@pytest.mark.parametrize("name", CASES)
def test_publish_settle_promote_resolve_download(store: S3Store, tmp_path: Path, name: str) -> None:
    shelf, group, make = CASES[name]
    kind = shelf.kind
    files_a, manifest_a, raw_a = make(1)
    files_b, manifest_b, raw_b = make(2)

    first = shelf.publish(store, files_a, manifest_a, when=T0, raw_manifest=raw_a)
    a = first["version"]
    assert first["created"] and first["state"] == "latest" and first["latest"] == a and first["previous"] is None
    assert shelf.resolve(store, group, "latest") == a

    second = shelf.publish(store, files_b, manifest_b, when=T0 + DAY, judge=_waits(kind), raw_manifest=raw_b)
    b = second["version"]
    assert second["state"] == "candidate" and second["latest"] == a and second["previous"] == a
    assert second["gate"]["pending"] == [POLICY_SIZE] and second["gate"]["against"] == a
    assert shelf.newest(store, group, POLICY_SIZE) == b, "waiting only for the rule: what a consumer settles"
    assert shelf.resolve(store, group, "latest") == a, "a candidate leaves latest alone"

    settled = shelf.settle(store, group, b, Check(POLICY_SIZE, True, "no bigger"))
    assert settled["state"] == "latest" and settled["gate"]["passed"]
    assert shelf.resolve(store, group, "latest") == b
    assert shelf.settle(store, group, b, Check(POLICY_SIZE, True, "again")) is None, "settled once"

    promoted = shelf.promote(store, group, a, "roll back", by="ops")
    assert promoted["state"] == "latest" and promoted["promoted"]["previous"] == b
    assert shelf.resolve(store, group, "latest") == a
    assert kind.in_force(shelf.read_latest(store, group)) == a
    assert {v["version"]: v["state"] for v in shelf.read_index(store)} == {a: "latest", b: "superseded"}
    assert shelf.entry(store, group, b)["state"] == "superseded" and shelf.entry(store, group, "nope") is None

    assert shelf.show(store, group)[kind.identity] == manifest_a[kind.identity]
    assert shelf.show(store, group, b)[kind.identity] == manifest_b[kind.identity]
    assert shelf.find_by_hash(store, group, str(manifest_b[kind.identity])) == b
    for version, files in (("latest", files_a), (b, files_b)):
        for name in kind.files:
            out = tmp_path / version / name
            assert shelf.download(store, group, version, out, name)[kind.identity] == \
                (manifest_a if files is files_a else manifest_b)[kind.identity]
            assert out.read_bytes() == files[name]

    again = shelf.publish(store, files_b, manifest_b, when=T0 + 2 * DAY, raw_manifest=raw_b)
    assert not again["created"] and again["latest"] == a, "republishing does not undo a promotion"


def test_the_vocabularies_handle_knows_the_embedding_kinds(store: S3Store) -> None:
    with pytest.raises(InputError, match="unknown vocabulary kind 'llvm': use one of ir, mir"):
        VOCABULARIES.resolve(store, "llvm")
    with pytest.raises(InputError, match="no mir vocabulary has been published"):
        VOCABULARIES.show(store, "mir")
