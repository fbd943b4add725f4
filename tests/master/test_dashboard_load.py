"""The dashboard with hostile paths, a hostile Host header and anonymous load, through Flask's test client (the
same app the live master serves, tests/master/test_dashboard_live.py): every bad path a one-line 404, links from
the configuration, symbolic links kept inside the prefix the URL names, diffs and digests of published versions
computed once, downloads streamed in chunks and their files closed."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import pytest

from farm.config import load_settings
from farm.objectstore import FileStore
from master.dashboard import stream
from master.dashboard.app import create_app
from tests.master.test_dashboard import DS, V1, V2, fill_history, populate
from tests.master.test_dashboard_policies import MODELS, VA, VB, manifest

WEB_URL = "https://farm.example.org/ci/"


def _app(tmp_path: Path):
    """The dashboard tests' store, with the policy tests' two ONNX versions VA and VB beside it."""
    populate(tmp_path / "store")
    fill_history(tmp_path / "history.sqlite")
    store = FileStore(tmp_path / "store")
    for version in (VA, VB):
        store.put(f"policies/inline/{version}/model.onnx", MODELS[version])
        store.put(f"policies/inline/{version}/manifest.json",
                  json.dumps(manifest(version, 0.85, 30, "2026-03-01T00:00:00Z")).encode())
    return create_app(load_settings(), store=FileStore(tmp_path / "store"), history=tmp_path / "history.sqlite")


@pytest.fixture
def app(tmp_path: Path):
    return _app(tmp_path)


def _one_line_404(r) -> None:
    text = r.get_data(as_text=True)
    assert r.status_code == 404, (r.status_code, text[:300])
    assert text.startswith("404 Not Found: ") and text.count("\n") == 1 and r.mimetype == "text/plain", text[:300]
    assert len(text) < 300  # never the whole hostile path echoed back


LONG = "a" * 300  # over a file system's 255-byte name
DEEP = "/".join(["b" * 200] * 25)  # over PATH_MAX (4 KB), every name short enough


@pytest.mark.parametrize("path", [
    f"/store/vocab/ir/{LONG}/vocab.json", f"/store/vocab/ir/{V1}/{LONG}", f"/store/regression/{LONG}",
    f"/store/regression/{DEEP}/index.html", f"/store/vocab/{DEEP}", f"/store/datasets/ir/{LONG}/train2id.txt",
    f"/store/vocab/ir/latest/{LONG}", f"/store/vocab/ir/{LONG}/vocab.json.sha256",
    f"/store/policies/inline/{LONG}/model.onnx", f"/vocab/ir/{LONG}/", f"/vocab/ir/diff?a={LONG}&b={V2}",
    f"/vocab/ir/diff?a={V1}&b={DEEP}", f"/policies/inline/{LONG}/", f"/policies/inline/diff?a={LONG}&b={VB}",
    f"/datasets/ir/{LONG}/", f"/regression/{LONG}/", f"/{DEEP}",
    "/store/vocab/ir/loop.json", "/store/vocab/ir/loopdir/vocab.json", "/store/regression/r/loop/index.html",
])
def test_long_names_and_link_loops_are_a_one_line_404(app, tmp_path: Path, path: str):
    ir = tmp_path / "store" / "vocab" / "ir"
    (ir / "loop.json").symlink_to("loop.json")
    (ir / "loopdir").symlink_to("loopdir")
    (tmp_path / "store" / "regression" / "r").mkdir()
    (tmp_path / "store" / "regression" / "r" / "loop").symlink_to("../r/loop")
    _one_line_404(app.test_client().get(path))


def test_links_never_come_from_the_host_header(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WEB_URL", WEB_URL)
    c = _app(tmp_path).test_client()
    evil = {"Host": "evil.example", "X-Forwarded-Host": "evil.example"}
    index = c.get("/index.json", headers=evil)
    assert b"evil.example" not in index.data
    v2 = index.get_json()["vocab"]["ir"]["versions"][1]
    base = f"{WEB_URL}plugins/wsgi_dashboards/farm/store/vocab/ir/{V2}"
    assert (v2["url"], v2["sha256_url"], v2["manifest_url"]) == (
        f"{base}/vocab.json", f"{base}/vocab.json.sha256", f"{base}/manifest.json")
    for page in (f"/vocab/ir/{V2}/", "/policies/inline/P1/", "/vocab/", f"/datasets/ir/{DS}/", "/", "/index.html"):
        text = c.get(page, headers=evil).get_data(as_text=True)
        assert "evil.example" not in text, page
    assert f"curl -fsSLO {base}/vocab.json\n" in c.get(f"/vocab/ir/{V2}/", headers=evil).get_data(as_text=True)


@pytest.mark.parametrize("link, target", [
    ("regression/b/r9/index.html", "vocab-staging/ir/{stage}/chain/run/vocab.json"),  # staging, through a report
    ("regression/b/r9/vocab.json", "vocab/ir/{v1}/vocab.json"),  # served, but under another prefix
    ("regression/b/r9", "vocab-staging/ir/{stage}/chain/run"),  # a linked directory
    ("vocab/ir/{v1}/extra.json", "regression/regression-inliner-size/r2/index.html"),
    (f"datasets/ir/{DS}/train2id.txt", "datasets/shards/run7/1-of-2/train2id.txt"),  # a shard, as a dataset file
    (f"datasets/ir/{DS}/entity2id.txt", "datasets/ir/ir-00000000000000bb/train2id.txt"),  # another dataset
    ("policies/inline/P1/notes.txt", "vocab/index.json"),
    ("vocab/ir/.hidden-target-link.json", "vocab/index.json"),
])
def test_a_link_never_serves_a_file_outside_the_prefix_its_url_names(app, tmp_path: Path, link: str, target: str):
    root = tmp_path / "store"
    link, target = (x.format(stage="0" * 64, v1=V1) for x in (link, target))
    path = root / link
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    path.symlink_to(root / target)
    assert (root / link).exists()
    url = f"/store/{link}/vocab.json" if (root / target).is_dir() else f"/store/{link}"
    _one_line_404(app.test_client().get(url))


def test_a_link_inside_its_prefix_is_still_served(app, tmp_path: Path):
    report = tmp_path / "store" / "regression" / "regression-inliner-size"
    (report / "newest").symlink_to(report / "r2")
    r = app.test_client().get("/store/regression/regression-inliner-size/newest/index.html")
    assert r.status_code == 200 and r.data.startswith(b"<!DOCTYPE html>")


def _concurrently(n: int, fn) -> list:
    """`fn()` from `n` threads released together (a barrier, not a sleep)."""
    barrier, out, errors = threading.Barrier(n), [], []

    def run() -> None:
        barrier.wait()
        try:
            out.append(fn())
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return out


def test_a_vocabulary_diff_is_computed_once_however_many_ask_at_once(app):
    farm = app.config["FARM"]
    c = app.test_client()
    first = c.get(f"/vocab/ir/diff?a={V1}&b={V2}").get_data(as_text=True)
    assert farm.diffs.computed == 1
    pages = _concurrently(8, lambda: app.test_client().get(f"/vocab/ir/diff?a={V1}&b={V2}").get_data(as_text=True))
    assert pages == [first] * 8 and farm.diffs.computed == 1
    assert "Add" in first.split('<table id="top">')[1]  # the cached diff is the real one
    c.get(f"/vocab/ir/diff?a={V2}&b={V1}")  # another pair is another diff
    assert farm.diffs.computed == 2


def test_concurrent_first_requests_of_one_diff_share_one_computation(tmp_path: Path):
    app = _app(tmp_path)
    pages = _concurrently(6, lambda: app.test_client().get(f"/vocab/ir/diff?a={V1}&b={V2}").status_code)
    assert pages == [200] * 6 and app.config["FARM"].diffs.computed == 1


def test_a_policy_diff_is_computed_once(app):
    c, farm = app.test_client(), app.config["FARM"]
    pages = {c.get(f"/policies/inline/diff?a={VA}&b={VB}").get_data(as_text=True) for _ in range(3)}
    assert len(pages) == 1 and "w2" in pages.pop() and farm.diffs.computed == 1


def _open_fds() -> set[str]:
    return {os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
            if os.path.exists(f"/proc/self/fd/{fd}")}


def test_downloads_are_streamed_in_chunks_their_digest_computed_once_and_their_files_closed(app, tmp_path: Path):
    farm = app.config["FARM"]
    store = FileStore(tmp_path / "store")
    big = os.urandom(3 * stream.CHUNK + 17)
    store.put("regression/b/r1/big.bin", big)
    c = app.test_client()
    before = _open_fds()
    r = c.get("/store/regression/b/r1/big.bin", buffered=False)
    assert r.headers["Content-Length"] == str(len(big))
    chunks = list(r.response)
    r.close()
    assert b"".join(chunks) == big and len(chunks) == 4 and max(map(len, chunks)) == stream.CHUNK
    etag = r.headers["ETag"]
    assert c.get("/store/regression/b/r1/big.bin", headers={"If-None-Match": etag}).status_code == 304
    assert c.head("/store/regression/b/r1/big.bin").headers["Content-Length"] == str(len(big))
    for _ in range(3):
        assert c.get("/store/regression/b/r1/big.bin").data == big
    assert farm.digests.computed == 1  # one sha256 for five requests of the same bytes
    assert not {p for p in _open_fds() - before if "big.bin" in p}  # GET, 304 and HEAD closed it

    store.put("regression/b/r1/big.bin", big[::-1])  # a new object under the same key: a new digest
    again = c.get("/store/regression/b/r1/big.bin")
    assert again.data == big[::-1] and again.headers["ETag"] != etag and farm.digests.computed == 2


def test_a_version_artifact_streams_with_its_sha256_as_etag(app):
    c = app.test_client()
    r = c.get(f"/store/policies/inline/{VB}/model.onnx", buffered=False)
    assert r.headers["ETag"] == f'"{hashlib.sha256(MODELS[VB]).hexdigest()}"'
    assert b"".join(r.response) == MODELS[VB]
    r.close()


def test_an_s3_store_is_streamed_too_and_long_keys_never_reach_it(tmp_path: Path, s3_endpoint):
    """The same pages over moto's S3 server: botocore's body streamed in chunks, its digest read once (the body
    cannot seek back: a second GET of the same ETag), and keys S3 would refuse answered 404 before asking it."""
    from farm.objectstore import S3Store

    data = populate(tmp_path / "store")
    s3 = S3Store("farm", "pre", s3_endpoint.url, access_key_id="test", secret_access_key="test")
    s3.ensure_bucket()
    local = FileStore(tmp_path / "store")
    for key in local.list():
        s3.put(key, local.get(key))
    big = os.urandom(2 * stream.CHUNK + 5)
    s3.put("regression/b/r1/big.bin", big)
    app = create_app(load_settings(), store=s3, history=tmp_path / "none.sqlite")
    c, farm = app.test_client(), app.config["FARM"]
    assert c.get("/store/vocab/ir/latest/vocab.json").data == data[V2]
    r = c.get("/store/regression/b/r1/big.bin", buffered=False)
    chunks = list(r.response)
    r.close()
    assert b"".join(chunks) == big and len(chunks) == 3
    assert r.headers["ETag"] == f'"{hashlib.sha256(big).hexdigest()}"'
    computed = farm.digests.computed
    assert c.get("/store/regression/b/r1/big.bin").data == big and farm.digests.computed == computed
    for path in ("/store/regression/b/r1/nothing.bin", f"/store/vocab-staging/ir/{'0' * 64}/chain/run/vocab.json",
                 f"/store/regression/{LONG}", f"/store/regression/{DEEP}"):
        _one_line_404(c.get(path))
