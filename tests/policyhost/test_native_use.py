"""The native host as users get it from the farm: a published policy's `model.weights` (policyhost/publish.py stores
it beside `model.onnx`), the C file served by the dashboard, and the policy page's native "Use it" lines, run for
real: curl from a live dashboard, `sha256sum -c`, the host built with clang-22, a project compiled through it to the
same objects as the Python host (`mlgo-cc.py`, from the same page) gives."""

from __future__ import annotations

import hashlib
import html
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


def test_a_publish_stores_and_serves_the_weights_with_their_sha256(tmp_path: Path) -> None:
    from policytrain.native_export import weights_from_onnx

    model = small_model(tmp_path / "model.onnx")
    data, weights = model.read_bytes(), weights_from_onnx(model.read_bytes())
    manifest = signed_policy_manifest(data, sorted(f[0] for f in FEATURES))
    store = FileStore(tmp_path / "store")
    # a file of another format version, or of another model's features, is one line and publishes nothing
    other = weights[:8] + struct.pack("<I", 2) + weights[12:]
    with pytest.raises(InputError, match=r"^weights file has format version 2; the native host reads version 1; "
                                         r"nothing published$"):
        pstore.publish(store, data, manifest, weights=other)
    with pytest.raises(InputError, match=r"^the weights file's features are not the model's .*nothing published$"):
        pstore.publish(store, data, manifest, weights=weights_from_onnx(
            small_model(tmp_path / "other.onnx", FEATURES[1:]).read_bytes()))
    with pytest.raises(InputError, match="not an MLGO policy weights file"):
        pstore.publish(store, data, manifest, weights=b"not weights at all, but long enough to read a header")
    assert store.list("policies/") == []

    out = pstore.publish(store, data, manifest, weights=weights)
    digest = hashlib.sha256(weights).hexdigest()
    assert out["weights"] == digest
    base = f"policies/inline/{out['version']}"
    assert store.get(f"{base}/model.weights") == weights
    assert store.get(f"{base}/model.weights.sha256") == f"{digest}  model.weights\n".encode()
    # the same content again: the same version, its weights kept
    assert pstore.publish(store, data, manifest)["weights"] == digest

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
    pstore._store_weights(FileStore(tmp_path / "store"), "inline", PV, weights_from_onnx(inline_model.read_bytes()))
    use = blocks(dashboard)
    page = urllib.request.urlopen(f"{dashboard}policies/inline/{PV}/", timeout=30).read().decode()
    assert page.index('<pre id="native-make">') < page.index('<pre id="use-fetch">'), "native first, Python after"
    fetch = use["native-fetch"].splitlines()
    assert "clang-22 -O2 -o mlgo-policy-host mlgo-policy-host.c -lm" in fetch
    assert use["native-make"] == ('make CC="$mlgo/mlgo-policy-host --weights $mlgo/model.weights --vocab '
                                  '$mlgo/vocab.json -- clang-22" CFLAGS=-Oz')
    native, python = tmp_path / "native", tmp_path / "python"
    for d in (native, python):
        d.mkdir()
    bash("\n".join(fetch), native)  # curl over HTTP, sha256sum -c, clang-22 builds the host
    assert sorted(p.name for p in native.iterdir()) == [
        "mlgo-policy-host", "mlgo-policy-host.c", "mlgo-policy-host.c.sha256", "model.weights",
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
