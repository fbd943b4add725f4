"""Fixtures for the vocabulary tests: datasets made by the real triplet step, tiny training, S3 on loopback."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from farm.store import S3Store
from farm.toolchain import Toolchain
from tests import servers
from tests.conftest import DATA
from tests.vocabgen.proxy import TcpProxy
from vocabgen.params import TrainParams

#: Small enough for a test, the same code path as the real recipe.
TINY = TrainParams(dim=8, epochs=5, batch_size=64)


@pytest.fixture(scope="session")
def csrc_corpus_dir(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> Path:
    from workers import corpus

    out = tmp_path_factory.mktemp("vocab-corpus") / "csrc"
    corpus.from_sources(DATA / "csrc", out, toolchain)
    return out


def _dataset(tmp_path_factory, toolchain: Toolchain, corpus_dir: Path, kind: str) -> Path:
    from workers.triplets import build_dataset

    return build_dataset(corpus_dir, tmp_path_factory.mktemp(f"ds-{kind}") / kind, kind, toolchain)


@pytest.fixture(scope="session")
def ir_dataset(tmp_path_factory, toolchain: Toolchain, csrc_corpus_dir: Path) -> Path:
    """An IR dataset made by `workers.triplets` from tests/data/csrc (read-only: copy before changing)."""
    return _dataset(tmp_path_factory, toolchain, csrc_corpus_dir, "ir")


@pytest.fixture(scope="session")
def mir_dataset(tmp_path_factory, toolchain: Toolchain, csrc_corpus_dir: Path) -> Path:
    return _dataset(tmp_path_factory, toolchain, csrc_corpus_dir, "mir")


@pytest.fixture
def ir_copy(ir_dataset: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "ds"
    shutil.copytree(ir_dataset, dst)
    return dst


@pytest.fixture(autouse=True)
def _pystow_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYSTOW_HOME", str(tmp_path / "pystow"))


@pytest.fixture
def s3_proxy() -> Iterator[tuple[servers.S3Endpoint, TcpProxy]]:
    """moto's S3 server behind a loopback TCP proxy: stopping the proxy is an endpoint outage that keeps the data."""
    ep = servers.start_s3()
    proxy = TcpProxy(ep.port)
    proxy.start()
    try:
        yield ep, proxy
    finally:
        proxy.stop()
        ep.stop()


def s3_store(endpoint_url: str, bucket: str = "mlgo-vocab", prefix: str = "farm") -> S3Store:
    store = S3Store(bucket, prefix, endpoint_url, access_key_id="testing", secret_access_key="testing",
                    connect_timeout=2, retries=1)
    store.ensure_bucket()
    return store


def handmade_vocab(salt: int = 0, scale: float = 0.5) -> bytes:
    """A tiny IR vocabulary in LLVM's layout: schema-valid but not complete, for the store's logic, not for LLVM."""
    from vocabgen.vocabfile import dumps

    sections = {"Opcodes": ("Ret", "Br", "Add"), "Types": ("VoidTy", "IntegerTy"),
                "Arguments": ("Function", "Constant")}
    n = 0
    vocab: dict[str, dict[str, list[float]]] = {}
    for section, keys in sections.items():
        vocab[section] = {}
        for key in keys:
            n += 1
            vocab[section][key] = [round(scale * ((n * 7 + salt * 13 + i) % 11 - 5) / 5, 3) for i in range(4)]
    return dumps(vocab)


def handmade_manifest(data: bytes, key: bytes, dataset: str = "ir-00000000000000aa", mrr: float = 0.5) -> dict:
    """A signed manifest for `data`, with a validation record as `vocab publish` would add after asking LLVM.

    publish() trusts that record (the CLI and the Celery validate task compute it); these tests are
    about what publish() does with the store.
    """
    import json

    from farm.signing import sign
    from vocabgen.vocabfile import sha256

    manifest = {
        "format": 1, "kind": "ir", "sha256": sha256(data), "dimension": 4,
        "dataset": {"id": dataset}, "lineage": {"dataset_id": dataset, "llvm_version": "22.1.8"},
        "parameters": TINY.to_dict(), "metrics": {"holdout": {"mrr": mrr, "hits_at_10": 0.9}},
        "coverage": {section: {"trained": len(keys), "total": len(keys), "filler": []}
                     for section, keys in json.loads(data).items()},
    }
    return {**sign(data, manifest, key), "validation": {"ok": True, "sha256": sha256(data)}}


def assert_consistent(store, kind: str = "ir") -> list[str]:
    """`latest` names a version the index lists, and every listed version is complete and intact; returns them."""
    import json

    from vocabgen import publish as pub
    from vocabgen.vocabfile import sha256

    listed = [v["version"] for v in pub.read_index(store) if v["kind"] == kind]
    latest = pub.read_latest(store, kind)
    if latest is not None:
        assert latest["version"] in listed, f"latest names {latest['version']}, the index lists {listed}"
    for version in listed:
        manifest = json.loads(store.get(f"vocab/{kind}/{version}/manifest.json"))
        assert sha256(store.get(f"vocab/{kind}/{version}/vocab.json")) == manifest["sha256"], version
    return listed
