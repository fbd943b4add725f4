"""The native host as users get it from the farm: a published policy's `model.weights` (part of the version: its
signed manifest records them, policyhost/publish.py), fetched and verified by `policy download` and by the
dashboard's downloads, the C file served by the dashboard, and the policy page's native "Use it" lines, run for
real: curl from a live dashboard, `sha256sum -c`, the host built with clang-22, a project compiled through it to the
same objects as the Python host (`mlgo-cc.py`, from the same page) gives. A version published before versions held
weights downloads and verifies as before, and says it has none."""

from __future__ import annotations

import hashlib
import html
import json
import os
import shutil
import struct
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from farm.errors import InputError
from farm.objectstore import FileStore
from master.dashboard.app import create_app
from policyhost import publish as pstore
from policyhost import standalone
from tests.policyhost.conftest import ir2vec_vocab, signed_policy_manifest  # noqa: F401 - a fixture
from tests.policyhost.test_standalone import PV, dashboard, inline_model, zlib_tree  # noqa: F401 - fixtures

FEATURES = [("callee_basic_block_count", 1, "int64"), ("cost_estimate", 1, "int64"), ("inlining_default", 1, "int64"),
            ("threshold", 1, "int64")]


def small_model(path: Path, features: list = FEATURES) -> Path:
    from policytrain.mlp import Mlp
    from policytrain.onnx_export import to_onnx

    rows = np.random.default_rng(1).integers(0, 40, (32, len(features))).astype(float)
    path.write_bytes(to_onnx(Mlp.init(features, rows, hidden=(4,), seed=2)))
    return path


def _recording(data: bytes, weights: bytes) -> dict:
    """A signed manifest of model `data` recording `weights` as a version's (whatever they hold: the refusals)."""
    record = {"file": "model.weights", "sha256": hashlib.sha256(weights).hexdigest(), "format_version": 1}
    return signed_policy_manifest(data, sorted(f[0] for f in FEATURES), weights=record)


def test_a_publish_stores_the_weights_in_the_version_and_its_manifest(tmp_path: Path) -> None:
    from policytrain.native_export import weights_from_onnx

    model = small_model(tmp_path / "model.onnx")
    data, weights = model.read_bytes(), weights_from_onnx(model.read_bytes())
    manifest = signed_policy_manifest(data, sorted(f[0] for f in FEATURES), weights=pstore.weights_record(weights))
    store = FileStore(tmp_path / "store")
    # a file of another format version, or of another model's features, is one line and publishes nothing
    other = weights[:8] + struct.pack("<I", 2) + weights[12:]
    with pytest.raises(InputError, match=r"^weights file has format version 2; the native host reads version 1; "
                                         r"nothing published$"):
        pstore.publish(store, data, _recording(data, other), weights=other)
    alien = weights_from_onnx(small_model(tmp_path / "other.onnx", FEATURES[1:]).read_bytes())
    with pytest.raises(InputError, match=r"^the weights file's features are not the model's .*nothing published$"):
        pstore.publish(store, data, _recording(data, alien), weights=alien)
    junk = b"not weights at all, but long enough to read a header"
    with pytest.raises(InputError, match="not an MLGO policy weights file"):
        pstore.publish(store, data, _recording(data, junk), weights=junk)
    # weights the manifest does not record, or records otherwise, or records and are not given: one line each
    with pytest.raises(InputError, match=r"^the weights file is not in the policy's manifest .*nothing published$"):
        pstore.publish(store, data, signed_policy_manifest(data, sorted(f[0] for f in FEATURES)), weights=weights)
    with pytest.raises(InputError, match=r"^the weights file does not match the sha256 in the policy's manifest"):
        pstore.publish(store, data, manifest, weights=alien)
    with pytest.raises(InputError, match=r"^the policy's manifest records model.weights but no weights file"):
        pstore.publish(store, data, manifest)
    with pytest.raises(InputError, match="signature does not match"):  # the record is signed with the model
        pstore.publish(store, data, {**manifest, "weights": _recording(data, alien)["weights"]}, weights=alien)
    assert store.list("policies/") == []

    out = pstore.publish(store, data, manifest, weights=weights)
    digest = hashlib.sha256(weights).hexdigest()
    assert out["weights"] == digest
    base = f"policies/inline/{out['version']}"
    assert store.get(f"{base}/model.weights") == weights
    stored = json.loads(store.get(f"{base}/manifest.json"))
    assert stored["weights"] == {"file": "model.weights", "sha256": digest, "format_version": 1}
    assert sorted(store.list(f"{base}/")) == [f"{base}/manifest.json", f"{base}/model.onnx", f"{base}/model.weights"]
    assert pstore.publish(store, data, manifest, weights=weights)["created"] is False  # the same content: one version

    from farm.config import load_settings

    c = create_app(load_settings(), store=store, history=tmp_path / "h.sqlite").test_client()
    for path in (f"{base}/model.weights", f"{base}/model.weights.sha256", f"{base}/model.onnx",
                 f"{base}/model.onnx.sha256"):
        resp = c.get(f"/store/{path}")
        assert resp.status_code == 200, path
        (tmp_path / Path(path).name).write_bytes(resp.data)
    assert (tmp_path / "model.weights").read_bytes() == weights
    check = subprocess.run(["sha256sum", "-c", "model.weights.sha256", "model.onnx.sha256"], cwd=tmp_path,
                           capture_output=True, text=True)
    assert check.returncode == 0 and check.stdout == "model.weights: OK\nmodel.onnx: OK\n"
    page = c.get(f"/policies/inline/{out['version']}/").get_data(as_text=True)
    assert f'<code id="weights-sha256">{digest}</code>' in page and 'id="no-native"' not in page


def test_policy_download_fetches_and_verifies_the_weights_and_an_old_version_still_downloads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from farm.config import load_settings
    from farm.objectstore import store_from_settings
    from policytrain.native_export import weights_from_onnx
    from tests.policyhost.test_policy_store import cli, one_error_line

    store = store_from_settings()
    model = small_model(tmp_path / "model.onnx")
    data, weights = model.read_bytes(), weights_from_onnx(model.read_bytes())
    features = sorted(f[0] for f in FEATURES)
    new = pstore.publish(store, data, signed_policy_manifest(data, features, weights=pstore.weights_record(weights)),
                         when=2e9, weights=weights)["version"]
    out = tmp_path / "dl" / "policy.onnx"
    got = cli("policy", "download", "--version", new, "-o", str(out))
    assert got.returncode == 0 and got.stdout.strip() == str(out), got.stderr
    assert out.read_bytes() == data and out.with_suffix(".weights").read_bytes() == weights
    digest = hashlib.sha256(weights).hexdigest()
    assert f"native weights -> {out.with_suffix('.weights')} (sha256 {digest[:12]} verified)" in got.stderr

    # the pair is checked before either file is written: a FIFO at .weights left a new .onnx beside it
    fifo = tmp_path / "fifo" / "policy.onnx"
    fifo.parent.mkdir()
    os.mkfifo(fifo.with_suffix(".weights"))
    got = cli("policy", "download", "--version", new, "-o", str(fifo))
    assert got.returncode == 2 and one_error_line(got) == (
        f"mlgo-farm: error: output {fifo.with_suffix('.weights')} is a FIFO: the files policy.onnx, policy.weights "
        "are written together, each a regular file")
    assert not fifo.exists()

    # a version published before versions held weights (its model.weights stored beside, no manifest record):
    # it downloads and verifies its model, says it has no native weights, and leaves no stale .weights beside
    old_model = small_model(tmp_path / "old.onnx", FEATURES[1:])
    old_data = old_model.read_bytes()
    old = pstore.publish(store, old_data, signed_policy_manifest(old_data, features[1:]), when=1e9)["version"]
    store.put(f"policies/inline/{old}/model.weights", weights_from_onnx(old_data))
    store.put(f"policies/inline/{old}/model.weights.sha256", b"0" * 64 + b"  model.weights\n")
    got = cli("policy", "download", "--version", old, "-o", str(out))
    assert got.returncode == 0, got.stderr
    assert out.read_bytes() == old_data and not out.with_suffix(".weights").exists()
    assert "this version has no native weights" in got.stderr
    c = create_app(load_settings(), store=store, history=tmp_path / "h.sqlite").test_client()
    assert c.get(f"/store/policies/inline/{old}/model.onnx").status_code == 200
    assert c.get(f"/store/policies/inline/{old}/model.weights").status_code == 404  # not the version's
    assert c.get(f"/store/policies/inline/{old}/model.weights.sha256").status_code == 404
    assert 'id="no-native"' in c.get(f"/policies/inline/{old}/").get_data(as_text=True)

    # the new version's weights changed in the store: refused in one line, nothing written, like a changed model
    store.put(f"policies/inline/{new}/model.weights", weights[:-8] + bytes([weights[-8] ^ 1]) + weights[-7:])
    fresh = tmp_path / "fresh" / "policy.onnx"
    got = cli("policy", "download", "--version", new, "-o", str(fresh))
    line = one_error_line(got)
    assert got.returncode == 4 and line.startswith(
        f"mlgo-farm: error: checksum mismatch for policies/inline/{new}/model.weights: manifest says {digest}")
    assert not fresh.parent.exists() or list(fresh.parent.iterdir()) == []
    assert c.get(f"/store/policies/inline/{new}/model.weights").status_code == 500
    from farm.artifacts import scrub

    assert any(f"policies/inline/{new}/model.weights" in line for line in scrub.verify(store).bad)


def test_the_native_host_is_served_with_its_sha256(tmp_path: Path) -> None:
    from farm.config import load_settings

    c = create_app(load_settings(), store=FileStore(tmp_path / "s"), history=tmp_path / "h.sqlite").test_client()
    resp = c.get("/policies/host/mlgo-policy-host.c")
    source = standalone.native_source()
    assert resp.status_code == 200 and resp.data == source and resp.headers["Cache-Control"] == "no-cache"
    digest = hashlib.sha256(source).hexdigest()
    assert resp.headers["ETag"] == f'"{digest}"'
    assert c.get("/policies/host/mlgo-policy-host.c", headers={"If-None-Match": f'"{digest}"'}).status_code == 304
    line = c.get("/policies/host/mlgo-policy-host.c.sha256").data
    assert line == f"{digest}  mlgo-policy-host.c\n".encode()


def blocks(base: str) -> dict[str, str]:
    """The policy page's "Use it" blocks, native and Python, as a user copies them."""
    page = urllib.request.urlopen(f"{base}policies/inline/{PV}/", timeout=30).read().decode()
    return {b: html.unescape(page.split(f'<pre id="{b}">')[1].split("</pre>")[0]) if f'<pre id="{b}">' in page
            else None for b in ("native-fetch", "native-make", "use-fetch", "use-make")}


def bash(script: str, cwd: Path) -> None:
    p = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]


#: files of Debian's zlib where the test policy departs from LLVM's heuristic (as in test_native_host.py)
SOURCES = ("deflate.c", "inflate.c", "trees.c", "inftrees.c", "adler32.c", "crc32.c")

def test_the_pages_native_lines_build_the_python_hosts_objects(dashboard: str, tmp_path: Path,  # noqa: F811
                                                                inline_model: Path, zlib_tree: Path) -> None:  # noqa: F811
    from policytrain.native_export import weights_from_onnx

    assert blocks(dashboard)["native-fetch"] is None, "no model.weights yet: only the Python host's lines"
    store, weights = FileStore(tmp_path / "store"), weights_from_onnx(inline_model.read_bytes())
    store.put(f"policies/inline/{PV}/model.weights", weights)  # stored beside, unrecorded: not the version's
    assert blocks(dashboard)["native-fetch"] is None
    manifest = json.loads(store.get(f"policies/inline/{PV}/manifest.json"))
    store.put(f"policies/inline/{PV}/manifest.json", json.dumps({**manifest, "weights": pstore.weights_record(weights)})
              .encode())  # as a version published with its weights records them
    use = blocks(dashboard)
    page = urllib.request.urlopen(f"{dashboard}policies/inline/{PV}/", timeout=30).read().decode()
    assert page.index('<pre id="native-make">') < page.index('<pre id="use-fetch">'), "native first, Python after"
    fetch = use["native-fetch"].splitlines()
    assert "clang-22 -O2 -o mlgo-policy-host mlgo-policy-host.c -lm" in fetch
    assert use["native-make"] == 'make CC="$mlgo/cc" CFLAGS=-Oz'  # the shim the fetch lines' last one writes
    native, python = tmp_path / "native", tmp_path / "python"
    for d in (native, python):
        d.mkdir()
    bash("\n".join(fetch), native)  # curl over HTTP, sha256sum -c, clang-22 builds the host
    assert sorted(p.name for p in native.iterdir()) == [
        "cc", "mlgo-policy-host", "mlgo-policy-host.c", "mlgo-policy-host.c.sha256", "model.weights",
        "model.weights.sha256", "vocab.json", "vocab.json.sha256"]
    (python / "venv").symlink_to(Path(sys.executable).parents[1])  # numpy and onnxruntime, as the page's venv line
    bash("\n".join(ln for ln in use["use-fetch"].splitlines() if not ln.startswith("python3 -m venv")), python)
    names = SOURCES
    objects = {}
    for name, user, make in (("native", native, use["native-make"]), ("python", python, use["use-make"]),
                             ("plain", None, "make CC=clang-22 CFLAGS=-Oz")):
        project = shutil.copytree(zlib_tree, tmp_path / f"project-{name}")
        (project / "GNUmakefile").write_text("all: " + " ".join(n[:-2] + ".o" for n in names) + "\n")
        bash((f"mlgo={user}\n" if user else "") + make + " -j2", project)
        objects[name] = {n: (project / (n[:-2] + ".o")).read_bytes() for n in names}
    assert len(objects["native"]) == len(SOURCES) and objects["native"] == objects["python"]
    assert sum(objects["native"][n] != objects["plain"][n] for n in names) >= 2, \
        "the policy decided differently from LLVM's heuristic"
