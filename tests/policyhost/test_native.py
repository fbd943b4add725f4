"""The farm's own policy builds through the native host (policyhost/native.py): a published inliner version with its
weights builds through `mlgo-policy-host`, built once with the farm's clang, to the objects the Python launcher
builds; everything the native host cannot vouch for keeps the Python launcher."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from farm.config import load_settings
from farm.objectstore import FileStore
from farm.toolchain import Toolchain
from policyhost import publish as pstore
from policyhost.cc import launcher_command
from policyhost.native import native_host, weights_for
from policyhost.standalone import NATIVE_NAME
from regression.build import policy_variant
from tests.policyhost.conftest import ir2vec_vocab, signed_policy_manifest  # noqa: F401 - a fixture
from tests.policyhost.test_standalone import inline_model, zlib_tree  # noqa: F401 - fixtures

#: zlib files that compile without its configure step (the policy decides otherwise than LLVM's heuristic in some)
ZLIB = ("deflate.c", "inflate.c", "trees.c", "inftrees.c")


def _published(tmp_path: Path, model: Path) -> tuple[FileStore, str]:
    from policyhost.release import model_inputs
    from policytrain.native_export import weights_from_onnx

    data = model.read_bytes()
    weights = weights_from_onnx(data)
    manifest = signed_policy_manifest(data, model_inputs(model), weights=pstore.weights_record(weights))
    store = FileStore(tmp_path / "store")
    return store, pstore.publish(store, data, manifest, weights=weights)["version"]


def _objects(prefix: list[str], tree: Path, out: Path, toolchain: Toolchain) -> dict[str, bytes]:
    out.mkdir()
    got = {}
    for name in ZLIB:
        o = out / name.replace(".c", ".o")
        subprocess.run([*prefix, *toolchain.command("clang", ["-Oz", "-I", tree, "-c", tree / name, "-o", o])],
                       check=True, timeout=300)
        got[name] = o.read_bytes()
    return got


def test_a_published_version_with_weights_builds_through_the_native_host_to_the_python_launchers_objects(
        tmp_path: Path, inline_model: Path, ir2vec_vocab: Path, toolchain: Toolchain,  # noqa: F811
        zlib_tree: Path) -> None:  # noqa: F811
    store, version = _published(tmp_path, inline_model)
    model, _ = pstore.fetch_cached(store, "inline", version, tmp_path / "cache")
    assert weights_for(model) == model.with_suffix(".weights")  # fetched beside the model, checked
    native = launcher_command(str(model), vocab=str(ir2vec_vocab))
    python = launcher_command(str(model), vocab=str(ir2vec_vocab), native=False)
    assert Path(native[0]).name == NATIVE_NAME and native[-1] == "--" and "--weights" in native
    assert Path(python[3]).name == "cc_script.py"
    built = _objects(native, zlib_tree, tmp_path / "native", toolchain)
    assert built == _objects(python, zlib_tree, tmp_path / "python", toolchain)
    plain = _objects([], zlib_tree, tmp_path / "plain", toolchain)
    assert [n for n in ZLIB if built[n] != plain[n]], "the policy decided nothing: the host was never asked"
    # the regression builders' policy build takes it too
    assert policy_variant(str(model), ir2vec_vocab).launcher == tuple(native)
    # built once per source and LLVM: the next build reuses the binary
    host = Path(native[0])
    stamp = host.stat().st_mtime_ns
    assert native_host(load_settings()) == host and host.stat().st_mtime_ns == stamp


def test_what_the_native_host_cannot_vouch_for_keeps_the_python_launcher(
        tmp_path: Path, inline_model: Path, ir2vec_vocab: Path) -> None:  # noqa: F811
    store, version = _published(tmp_path, inline_model)
    model, _ = pstore.fetch_cached(store, "inline", version, tmp_path / "cache")
    weights = model.with_suffix(".weights")
    # statistics are the Python launcher's; a model the farm did not publish has no weights to trust
    assert Path(launcher_command(str(model), vocab=str(ir2vec_vocab), stats=str(tmp_path / "s"))[3]).name == \
        "cc_script.py"
    assert weights_for(inline_model) is None
    assert weights_for(model, "regalloc") is None
    # weights changed in the cache are not used, and the next fetch puts the version's own back
    good = weights.read_bytes()
    weights.write_bytes(good[:-4] + b"\0\0\0\0")
    assert weights_for(model) is None
    assert Path(launcher_command(str(model), vocab=str(ir2vec_vocab))[3]).name == "cc_script.py"
    pstore.fetch_cached(store, "inline", version, tmp_path / "cache")
    assert hashlib.sha256(weights.read_bytes()).digest() == hashlib.sha256(good).digest()
    assert weights_for(model) == weights
