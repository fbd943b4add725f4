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
