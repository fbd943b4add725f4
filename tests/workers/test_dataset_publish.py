"""Publishing a dataset to the embedded store and to a real S3 endpoint on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.errors import FarmError, InputError, StoreError
from farm.objectstore import FileStore, S3Store
from farm.toolchain import Toolchain
from tests.servers import S3Endpoint
from workers import dataset, triplets


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory: pytest.TempPathFactory, csrc_corpus: Path, toolchain: Toolchain) -> Path:
    return triplets.build_dataset(csrc_corpus, tmp_path_factory.mktemp("pub") / "ir", "ir", toolchain,
                                  opt_levels=["O0"])


def _s3(ep: S3Endpoint) -> S3Store:
    st = S3Store("farm", "pre", ep.url, access_key_id="test", secret_access_key="test")
    st.ensure_bucket()
    return st


def test_publish_to_embedded_store(small_dataset: Path, tmp_path: Path) -> None:
    st = FileStore(tmp_path / "store")
    dataset_id = dataset.publish(small_dataset, st)
    m = dataset.read_manifest(small_dataset)
    assert dataset_id == m["id"]
    assert st.list("datasets/ir/") == sorted(
        [f"datasets/ir/{dataset_id}/{n}" for n in (*dataset.FILES, dataset.MANIFEST)] + ["datasets/ir/latest.json"]
    )
    latest = json.loads(st.get("datasets/ir/latest.json"))
    assert latest["id"] == dataset_id and latest["manifest"] == m
    assert st.get(f"datasets/ir/{dataset_id}/train2id.txt") == (small_dataset / "train2id.txt").read_bytes()


def test_publish_to_s3_endpoint(small_dataset: Path, s3_endpoint: S3Endpoint) -> None:
    st = _s3(s3_endpoint)
    dataset_id = dataset.publish(small_dataset, st)
    assert json.loads(st.get("datasets/ir/latest.json"))["id"] == dataset_id
    raw = st.client.get_object(Bucket="farm", Key=f"pre/datasets/ir/{dataset_id}/entity2id.txt")["Body"].read()
    assert raw == (small_dataset / "entity2id.txt").read_bytes()


def test_dead_endpoint_fails_in_one_line_and_moves_nothing(small_dataset: Path, s3_endpoint: S3Endpoint) -> None:
    st = _s3(s3_endpoint)
    s3_endpoint.stop()
    with pytest.raises(StoreError, match=r"^(head|put) datasets/ir/.* on s3://farm/pre failed: ") as e:
        dataset.publish(small_dataset, st)
    assert "\n" not in str(e.value)


def test_tampered_dataset_is_not_published(small_dataset: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    for n in (*dataset.FILES, dataset.MANIFEST):
        (copy / n).write_bytes((small_dataset / n).read_bytes())
    with (copy / "train2id.txt").open("a") as f:
        f.write("1\t2\t0\n")
    st = FileStore(tmp_path / "store")
    with pytest.raises(InputError, match="does not match its manifest checksum"):
        dataset.publish(copy, st)
    assert not st.exists("datasets/ir/latest.json")


def test_not_a_dataset(tmp_path: Path) -> None:
    with pytest.raises(FarmError, match="is not a dataset"):
        dataset.publish(tmp_path, FileStore(tmp_path / "s"))


def test_disk_full_at_each_write_of_a_publish_leaves_the_store_as_it_was(small_dataset: Path,
                                                                         tmp_path: Path) -> None:
    """A real tmpfs filled to leave 0, 1, 2, ... pages free until the publish fits: each failure is one line,
    and leaves no dataset file without its manifest, no empty directory, and `latest` where it was."""
    from tests import tmpfs

    older = tmp_path / "older"
    older.mkdir()
    for n in (*dataset.FILES, dataset.MANIFEST):
        (older / n).write_bytes((small_dataset / n).read_bytes())
    m = json.loads((older / dataset.MANIFEST).read_text())
    m["id"] = "ir-00000000000000aa"  # another dataset already in force
    (older / dataset.MANIFEST).write_text(json.dumps(m))
    size = sum((small_dataset / n).stat().st_size for n in (*dataset.FILES, dataset.MANIFEST))
    with tmpfs.mounted(tmp_path / "fs", f"{max(1, 3 * size // 2**20 + 1)}m") as fs:
        st = FileStore(fs / "store")
        dataset.publish(older, st)
        before = tmpfs.snapshot(st.root)
        failures = []
        for leave in range(tmpfs.free_pages(fs)):
            tmpfs.fill(fs, leave)
            try:
                dataset_id = dataset.publish(small_dataset, st)
            except StoreError as e:
                assert "\n" not in str(e) and str(e).endswith(": no space left on device"), str(e)
                assert tmpfs.snapshot(st.root) == before, f"with {leave} pages free"
                failures.append(leave)
                continue
            finally:
                tmpfs.unfill(fs)
            break
        else:
            pytest.fail("the publish never fitted")
        assert len(failures) > 1, "the disk filled at more than one write"
        assert json.loads(st.get("datasets/ir/latest.json"))["id"] == dataset_id
        assert set(st.list(f"datasets/ir/{dataset_id}/")) == {
            f"datasets/ir/{dataset_id}/{n}" for n in (*dataset.FILES, dataset.MANIFEST)}
