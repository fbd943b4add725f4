"""Publishing to a real S3 endpoint (moto server over HTTP) and the embedded directory store."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from farm.errors import InputError, StoreError
from farm.store import FileStore, ObjectStore
from farm.toolchain import Toolchain
from tests import servers
from tests.vocabgen.conftest import TINY, s3_store
from vocabgen import publish as pub
from vocabgen.build import train_vocabulary
from vocabgen.dataset import load_dataset
from vocabgen.locks import publish_lock
from vocabgen.validate import compile_samples, llvm_loads, validate_vocab
from vocabgen.vocabfile import ValidationError, sha256


@pytest.fixture(scope="module")
def validated(ir_dataset: Path, toolchain: Toolchain, tmp_path_factory) -> tuple[bytes, dict]:
    data, manifest = train_vocabulary(load_dataset(ir_dataset), TINY)
    path = tmp_path_factory.mktemp("v") / "vocab.json"
    path.write_bytes(data)
    manifest["validation"] = validate_vocab("ir", path, toolchain)
    return data, manifest


@pytest.fixture(params=["s3", "file"])
def store(request, tmp_path: Path):
    if request.param == "file":
        yield FileStore(tmp_path / "store")
        return
    ep = servers.start_s3()
    try:
        yield s3_store(ep.url)
    finally:
        ep.stop()


def _vocab_keys(store: ObjectStore) -> list[str]:
    return store.list("vocab/")


def test_publish_list_show_download(store, validated, toolchain: Toolchain, tmp_path: Path) -> None:
    data, manifest = validated
    first = pub.publish(store, data, manifest)
    assert first["created"]
    assert re.fullmatch(rf"\d{{8}}-llvm{re.escape(toolchain.version)}-ir-d8-{sha256(data)[:12]}", first["version"])
    again = pub.publish(store, data, manifest)
    assert again == {**first, "created": False}
    index = pub.read_index(store)
    assert [(v["kind"], v["version"]) for v in index] == [("ir", first["version"])]
    shown = pub.show(store, "ir", "latest")
    assert shown["sha256"] == sha256(data) and shown["lineage"]["dataset_id"] == manifest["lineage"]["dataset_id"]
    assert shown["metrics"]["holdout"]["mrr"] == manifest["metrics"]["holdout"]["mrr"]
    out = tmp_path / "dl" / "vocab.json"
    pub.download(store, "ir", first["version"], out)
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
            pub.show(store, "ir", bad)
    with pytest.raises(InputError, match="unknown vocabulary kind"):
        pub.show(store, "llvm", "latest")
    with pytest.raises(InputError, match="no ir vocabulary has been published"):
        pub.download(store, "ir", "latest", Path("/nonexistent/x.json"))
    assert _vocab_keys(store) == []


@pytest.mark.parametrize("index", [b"{not json", b"[]", b'{"versions": {"a": 1}}'])
def test_a_corrupt_index_is_not_retried_and_nothing_is_uploaded(validated, tmp_path: Path, index: bytes) -> None:
    from vocabgen import tasks

    data, manifest = validated
    store = FileStore(tmp_path / "store")
    store.put("vocab/index.json", index)
    with pytest.raises(pub.CorruptObject, match=r"vocab/index\.json in file://\S+:? .*is not") as e:
        pub.publish(store, data, manifest)
    assert isinstance(e.value, tasks.publish.dont_autoretry_for) and not tasks._will_retry(tasks.publish, e.value)
    assert store.list("vocab/") == ["vocab/index.json"] and store.get("vocab/index.json") == index
    with pytest.raises(pub.CorruptObject):
        pub.read_index(store)


def test_corrupt_download_writes_nothing(store, validated, tmp_path: Path) -> None:
    data, manifest = validated
    version = pub.publish(store, data, manifest)["version"]
    store.put(f"vocab/ir/{version}/vocab.json", data.replace(b"0", b"1", 1))
    out = tmp_path / "v.json"
    with pytest.raises(StoreError, match="checksum mismatch"):
        pub.download(store, "ir", "latest", out)
    assert not out.exists()


def test_identical_publishes_under_the_lock_make_one_version(validated, tmp_path: Path) -> None:
    """Two threads race with the same content through the directory store's lock."""
    from concurrent.futures import ThreadPoolExecutor

    data, manifest = validated
    store = FileStore(tmp_path / "store")

    def one(_):
        with publish_lock(store, "redis://unused"):
            return pub.publish(store, data, manifest)

    with ThreadPoolExecutor(2) as ex:
        results = list(ex.map(one, range(2)))
    assert sorted(r["created"] for r in results) == [False, True]
    assert len({r["version"] for r in results}) == 1
    assert len(pub.read_index(store)) == 1


def test_endpoint_dies_during_upload(s3_proxy, validated) -> None:
    """The endpoint goes down right after vocab.json is stored: no version, no latest, no index."""
    _, proxy = s3_proxy
    data, manifest = validated
    store = s3_store(proxy.url)
    puts = []

    def stop_after_first_put(**_):
        puts.append(1)
        if len(puts) == 1:
            proxy.stop()

    store.client.meta.events.register("after-call.s3.PutObject", stop_after_first_put)
    with pytest.raises(StoreError):
        pub.publish(store, data, manifest)
    proxy.start()
    keys = _vocab_keys(store)
    assert not any(k.endswith(("manifest.json", "latest.json", "index.json")) for k in keys), keys
    assert pub.read_index(store) == []
    with pytest.raises(InputError, match="no ir vocabulary has been published"):
        pub.show(store, "ir", "latest")
    done = pub.publish(store, data, manifest)
    assert done["created"]
    prefix = f"vocab/ir/{done['version']}"
    assert _vocab_keys(store) == sorted(
        ["vocab/index.json", "vocab/ir/latest.json", f"{prefix}/manifest.json", f"{prefix}/vocab.json"]
    )
    assert json.loads(store.get("vocab/ir/latest.json"))["version"] == done["version"]
