"""The farm's WSGI dashboard with hand-made store contents and history, through Flask's test client:
stable download URLs and their checksums, read-only (405) and no traversal, the JSON index, the
vocabulary pages and diff, the regression runs and trends."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from farm.config import load_settings
from farm.objectstore import FileStore
from farm.vocabfile import dumps
from master.dashboard.app import create_app
from regression.history import History, Measurement
from regression.rules import Comparison

V1, V2 = "20260101-llvm22.1.8-ir-d4-aaaaaaaaaaaa", "20260201-llvm22.1.8-ir-d4-bbbbbbbbbbbb"
SECTIONS = {"Opcodes": ("Ret", "Br", "Add"), "Types": ("VoidTy", "IntegerTy"), "Arguments": ("Function", "Constant")}


def _vocab(flip: str | None = None, nudge: str | None = None) -> bytes:
    """A tiny IR vocabulary; `flip` reverses one entity's vector, `nudge` turns one by a small angle. Any five of the
    seven vectors span the four dimensions, so with one left out the others still fix a diff's alignment."""
    vocab, n = {}, 0
    for section, keys in SECTIONS.items():
        vocab[section] = {}
        for key in keys:
            n += 1
            vec = [float((n * 8 + i * 3) % 11 - 5) / 5 for i in range(4)]
            if key == flip:
                vec = [-x for x in vec]
            if key == nudge:
                vec = [vec[0] + 0.5, *vec[1:]]
            vocab[section][key] = vec
    return dumps(vocab)


def _manifest(version: str, data: bytes, filler: dict[str, list[str]], when: str, mrr: float) -> dict:
    return {
        "format": 1, "kind": "ir", "version": version, "sha256": hashlib.sha256(data).hexdigest(), "dimension": 4,
        "entities": 7, "published_at": when,
        "lineage": {"dataset_id": "ir-00000000000000aa", "llvm_version": "22.1.8", "llvm_commit": None},
        "metrics": {"holdout": {"mrr": mrr, "hits_at_10": 0.9}, "analogy": {"score": 0.5}},
        "validation": {"ok": True, "sha256": hashlib.sha256(data).hexdigest(), "llvm_version": "22.1.8",
                       "samples": [{"module": "a.c"}]},
        "coverage": {s: {"trained": len(k) - len(filler.get(s, [])), "total": len(k), "filler": filler.get(s, [])}
                     for s, k in SECTIONS.items()},
    }


DS = "ir-00000000000000aa"
DATASET_FILES = {"train2id.txt": b"1\n0\t1\t0\n", "entity2id.txt": b"2\nRet\t0\nVoidTy\t1\n",
                 "relation2id.txt": b"1\nType\t0\n"}


def dataset_manifest() -> dict:
    """The manifest `triplets` writes (workers/dataset.py), of a corpus of three modules one of which failed."""
    return {
        "format": 1, "id": DS, "kind": "ir", "modules_used": 2, "entities": 2, "relations": 1, "max_relation": 0,
        "corpus": {"source": "debian:zlib", "digest": "ab" * 32, "modules": 3,
                   "lineage": {"package": "zlib", "version": "1:1.2.13.dfsg-1"}},
        "llvm": {"llvm_version": "22.1.8", "llvm_commit": None, "clang": "Debian clang version 22.1.8"},
        "skipped": [{"module": "contrib/broken.c", "stage": "corpus", "reason": "clang exited with code 1"}],
        "partial": [], "opt_levels": ["O0", "O2"], "sample": None, "seed": 0, "march": [], "predicates": None,
        "triplets": {"raw": 1234, "unique": 1},
        "entities_mentioned": {"Opcodes": {"count": 1, "total": 3, "entities": ["Ret"]},
                               "Types": {"count": 1, "total": 2, "entities": ["VoidTy"]}},
        "files": {n: hashlib.sha256(t).hexdigest() for n, t in DATASET_FILES.items()},
    }


def populate(root: Path) -> dict[str, bytes]:
    """Two published IR versions (V2 latest; Add reversed, Br nudged, Constant filler in V2) trained from the
    published dataset DS, staging debris (vocabulary staging, a shard part, a dataset without its manifest), a
    policy and a regression report, laid out as the farm writes them. Returns the vocabularies' bytes."""
    store = FileStore(root)
    data = {V1: _vocab(), V2: _vocab(flip="Add", nudge="Br")}
    entries = []
    for version, when, filler, mrr, state in ((V1, "2026-01-01T00:00:00Z", {}, 0.4, "superseded"),
                                              (V2, "2026-02-01T00:00:00Z", {"Arguments": ["Constant"]}, 0.5,
                                               "latest")):
        m = _manifest(version, data[version], filler, when, mrr)
        store.put(f"vocab/ir/{version}/vocab.json", data[version])
        store.put(f"vocab/ir/{version}/manifest.json", json.dumps(m).encode())
        entries.append({"kind": "ir", "version": version, "sha256": m["sha256"], "dimension": 4, "state": state,
                        "published_at": when, "llvm_version": "22.1.8", "mrr": mrr, "hits_at_10": 0.9,
                        "coverage": m["coverage"], "dataset_id": "ir-00000000000000aa"})
    store.put("vocab/index.json", json.dumps({"format": 1, "versions": entries}).encode())
    store.put("vocab/ir/latest.json", json.dumps({"kind": "ir", "version": V2}).encode())
    store.put(f"vocab-staging/ir/{'0' * 64}/chain/run/vocab.json", b'{"staged": "secret-ish"}')
    for name, text in DATASET_FILES.items():
        store.put(f"datasets/ir/{DS}/{name}", text)
    store.put(f"datasets/ir/{DS}/manifest.json", json.dumps(dataset_manifest()).encode())
    store.put("datasets/ir/latest.json", json.dumps({"kind": "ir", "id": DS}).encode())
    store.put("datasets/ir/ir-00000000000000bb/train2id.txt", b"1\n0\t1\t0\n")  # upload cut short: no manifest
    store.put("datasets/shards/run7/1-of-2/train2id.txt", b"1\n0\t1\t0\n")  # a sharded run's part (staging)
    model = b"onnx-bytes"
    store.put("policies/inline/P1/model.onnx", model)
    store.put("policies/inline/P1/manifest.json", json.dumps({"sha256": hashlib.sha256(model).hexdigest()}).encode())
    store.put("policies/inline/latest.json", json.dumps({"advisor": "inline", "version": "P1"}).encode())
    store.put("policies/index.json", json.dumps({"versions": [{"advisor": "inline", "version": "P1",
                                                               "state": "latest"}]}).encode())
    store.put("regression/regression-inliner-size/r2/index.html", b"<!DOCTYPE html><h1>report r2</h1>")
    return data


def fill_history(path: Path) -> History:
    """Three complete runs of one builder: ok, ok, then a size regression of the zlib binary."""
    h = History(path)
    for run_id, policy, verdict in (("r0", 1000, "ok"), ("r1", 990, "ok"), ("r2", 1100, "regression")):
        run = h.start_run(run_id, "regression-inliner-size", llvm_version="22.1.8", llvm_commit=None,
                          policy_id="never", vocab_version=None,
                          config={"opt_flags": ["-O2"], "pgo": True, "thinlto": True} if run_id == "r2" else None)
        h.add_measurements(run, [Measurement("zlib", "binary", "text_size", "heuristic", 1000, (), "bytes"),
                                 Measurement("zlib", "binary", "text_size", "policy", policy, (), "bytes"),
                                 Measurement("adler32.c", "module", "text_size", "policy", 10, (), "bytes")])
        delta = (policy - 1000) / 10
        h.add_verdicts(run, [Comparison("zlib", "binary", "text_size", "heuristic", 1000, policy, delta, None,
                                        "regressed" if delta > 1 else "improved" if delta < 0 else "unchanged",
                                        True)])
        h.complete_run(run, verdict, None)
    return h


@pytest.fixture
def client(tmp_path: Path):
    data = populate(tmp_path / "store")
    fill_history(tmp_path / "history.sqlite")
    (tmp_path / "outside").write_text("not for the web\n")
    (tmp_path / "store" / "vocab" / "ir" / "escape.json").symlink_to(tmp_path / "outside")
    app = create_app(load_settings(), store=FileStore(tmp_path / "store"), history=tmp_path / "history.sqlite",
                     flower_url="http://127.0.0.1:5555/")
    return app.test_client(), data


def test_stable_download_urls_serve_the_published_bytes_and_a_checkable_sha256(client, tmp_path: Path):
    c, data = client
    latest = c.get("/store/vocab/ir/latest/vocab.json")
    assert latest.status_code == 200 and latest.data == data[V2]
    assert latest.headers["X-Farm-Version"] == V2 and latest.headers["Cache-Control"] == "no-cache"
    assert latest.headers["Content-Type"] == "application/json"
    fixed = c.get(f"/store/vocab/ir/{V1}/vocab.json")
    assert fixed.data == data[V1] and "immutable" in fixed.headers["Cache-Control"]
    etag = {"If-None-Match": fixed.headers["ETag"]}
    assert c.get(f"/store/vocab/ir/{V1}/vocab.json", headers=etag).status_code == 304
    head = c.head("/store/vocab/ir/latest/vocab.json")
    assert head.status_code == 200 and head.data == b"" and head.headers["Content-Length"] == str(len(data[V2]))

    # what a user without the farm runs: both files, then sha256sum -c
    work = tmp_path / "user"
    work.mkdir()
    (work / "vocab.json").write_bytes(c.get("/store/vocab/ir/latest/vocab.json").data)
    check = c.get("/store/vocab/ir/latest/vocab.json.sha256").data
    assert check == f"{hashlib.sha256(data[V2]).hexdigest()}  vocab.json\n".encode()
    (work / "vocab.json.sha256").write_bytes(check)
    ok = subprocess.run(["sha256sum", "-c", "vocab.json.sha256"], cwd=work, capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.strip() == "vocab.json: OK"
    (work / "vocab.json").write_bytes(data[V1])  # the wrong bytes fail the same check
    assert subprocess.run(["sha256sum", "-c", "vocab.json.sha256"], cwd=work, capture_output=True).returncode != 0

    manifest = c.get(f"/store/vocab/ir/{V2}/manifest.json").get_json()
    assert manifest["sha256"] == hashlib.sha256(data[V2]).hexdigest()
    assert c.get("/store/vocab/index.json").get_json()["versions"][1]["version"] == V2
    assert c.get("/store/policies/inline/latest/model.onnx").data == b"onnx-bytes"
    assert c.get("/store/policies/inline/P1/model.onnx.sha256").data.endswith(b"  model.onnx\n")


def test_the_json_index_lists_every_version_with_absolute_urls(client):
    c, data = client
    index = c.get("/index.json").get_json()
    ir = index["vocab"]["ir"]
    base = load_settings().buildbot.dashboard()  # the configured address, whatever the request's Host said
    assert ir["latest"] == V2 and ir["latest_url"] == f"{base}store/vocab/ir/latest/vocab.json"
    assert [v["version"] for v in ir["versions"]] == [V1, V2]
    v2 = ir["versions"][1]
    assert v2["sha256"] == hashlib.sha256(data[V2]).hexdigest() and v2["state"] == "latest"
    assert v2["validated_with_llvm"] == "22.1.8"
    assert index["policies"]["inline"]["versions"][0]["validated_with_llvm"] is None  # its manifest names none
    assert c.get("/" + v2["url"].removeprefix(base)).data == data[V2]
    assert c.get("/" + v2["sha256_url"].removeprefix(base)).status_code == 200
    assert index["policies"]["inline"]["latest"] == "P1"


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_anything_but_get_and_head_is_refused_everywhere(client, method: str):
    c, data = client
    for path in ("/store/vocab/ir/latest/vocab.json", f"/store/vocab/ir/{V1}/vocab.json", "/vocab/", "/index.json",
                 "/no/such/page", "/store/vocab/ir/new/vocab.json"):
        r = c.open(path, method=method, data=b"{}")
        assert r.status_code == 405, (method, path)
        assert r.headers["Allow"] == "GET, HEAD"
    assert c.get(f"/store/vocab/ir/{V1}/vocab.json").data == data[V1]  # nothing changed


@pytest.mark.parametrize("path", [
    "/store/../secrets/www-admin-password", "/store/vocab/../vocab-staging/ir/x/vocab.json",
    "/store/vocab/%2e%2e/datasets/ir/ir-00000000000000aa/train2id.txt", "/store//etc/passwd",
    f"/store/vocab-staging/ir/{'0' * 64}/chain/run/vocab.json", "/store/datasets/shards/run7/1-of-2/train2id.txt",
    "/store/datasets/ir/ir-00000000000000bb/train2id.txt", "/store/datasets/ir/ir-00000000000000aa/other.txt",
    "/store/datasets/ir/ir-00000000000000aa/../../shards/run7/1-of-2/train2id.txt", "/store/datasets/index.json",
    "/store/datasets/zz/latest.json", "/store/datasets/ir/ir-00000000000000aa",
    "/store/vocab/ir/escape.json", "/store/vocab/ir/.hidden", "/store/vocab/ir/latest/../../index.json",
    "/store/vocab/ir/..%2f..%2fetc/vocab.json", "/store/regression", "/store/secrets/redis-password",
    "/store/vocab/ir/no-such-version/vocab.json", "/store/vocab/ir/no-such-version/vocab.json.sha256",
])
def test_traversal_staging_and_unpublished_keys_are_not_served(client, path: str):
    c, _ = client
    r = c.get(path)
    assert r.status_code == 404, path
    assert b"not for the web" not in r.data and b"secret-ish" not in r.data


def test_dataset_pages_list_published_datasets_and_what_was_trained_from_them(client):
    c, _ = client
    index = c.get("/datasets/").get_data(as_text=True)
    row = index.split(f'<a href="/datasets/ir/{DS}/">')[1].split("</tr>")[0]
    assert 'class="latest">latest' in row and "2/3" in row and "1,234" in row and "2/5" in row
    assert "debian:zlib" in row and "package zlib, version 1:1.2.13.dfsg-1" in row and "22.1.8" in row
    assert "ir-00000000000000bb" not in index and "run7" not in index  # no manifest; staging
    assert "No MIR dataset published yet" in index
    page = c.get(f"/datasets/ir/{DS}/").get_data(as_text=True)
    skipped = page.split('<table id="skipped">')[1].split("</table>")[0]
    assert "contrib/broken.c" in skipped and "corpus" in skipped and "clang exited with code 1" in skipped
    vocabs = page.split('<table id="vocabs">')[1].split("</table>")[0]
    assert f'href="/vocab/ir/{V1}/"' in vocabs and f'href="/vocab/ir/{V2}/"' in vocabs
    assert f'href="/store/datasets/ir/{DS}/train2id.txt"' in page
    assert hashlib.sha256(DATASET_FILES["entity2id.txt"]).hexdigest() in page
    assert c.get("/datasets/ir/latest/").get_data(as_text=True) == page
    # the vocabulary pages and the overview link it
    assert f'href="/datasets/ir/{DS}/"' in c.get(f"/vocab/ir/{V2}/").get_data(as_text=True)
    assert f'href="/datasets/ir/{DS}/"' in c.get("/vocab/").get_data(as_text=True)
    assert 'href="/datasets/"' in c.get("/").get_data(as_text=True)

    got = c.get(f"/store/datasets/ir/{DS}/train2id.txt")
    assert got.data == DATASET_FILES["train2id.txt"] and "immutable" in got.headers["Cache-Control"]
    assert c.get(f"/store/datasets/ir/{DS}/manifest.json").get_json()["id"] == DS
    assert c.get("/store/datasets/ir/latest.json").get_json()["id"] == DS


@pytest.mark.parametrize("path", ["/datasets/shards/run7/", "/datasets/ir/ir-00000000000000bb/", "/datasets/zz/x/",
                                  "/datasets/ir/no-such-dataset/", "/datasets/ir/..%2f..%2fvocab/",
                                  "/datasets/ir/.hidden/", "/datasets/mir/latest/", "/policies/nope/P1/",
                                  "/policies/inline/..P1/", "/policies/inline/no-such-version/",
                                  "/policies/nope/diff", "/policies/inline/diff?a=nope&b=P1"])
def test_unknown_kinds_ids_and_versions_are_a_one_line_404(client, path: str):
    c, _ = client
    r = c.get(path)
    assert r.status_code == 404, path
    text = r.get_data(as_text=True)
    assert text.startswith("404 Not Found: ") and text.count("\n") == 1 and r.mimetype == "text/plain", text


def test_vocabulary_pages_show_versions_state_coverage_and_a_diff_with_filler_marked(client):
    c, data = client
    page = c.get("/vocab/").get_data(as_text=True)
    assert V1 in page and V2 in page and 'class="latest">latest' in page and "superseded" in page
    assert "Arguments 1/2" in page  # V2's coverage: Constant is filler
    assert page.count('<td class="validated">22.1.8</td>') == 2
    one = c.get(f"/vocab/ir/{V2}/").get_data(as_text=True)
    assert hashlib.sha256(data[V2]).hexdigest() in one and f"/store/vocab/ir/{V2}/vocab.json" in one
    assert "-ir2vec-vocab-path=" in one and "-ml-inliner-ir2vec-vocab-file=" in one and "sha256sum -c" in one
    assert "LLVM 22.1.8 read this file back" in one
    assert c.get("/vocab/ir/latest/").status_code == 200
    assert c.get("/vocab/zz/latest/").status_code == 404 and c.get("/vocab/ir/..bad/").status_code == 404

    diff = c.get(f"/vocab/ir/diff?a={V1}&b={V2}").get_data(as_text=True)
    assert "<svg" in diff and "The entities that moved most" in diff
    rows = diff.split('<table id="top">')[1].split("</table>")[0].split("<tr")[2:]
    # reversed: the most drift there is, raw (2.0000) and aligned by the map the other five anchors fix (1.99898)
    assert "Add" in rows[0] and "2.0000" in rows[0] and float(rows[0].split('"num">')[1].split("<")[0]) == 1.999
    assert "(6 of them measured by the map the others fix" in diff and 'id="unaligned"' not in diff
    constant = next(r for r in rows if ">Constant<" in r)
    assert 'class="filler"' in constant and f"in {V2}" in constant
    assert "fitted on the 6 entities trained in both" in diff  # Constant, filler in V2, is no anchor
    assert f"{V2} was trained from a random start" in diff
    assert c.get("/vocab/ir/diff?a=nope&b=" + V2).status_code == 404


def test_the_diff_aligns_the_spaces_so_a_rotated_retrain_shows_no_drift(tmp_path: Path):
    """V3 is V1 turned by one orthogonal map (what an independent training does to unchanged knowledge): every
    raw angle changed, nothing was learnt; the page says so through the aligned drift and the neighbour overlap."""
    import numpy as np

    populate(tmp_path / "store")
    store = FileStore(tmp_path / "store")
    v3 = "20260301-llvm22.1.8-ir-d4-cccccccccccc"
    q = np.linalg.qr(np.random.default_rng(7).normal(size=(4, 4)))[0]
    vocab = {s: {k: (np.array(v) @ q).tolist() for k, v in e.items()} for s, e in json.loads(_vocab()).items()}
    data = dumps(vocab)
    store.put(f"vocab/ir/{v3}/vocab.json", data)
    manifest = {**_manifest(v3, data, {}, "2026-03-01T00:00:00Z", 0.4), "warm_start": {"from": V1, "entities": 7}}
    store.put(f"vocab/ir/{v3}/manifest.json", json.dumps(manifest).encode())
    c = create_app(load_settings(), store=store, history=tmp_path / "h.sqlite").test_client()
    page = c.get(f"/vocab/ir/diff?a={V1}&b={v3}").get_data(as_text=True)
    assert f'was trained starting from the vectors of\n<a href="/vocab/ir/{V1}/">{V1}</a>' in page
    overall = page.split('<p id="overall">')[1].split("</p>")[0]
    assert "mean aligned drift\n<b>0.0000</b>" in overall and "mean NN overlap\n<b>1.00</b>" in overall, overall
    assert "mean structure\n<b>1.00</b>" in overall and "(7 of them measured by the map the others" in page, overall
    assert float(overall.split("(raw drift ")[1].split(")")[0]) > 0.3
    rows = page.split('<table id="top">')[1].split("</table>")[0].split("<tr")[2:]
    assert len(rows) == 7 and all('<td class="num">0.0000</td>\n<td class="num">1.00</td>\n<td class="num">1.00</td>'
                                  in r for r in rows), rows
    # aligned, nothing moved beyond float rounding: the chart says so rather than drawing bars of noise
    assert "no entity moved" in page.split('<div id="drift-plot">')[1]


def test_regression_pages_show_runs_verdicts_a_trend_and_serve_the_report(client):
    c, _ = client
    index = c.get("/regression/").get_data(as_text=True)
    assert "regression-inliner-size" in index and 'class="regression">regression' in index
    builder = c.get("/regression/regression-inliner-size/").get_data(as_text=True)
    assert "r1 (previous good)" in builder and "adler32.c" not in builder.split('id="runs"')[0]
    assert "adler32.c" in c.get("/regression/regression-inliner-size/?modules=1").get_data(as_text=True)
    trend = c.get("/regression/regression-inliner-size/trend?subject=zlib&metric=text_size").get_data(as_text=True)
    svg = trend.split('<div id="trend-plot">')[1].split("</div>")[0]
    assert svg.startswith("<svg") and "heuristic" in svg and "policy" in svg and "previous good (r1)" in svg
    assert "regressed" in svg and "+10.00%" in trend and "1,100 bytes" in trend
    assert c.get("/regression/regression-inliner-size/trend?subject=nope&metric=text_size").status_code == 404
    assert c.get("/regression/no-such-builder/").status_code == 404
    assert '/store/regression/regression-inliner-size/r2/index.html' in builder
    assert "<td>-O2 + PGO + ThinLTO</td>" in builder and "<td>-</td>" in builder  # each run's build configuration
    runs = c.get("/regression/regression-inliner-size/runs.json").get_json()["runs"]
    assert [r["build"] for r in runs][:2] == ["-O2 + PGO + ThinLTO", "-"]
    report = c.get("/store/regression/regression-inliner-size/r2/index.html")
    assert report.data.startswith(b"<!DOCTYPE html>") and "default-src 'none'" in report.headers[
        "Content-Security-Policy"]


def test_the_buildbot_fragment_is_a_plain_fragment_linking_the_pages_and_flower(client):
    c, _ = client
    frag = c.get("/index.html").get_data(as_text=True)
    assert frag.startswith('<div class="mlgo-farm-dashboard">') and "<script" not in frag and "<html" not in frag
    assert 'href="/vocab/ir/' in frag and 'href="/regression/regression-inliner-size/"' in frag
    assert 'href="http://127.0.0.1:5555/"' in frag and 'href="/store/vocab/ir/latest/vocab.json"' in frag
    home = c.get("/").get_data(as_text=True)
    assert home.startswith("<!DOCTYPE html>") and "regression-inliner-size" in home


def test_pages_of_an_empty_farm_say_so(tmp_path: Path):
    app = create_app(load_settings(), store=FileStore(tmp_path / "empty"), history=tmp_path / "none.sqlite")
    c = app.test_client()
    assert "nothing published yet" in c.get("/index.html").get_data(as_text=True)
    assert "No regression run yet" in c.get("/regression/").get_data(as_text=True)
    assert c.get("/index.json").get_json() == {"format": 1, "vocab": {}, "policies": {}}
    assert c.get("/vocab/ir/diff").status_code == 200
    assert c.get("/store/vocab/ir/latest/vocab.json").status_code == 404
    assert not (tmp_path / "none.sqlite").exists()  # looking creates nothing


def test_master_config_enables_the_views_and_the_dashboard(monkeypatch: pytest.MonkeyPatch):
    from master.buildmaster import build_config

    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WORKER_PASSWORD", "config-only")
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_ADMIN_PASSWORD", "config-only")
    plugins = build_config()["www"]["plugins"]
    assert {"console_view", "grid_view", "waterfall_view"} <= set(plugins)
    (dash,) = plugins["wsgi_dashboards"]
    assert dash["name"] == "farm" and callable(dash["app"])


def test_what_vocab_publish_writes_is_what_the_dashboard_serves(tmp_path: Path):
    """Not hand-made: two versions through vocabgen.publish (signed, gated), then the stable URLs and pages."""
    from tests.vocabgen.conftest import handmade_manifest, handmade_vocab
    from vocabgen import publish as pub

    key = b"a farm key for the dashboard tests"
    store = FileStore(tmp_path / "store")
    first = pub.publish(store, handmade_vocab(0), handmade_manifest(handmade_vocab(0), key, mrr=0.5), when=1e9, key=key)
    second = pub.publish(store, handmade_vocab(1), handmade_manifest(handmade_vocab(1), key, mrr=0.5), when=2e9,
                         key=key)
    assert second["state"] == "latest", second
    c = create_app(load_settings(), store=store, history=tmp_path / "h.sqlite").test_client()
    assert c.get("/store/vocab/ir/latest/vocab.json").data == handmade_vocab(1)
    assert c.get(f"/store/vocab/ir/{first['version']}/vocab.json").data == handmade_vocab(0)
    line = c.get("/store/vocab/ir/latest/vocab.json.sha256").data.decode()
    assert line == f"{hashlib.sha256(handmade_vocab(1)).hexdigest()}  vocab.json\n"
    index = c.get("/index.json").get_json()["vocab"]["ir"]
    assert index["latest"] == second["version"] and {v["state"] for v in index["versions"]} == {"latest", "superseded"}
    page = c.get("/vocab/").get_data(as_text=True)
    assert first["version"] in page and second["version"] in page and "Opcodes 3/3 trained" in page
    diff = c.get(f"/vocab/ir/diff?a={first['version']}&b={second['version']}")
    assert diff.status_code == 200 and "<svg" in diff.get_data(as_text=True)


def test_names_from_the_history_are_escaped_in_pages_and_plots(tmp_path: Path):
    """A benchmark or module name is text from a corpus: it must never become markup in a page or an SVG."""
    from urllib.parse import quote

    evil = 'x"><script>alert(1)</script>.c'
    h = History(tmp_path / "h.sqlite")
    run = h.start_run("r0", "regression-x", llvm_version="22.1.8", llvm_commit=None, policy_id="never",
                      vocab_version=None)
    h.add_measurements(run, [Measurement(evil, "binary", "text_size", p, 5, (), "bytes")
                             for p in ("heuristic", "policy")])
    h.complete_run(run, "ok", None)
    c = create_app(load_settings(), store=FileStore(tmp_path / "s"), history=tmp_path / "h.sqlite").test_client()
    for path in ("/regression/regression-x/", f"/regression/regression-x/trend?subject={quote(evil)}&metric=text_size"):
        page = c.get(path)
        assert page.status_code == 200, path
        assert "<script>" not in page.get_data(as_text=True) and "&lt;script&gt;" in page.get_data(as_text=True)
