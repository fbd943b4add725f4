"""The versioned store (farm/artifacts/versions.py) on a real S3 endpoint (moto over HTTP, behind a proxy that
fails on cue) and on the directory store (a real full tmpfs): the order of the writes, `latest` only moving
forward, every failure leaving `latest` naming a listed, complete version, promotion taken back as a whole.

Versions are vocabularies published as the vocabulary side does (vocabgen/publish.py: checked, signed,
gated), the kind with the most rules in front of the store; tests/vocabgen/conftest.py makes them."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from farm.artifacts import VOCABULARIES
from farm.artifacts.kinds import vocab_version_name as version_name
from farm.errors import InputError, StoreError
from farm.locks import publish_lock
from farm.objectstore import FileStore, ObjectStore
from farm.signing import farm_key
from tests import tmpfs
from tests.vocabgen.conftest import assert_consistent, handmade_manifest, handmade_vocab, s3_store
from vocabgen import publish as pub

DAY = 86400
T0 = 1_790_000_000.0  # a fixed publication time, so version names are known in advance


def _vocab_keys(store: ObjectStore) -> list[str]:
    return store.list("vocab/")


def test_corrupt_download_writes_nothing(store, validated, tmp_path: Path) -> None:
    data, manifest = validated
    version = pub.publish(store, data, manifest)["version"]
    store.put(f"vocab/ir/{version}/vocab.json", data.replace(b"0", b"1", 1))
    out = tmp_path / "v.json"
    with pytest.raises(StoreError, match="checksum mismatch"):
        VOCABULARIES.download(store, "ir", "latest", out)
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
    assert len(VOCABULARIES.read_index(store)) == 1


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
    assert VOCABULARIES.read_index(store) == []
    with pytest.raises(InputError, match="no ir vocabulary has been published"):
        VOCABULARIES.show(store, "ir", "latest")
    done = pub.publish(store, data, manifest)
    assert done["created"]
    prefix = f"vocab/ir/{done['version']}"
    assert _vocab_keys(store) == sorted(
        ["vocab/index.json", "vocab/ir/latest.json", f"{prefix}/manifest.json", f"{prefix}/vocab.json"]
    )
    assert json.loads(store.get("vocab/ir/latest.json"))["version"] == done["version"]


def test_latest_only_moves_forward_in_time(store) -> None:
    """Republishing older content, or a new version stamped earlier (a clock behind), leaves `latest` alone."""
    key = farm_key()
    old, new, late = (handmade_vocab(salt=n) for n in range(3))
    first = pub.publish(store, old, handmade_manifest(old, key), when=T0)
    second = pub.publish(store, new, handmade_manifest(new, key), when=T0 + DAY)
    assert VOCABULARIES.resolve(store, "ir", "latest") == second["version"]
    pointer = store.get("vocab/ir/latest.json")

    again = pub.publish(store, old, handmade_manifest(old, key))
    assert store.get("vocab/ir/latest.json") == pointer, "latest did not move back"
    assert again == {**first, "created": False, "latest": second["version"], "state": "superseded"}
    assert second["latest"] == second["version"] and second["state"] == "latest" and first["state"] == "latest"
    assert pub.summary(again) == f"ir {first['version']} (already published; latest stays at {second['version']}, " \
                                 f"published later)"

    skewed = pub.publish(store, late, handmade_manifest(late, key), when=T0 + DAY / 2)
    assert skewed["created"] and skewed["latest"] == second["version"] and skewed["state"] == "superseded"
    assert skewed["gate"]["passed"], "it passed the gate, only time kept it from latest"
    assert store.get("vocab/ir/latest.json") == pointer
    assert pub.summary(skewed).startswith(f"ir {skewed['version']} (published; latest stays at ")
    assert assert_consistent(store) == [first["version"], skewed["version"], second["version"]], "index by time"

    same = pub.publish(store, new, handmade_manifest(new, key))
    assert pub.summary(same) == f"ir {second['version']} (already published)"
    assert store.get("vocab/ir/latest.json") == pointer


@pytest.mark.parametrize("failing", ["vocab.json", "manifest.json", "index.json", "latest.json"])
def test_endpoint_dies_at_each_put_latest_and_index_stay_consistent(s3_proxy, failing: str) -> None:
    """The S3 endpoint goes down at one precise upload: `latest` keeps naming a listed, complete version.

    Publishing again once the endpoint is back finishes the job (and moves `latest` forward).
    """
    _, proxy = s3_proxy
    store = s3_store(proxy.url)
    key = farm_key()
    old, new = handmade_vocab(salt=1), handmade_vocab(salt=2)
    first = pub.publish(store, old, handmade_manifest(old, key), when=T0)
    manifest = handmade_manifest(new, key)
    version = version_name(manifest, T0 + DAY)
    target = {"vocab.json": f"vocab/ir/{version}/vocab.json", "manifest.json": f"vocab/ir/{version}/manifest.json",
              "index.json": "vocab/index.json", "latest.json": "vocab/ir/latest.json"}[failing]
    proxy.trip_on(f"PUT /mlgo-vocab/farm/{target} ".encode())
    with pytest.raises(StoreError) as e:
        pub.publish(store, new, manifest, when=T0 + DAY)
    assert proxy.tripped.is_set() and "\n" not in str(e.value)
    proxy.start()
    listed = assert_consistent(store)
    assert VOCABULARIES.resolve(store, "ir", "latest") == first["version"]
    assert listed in ([first["version"]], [first["version"], version])
    done = pub.publish(store, new, manifest, when=T0 + DAY)
    assert done["version"] == done["latest"] == version
    assert assert_consistent(store) == [first["version"], version]


def test_a_failed_latest_put_is_taken_back_when_the_store_answers_again(s3_proxy) -> None:
    """Only the `latest` upload is lost (the endpoint is back at once): the index and the files are taken back."""
    _, proxy = s3_proxy
    store = s3_store(proxy.url)
    key = farm_key()
    old, new = handmade_vocab(salt=1), handmade_vocab(salt=2)
    pub.publish(store, old, handmade_manifest(old, key), when=T0)
    before = {k: store.get(k) for k in store.list("vocab/")}

    def back_once_the_client_gave_up(attempts: int, caught_exception=None, **_):
        if caught_exception is not None and attempts >= 2:  # s3_store's client tries twice
            proxy.start()

    store.client.meta.events.register("needs-retry.s3.PutObject", back_once_the_client_gave_up)
    proxy.trip_on(b"PUT /mlgo-vocab/farm/vocab/ir/latest.json ")
    with pytest.raises(StoreError):
        pub.publish(store, new, handmade_manifest(new, key), when=T0 + DAY)
    assert proxy.tripped.is_set()
    assert {k: store.get(k) for k in store.list("vocab/")} == before


def test_disk_full_at_each_write_of_a_publish(validated, validated_other, tmp_path: Path) -> None:
    """A real 1 MiB tmpfs, filled to leave 0, 1, 2, ... pages free, until the publish fits.

    Every failure is one line naming the object's path with "no space left on device", and leaves
    the store exactly as it was (no half-published version, not even its empty directory, no
    temporary, latest and index unchanged).
    """
    with tmpfs.mounted(tmp_path / "fs", "1m") as fs:
        store = FileStore(fs / "store")
        old, old_manifest = validated
        new, new_manifest = validated_other
        first = pub.publish(store, old, old_manifest, when=T0)
        before = tmpfs.snapshot(store.root)
        failed_at = []
        for leave in range(tmpfs.free_pages(fs)):
            tmpfs.fill(fs, leave)
            try:
                done = pub.publish(store, new, new_manifest, when=T0 + DAY)
            except StoreError as e:
                message = str(e)
                assert "\n" not in message and message.endswith(": no space left on device"), message
                failed_at.append(re.fullmatch(rf"cannot write {re.escape(str(store.root))}/(\S+): .*", message)[1])
                assert tmpfs.snapshot(store.root) == before, f"with {leave} pages free"
                continue
            finally:
                tmpfs.unfill(fs)
            break
        else:
            pytest.fail("the publish never fitted")
        assert done["created"] and done["latest"] == done["version"]
        assert assert_consistent(store) == [first["version"], done["version"]]
    new_prefix = f"vocab/ir/{done['version']}/"
    assert {f"{new_prefix}vocab.json", f"{new_prefix}manifest.json", "vocab/index.json"} <= set(failed_at), failed_at


def _readable_by_nobody(path: Path) -> bytes:
    return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat", str(path)],
                          capture_output=True, check=True, timeout=30).stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to read as another user")
def test_published_and_downloaded_files_are_readable_by_another_user(validated) -> None:
    """A web server running as another user (here: nobody) can serve the store and read a download."""
    data, manifest = validated
    public = Path(tempfile.mkdtemp(prefix="mlgo-farm-public-"))  # /tmp: other users may traverse it
    try:
        public.chmod(0o755)
        store = FileStore(public / "store")
        version = pub.publish(store, data, manifest)["version"]
        VOCABULARIES.download(store, "ir", "latest", public / "downloads" / "vocab.json")
        for p in [*store.root.rglob("*"), *(public / "downloads").rglob("*")]:
            assert stat.S_IMODE(p.stat().st_mode) == (0o755 if p.is_dir() else 0o644), p
        assert _readable_by_nobody(store.root / "vocab" / "ir" / version / "vocab.json") == data
        assert json.loads(_readable_by_nobody(store.root / "vocab" / "index.json"))["versions"][0]["version"] == version
        assert _readable_by_nobody(public / "downloads" / "vocab.json") == data
    finally:
        subprocess.run(["rm", "-rf", str(public)], check=True)


def test_a_candidate_and_a_failed_promotion_leave_latest_and_the_index_as_they_were(s3_proxy) -> None:
    """On S3: a version that fails the gate never touches `latest`; a promotion whose `latest` put is lost
    is taken back (the index restored), and doing it again completes it."""
    from vocabgen.gate import gate_from_settings

    _, proxy = s3_proxy
    store = s3_store(proxy.url)
    key = farm_key()
    old, new = handmade_vocab(salt=1), handmade_vocab(salt=2)
    first = pub.publish(store, old, handmade_manifest(old, key), when=T0, gate=gate_from_settings())
    pointer = store.get("vocab/ir/latest.json")
    worse = pub.publish(store, new, handmade_manifest(new, key, mrr=0.1), when=T0 + DAY, gate=gate_from_settings())
    assert worse["state"] == "candidate" and worse["latest"] == first["version"]
    assert worse["gate"]["reasons"] == ["mrr: 0.100 vs latest 0.500 (worse than the tolerance 0.05)"]
    assert store.get("vocab/ir/latest.json") == pointer
    assert assert_consistent(store) == [first["version"], worse["version"]]
    before = {k: store.get(k) for k in store.list("vocab/")}

    def back_once_the_client_gave_up(attempts: int, caught_exception=None, **_):
        if caught_exception is not None and attempts >= 2:
            proxy.start()

    store.client.meta.events.register("needs-retry.s3.PutObject", back_once_the_client_gave_up)
    proxy.trip_on(b"PUT /mlgo-vocab/farm/vocab/ir/latest.json ")
    with pytest.raises(StoreError):
        VOCABULARIES.promote(store, "ir", worse["version"], "operator knows better")
    assert proxy.tripped.is_set()
    assert {k: store.get(k) for k in store.list("vocab/")} == before
    assert VOCABULARIES.promote(store, "ir", worse["version"], "operator knows better")["state"] == "latest"
    assert VOCABULARIES.resolve(store, "ir", "latest") == worse["version"]
    assert assert_consistent(store) == [first["version"], worse["version"]]
