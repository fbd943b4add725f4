"""Rotten bytes are never served as good (issue 35, item 2): a version's file truncated on disk (or replaced in a
bucket) is refused with one line, a 500 no cache keeps, while its `.sha256` still says what the bytes must be; its
version page says it is corrupt; its digest is computed once per file state; restored, it is served again. And the
operators' scrub, `mlgo-farm store verify` (the real process), lists every such object, one line each, exit 4, and
exits 0 on a clean store. The dashboard is the real app with the store tests/master/test_dashboard.py builds."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from farm.config import load_settings
from farm.objectstore import FileStore
from master.dashboard.app import create_app
from tests.master.test_dashboard import DATASET_FILES, DS, V1, V2, fill_history, populate

VOCAB_KEY = f"vocab/ir/{V2}/vocab.json"
MODEL_KEY = "policies/inline/P1/model.onnx"
DATASET_KEY = f"datasets/ir/{DS}/train2id.txt"


@pytest.fixture
def farm(tmp_path: Path):
    """(the app, the vocabularies' bytes, the store's directory)."""
    data = populate(tmp_path / "store")
    fill_history(tmp_path / "history.sqlite")
    app = create_app(load_settings(), store=FileStore(tmp_path / "store"), history=tmp_path / "history.sqlite")
    return app, data, tmp_path / "store"


def _refused(r, key: str) -> None:
    """A one-line 500 that names the object, with nothing a cache keeps and no ETag of the rotten bytes."""
    text = r.get_data(as_text=True)
    assert r.status_code == 500, (r.status_code, text[:300])
    assert r.headers["Cache-Control"] == "no-store" and "ETag" not in r.headers, dict(r.headers)
    if r.request.method == "GET":
        assert text.startswith("500 Internal Server Error: corrupt object in the store: "), text[:300]
        assert text.count("\n") == 1 and key in text and "mlgo-farm store verify" in text, text


def _truncate(root: Path, key: str) -> bytes:
    path = root / key
    good = path.read_bytes()
    os.truncate(path, len(good) // 2)
    return good


def test_a_truncated_vocabulary_is_refused_uncacheable_and_its_page_says_corrupt(farm) -> None:
    app, data, root = farm
    c, digests = app.test_client(), app.config["FARM"].digests
    good = c.get(f"/store/{VOCAB_KEY}")
    assert good.status_code == 200 and "immutable" in good.headers["Cache-Control"]
    etag = good.headers["ETag"]
    assert etag == f'"{hashlib.sha256(data[V2]).hexdigest()}"'

    _truncate(root, VOCAB_KEY)
    for url in (f"/store/{VOCAB_KEY}", "/store/vocab/ir/latest/vocab.json"):  # `latest` serves V2 too
        _refused(c.get(url), VOCAB_KEY)
        _refused(c.get(url, headers={"If-None-Match": etag}), VOCAB_KEY)  # never a 304 on the good digest
        _refused(c.head(url), VOCAB_KEY)
    computed = digests.computed
    _refused(c.get(f"/store/{VOCAB_KEY}"), VOCAB_KEY)
    assert digests.computed == computed  # the rotten state was hashed once, not once per request
    # the checksum still says what the bytes must be (sha256sum -c fails on what a cache might hold)
    assert c.get(f"/store/{VOCAB_KEY}.sha256").data == f"{hashlib.sha256(data[V2]).hexdigest()}  vocab.json\n".encode()

    page = c.get(f"/vocab/ir/{V2}/").get_data(as_text=True)
    assert f'id="integrity" class="regression">corrupt: {VOCAB_KEY}: its bytes\' sha256 is' in page.replace(
        "&#39;", "'")
    assert 'id="integrity" class="ok">match this sha256' in c.get(f"/vocab/ir/{V1}/").get_data(as_text=True)
    _refused(c.get(f"/vocab/ir/diff?a={V1}&b={V2}"), VOCAB_KEY)  # no diff of rotten vectors either

    (root / VOCAB_KEY).write_bytes(data[V2])  # an operator restores it: served again, with its digest
    again = c.get(f"/store/{VOCAB_KEY}")
    assert again.status_code == 200 and again.data == data[V2] and again.headers["ETag"] == etag
    assert c.get(f"/vocab/ir/diff?a={V1}&b={V2}").status_code == 200


def test_a_truncated_model_and_dataset_file_are_refused_and_their_pages_say_so(farm) -> None:
    app, _, root = farm
    c = app.test_client()
    for key in (MODEL_KEY, DATASET_KEY):
        assert c.get(f"/store/{key}").status_code == 200
        _truncate(root, key)
        _refused(c.get(f"/store/{key}"), key)
    _refused(c.get("/store/policies/inline/latest/model.onnx"), MODEL_KEY)
    page = c.get("/policies/inline/P1/").get_data(as_text=True)
    assert 'id="integrity" class="regression">corrupt: ' in page and MODEL_KEY in page
    files = c.get(f"/datasets/ir/{DS}/").get_data(as_text=True).split('<table id="files">')[1].split("</table>")[0]
    assert f"corrupt: {DATASET_KEY}: its bytes" in files.replace("&#39;", "'")
    assert files.count('class="ok">match<') == len(DATASET_FILES) - 1  # the other two files are intact


def test_a_version_file_whose_manifest_records_no_digest_is_not_served(farm) -> None:
    app, _, root = farm
    (root / "policies/inline/P1/manifest.json").write_text(json.dumps({"advisor": "inline"}))
    _refused(app.test_client().get(f"/store/{MODEL_KEY}"), "policies/inline/P1/manifest.json")


def _verify(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MLGO_FARM_STORE_URL": root.as_uri()}
    return subprocess.run([sys.executable, "-m", "farm.cli", "store", "verify"], capture_output=True, text=True,
                          env=env, timeout=120)


def test_store_verify_lists_every_bad_object_and_exits_4(farm) -> None:
    _, _, root = farm
    clean = _verify(root)
    assert (clean.returncode, clean.stderr) == (0, ""), clean.stderr
    assert clean.stdout == f"{root.as_uri()}: 10 objects of 4 published versions match their manifests\n"

    for key in (VOCAB_KEY, MODEL_KEY, DATASET_KEY):
        _truncate(root, key)
    (root / "vocab/ir" / V1 / "manifest.json").write_text('{"sha256": ' + "1" * 5001 + "}")
    bad = _verify(root)
    assert bad.returncode == 4, bad.stderr
    lines = bad.stdout.splitlines()
    assert [line.split(":")[0].split(" in ")[0] for line in lines] == [
        f"vocab/ir/{V1}/manifest.json", VOCAB_KEY, MODEL_KEY, DATASET_KEY], lines
    assert "Exceeds the limit (4300 digits)" in lines[0] and "is not the" in lines[1]
    assert bad.stderr == (f"mlgo-farm: error: 4 bad object(s) in {root.as_uri()}, listed above (9 objects of 4 "
                          "published versions checked)\n")


def test_store_verify_finds_what_names_a_version_without_a_manifest(farm) -> None:
    from farm.artifacts import scrub

    _, _, root = farm
    (root / "vocab/ir" / V1 / "manifest.json").unlink()  # listed in the index, no longer published
    (root / "policies/inline/latest.json").write_text(json.dumps({"advisor": "inline", "version": "P9"}))
    found = scrub.verify(FileStore(root))
    assert found.bad == (f"vocab/index.json: lists ir vocabulary {V1}, which has no manifest",
                         "policies/inline/latest.json: names policy P9, which has no manifest")


def test_an_s3_store_is_checked_the_same_way(farm, s3_endpoint) -> None:
    from farm.artifacts import scrub
    from farm.objectstore import S3Store

    _, data, root = farm
    s3 = S3Store("farm", "pre", s3_endpoint.url, access_key_id="test", secret_access_key="test")
    s3.ensure_bucket()
    local = FileStore(root)
    for key in local.list():
        s3.put(key, local.get(key))
    c = create_app(load_settings(), store=s3, history=root.parent / "none.sqlite").test_client()
    assert c.get(f"/store/{VOCAB_KEY}").data == data[V2] and scrub.verify(s3).bad == ()
    s3.put(VOCAB_KEY, data[V2][:-5])  # a new object (a new ETag): its digest is computed again
    _refused(c.get(f"/store/{VOCAB_KEY}"), VOCAB_KEY)
    assert [line.split(":")[0] for line in scrub.verify(s3).bad] == [VOCAB_KEY]


def _rot_in_place(path: Path, offset: int) -> None:
    """One bit flipped where it lies: the same inode, size and modification time (what disk rot changes none of)."""
    before = path.stat()
    with path.open("r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ 0x01]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)


def test_rot_that_keeps_inode_size_and_mtime_is_never_served_whole_as_good(farm) -> None:
    """Issue 47, item 1: the digest remembered for the file's identity says nothing of bytes rotten in place, so the
    download is hashed on its way out: the rotten body is never given whole (the test client sees the error the
    server cuts the connection on), and from then on the file is refused like any corrupt one."""
    from farm.objectstore import CorruptObject

    app, data, root = farm
    c = app.test_client()
    first = c.get(f"/store/{VOCAB_KEY}")
    assert first.status_code == 200 and first.data == data[V2] and "immutable" in first.headers["Cache-Control"]
    _rot_in_place(root / VOCAB_KEY, len(data[V2]) // 2)

    with pytest.raises(CorruptObject):
        c.get(f"/store/{VOCAB_KEY}", buffered=True)
    _refused(c.get(f"/store/{VOCAB_KEY}"), VOCAB_KEY)  # the remembered digest was dropped: hashed, then refused
    page = c.get(f"/vocab/ir/{V2}/").get_data(as_text=True)
    assert f'id="integrity" class="regression">corrupt: {VOCAB_KEY}: its bytes' in page.replace("&#39;", "'")


def test_rot_in_place_breaks_the_transfer_over_http_and_diffs_refuse_it(farm, monkeypatch) -> None:
    """The same over a real HTTP server: a body of several chunks has its status and headers sent, but stops short
    of its Content-Length (http.client's IncompleteRead), so no client keeps it; one of a single chunk is found out
    before anything is sent (a 500). A diff page reading rotten bytes after their digest was remembered refuses
    them too."""
    import http.client
    import urllib.parse

    from tests.master.served import dashboard

    app, _, root = farm
    big = "regression/regression-inliner-size/r1/big.bin"  # no manifest: checked against the ETag it is served with
    (root / big).parent.mkdir(parents=True, exist_ok=True)
    (root / big).write_bytes(os.urandom(5 * 64 * 1024 + 17))
    with dashboard(monkeypatch, FileStore(root), root.parent / "history.sqlite") as base:
        parts = urllib.parse.urlsplit(base)

        def get(key: str) -> tuple[int, bytes | Exception]:
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
            try:
                conn.request("GET", f"{parts.path}store/{key}")
                resp = conn.getresponse()
                try:
                    return resp.status, resp.read()
                except http.client.IncompleteRead as e:
                    return resp.status, e
            finally:
                conn.close()

        for key in (big, MODEL_KEY):
            assert get(key) == (200, (root / key).read_bytes())
            _rot_in_place(root / key, (root / key).stat().st_size - 1)  # the very last byte
        status, body = get(big)
        assert status == 200 and isinstance(body, http.client.IncompleteRead), (status, body)
        assert len(body.partial) < (root / big).stat().st_size
        status, body = get(MODEL_KEY)
        assert status == 500, (status, body)  # werkzeug sends nothing before the first chunk
        assert get(MODEL_KEY)[0] == 500  # the remembered digest was dropped: hashed before answering, refused

    c = app.test_client()
    for version in (V1, V2):
        assert c.get(f"/store/vocab/ir/{version}/vocab.json").status_code == 200  # both digests remembered
    _rot_in_place(root / VOCAB_KEY, 0)
    _refused(c.get(f"/vocab/ir/diff?a={V1}&b={V2}"), VOCAB_KEY)
