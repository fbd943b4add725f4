"""Publishing a vocabulary to a real S3 endpoint (moto server over HTTP) and the embedded directory store: what the
vocabulary side requires, and that LLVM loads what comes back. What the versioned store does with any published
version (the order of its writes, `latest`, failures, promotion) is tests/farm/artifacts/test_versions.py's;
the trained vocabularies and the two stores are tests/vocabgen/conftest.py's fixtures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from farm.artifacts import VOCABULARIES
from farm.errors import InputError
from farm.objectstore import CorruptObject, FileStore, ObjectStore
from farm.toolchain import Toolchain
from farm.vocabfile import ValidationError, sha256
from vocabgen import publish as pub
from vocabgen.validate import compile_samples, llvm_loads


def _vocab_keys(store: ObjectStore) -> list[str]:
    return store.list("vocab/")


def test_publish_list_show_download(store, validated, toolchain: Toolchain, tmp_path: Path) -> None:
    data, manifest = validated
    first = pub.publish(store, data, manifest)
    assert first["created"]
    assert re.fullmatch(rf"\d{{8}}-llvm{re.escape(toolchain.version)}-ir-d8-{sha256(data)[:12]}", first["version"])
    again = pub.publish(store, data, manifest)
    assert again == {**first, "created": False}
    index = VOCABULARIES.read_index(store)
    assert [(v["kind"], v["version"]) for v in index] == [("ir", first["version"])]
    shown = VOCABULARIES.show(store, "ir", "latest")
    assert shown["sha256"] == sha256(data) and shown["lineage"]["dataset_id"] == manifest["lineage"]["dataset_id"]
    assert shown["metrics"]["holdout"]["mrr"] == manifest["metrics"]["holdout"]["mrr"]
    out = tmp_path / "dl" / "vocab.json"
    VOCABULARIES.download(store, "ir", first["version"], out)
    assert out.read_bytes() == data
    modules = compile_samples("ir", toolchain, tmp_path)
    assert llvm_loads("ir", out, 8, toolchain, modules)[0]["functions"] >= 5
    assert pub.llvm_flag("ir", out) == f"-ir2vec-vocab-path={out}"


def test_refuses_bad_requests_and_publishes_nothing(store, validated) -> None:
    data, manifest = validated
    with pytest.raises(ValidationError, match="has not passed validation"):
        pub.publish(store, data, {k: v for k, v in manifest.items() if k != "validation"})
    for forged in ({"ok": True}, {**manifest["validation"], "sha256": sha256(b"other bytes")}):
        with pytest.raises(ValidationError, match="validation record is not for these bytes"):
            pub.publish(store, data, {**manifest, "validation": forged})
    with pytest.raises(ValidationError, match="has not passed validation"):
        pub.publish(store, data, {**manifest, "validation": {**manifest["validation"], "ok": "yes"}})
    with pytest.raises(InputError, match="does not match the sha256"):
        pub.publish(store, data + b" ", manifest)
    for bad in ("a/b", "..", "../ir/x", "x..y"):
        with pytest.raises(InputError, match="invalid version name"):
            VOCABULARIES.show(store, "ir", bad)
    with pytest.raises(InputError, match="unknown vocabulary kind"):
        VOCABULARIES.show(store, "llvm", "latest")
    with pytest.raises(InputError, match="no ir vocabulary has been published"):
        VOCABULARIES.download(store, "ir", "latest", Path("/nonexistent/x.json"))
    assert _vocab_keys(store) == []


@pytest.mark.parametrize("index", [b"{not json", b"[]", b'{"versions": {"a": 1}}'])
def test_a_corrupt_index_is_not_retried_and_nothing_is_uploaded(validated, tmp_path: Path, index: bytes) -> None:
    from farm.celery_app import will_retry
    from vocabgen import tasks

    data, manifest = validated
    store = FileStore(tmp_path / "store")
    store.put("vocab/index.json", index)
    with pytest.raises(CorruptObject, match=r"vocab/index\.json in file://\S+:? .*(is not|invalid JSON)") as e:
        pub.publish(store, data, manifest)
    assert isinstance(e.value, tasks.publish.dont_autoretry_for) and not will_retry(tasks.publish, e.value)
    assert store.list("vocab/") == ["vocab/index.json"] and store.get("vocab/index.json") == index
    with pytest.raises(CorruptObject):
        VOCABULARIES.read_index(store)


