"""Fixtures for the vocabulary tests: datasets made by the real triplet step, tiny training, S3 on loopback.

The artifact tests (tests/farm/artifacts/) publish these vocabularies too: the trained ones, the hand-made
ones and the gated publish below are theirs as much as vocabgen's, so they live here and are imported there."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from farm.objectstore import FileStore, S3Store
from farm.toolchain import Toolchain
from tests import servers
from tests.conftest import DATA
from tests.vocabgen.proxy import TcpProxy
from vocabgen.gate import Gate
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
    from farm.vocabfile import dumps

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
    from farm.vocabfile import sha256

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

    from farm.artifacts import VOCABULARIES
    from farm.vocabfile import sha256

    listed = [v["version"] for v in VOCABULARIES.read_index(store) if v["kind"] == kind]
    latest = VOCABULARIES.read_latest(store, kind)
    if latest is not None:
        assert latest["version"] in listed, f"latest names {latest['version']}, the index lists {listed}"
    for version in listed:
        manifest = json.loads(store.get(f"vocab/{kind}/{version}/manifest.json"))
        assert sha256(store.get(f"vocab/{kind}/{version}/vocab.json")) == manifest["sha256"], version
    return listed


# --- trained and validated vocabularies, and the two stores, for the publishing tests ------------------------------


def _trained(ir_dataset: Path, toolchain: Toolchain, tmp_path_factory, seed: int) -> tuple[bytes, dict]:
    from vocabgen.build import train_vocabulary
    from vocabgen.dataset import load_dataset
    from vocabgen.validate import validate_vocab

    data, manifest = train_vocabulary(load_dataset(ir_dataset), dataclasses.replace(TINY, seed=seed), key=b"module")
    path = tmp_path_factory.mktemp("v") / "vocab.json"
    path.write_bytes(data)
    manifest["validation"] = validate_vocab("ir", path, toolchain)
    return data, manifest


@pytest.fixture(scope="module")
def trained(ir_dataset: Path, toolchain: Toolchain, tmp_path_factory) -> tuple[bytes, dict]:
    return _trained(ir_dataset, toolchain, tmp_path_factory, 0)


@pytest.fixture(scope="module")
def trained_other(ir_dataset: Path, toolchain: Toolchain, tmp_path_factory) -> tuple[bytes, dict]:
    return _trained(ir_dataset, toolchain, tmp_path_factory, 1)


@pytest.fixture
def validated(trained: tuple[bytes, dict]) -> tuple[bytes, dict]:
    """Trained and validated once per module, signed with this test's farm key (each test has its own var/)."""
    from farm.signing import farm_key, sign

    data, manifest = trained
    return data, sign(data, manifest, farm_key())


@pytest.fixture
def validated_other(trained_other: tuple[bytes, dict]) -> tuple[bytes, dict]:
    from farm.signing import farm_key, sign

    data, manifest = trained_other
    return data, sign(data, manifest, farm_key())


@pytest.fixture(params=["s3", "file"])
def store(request, tmp_path: Path):
    if request.param == "file":
        yield FileStore(tmp_path / "store")
        return
    ep = servers.start_s3()
    try:
        yield s3_store(ep.url)
    finally:
        ep.stop()


# --- the promotion gate the publishing tests judge with ------------------------------------------------------------

GATE = Gate(floors={("ir", "Opcodes"): 0.5, ("ir", "Types"): 0.25, ("ir", "Arguments"): 0.3,
                    ("mir", "Opcodes"): 0.01},
            tolerances={"mrr": 0.05, "hits_at_10": 0.05, "analogy": 0.05})
#: GATE with the `policy_size` rule: an IR version waits for its policy's size check
WAITS = Gate(floors=GATE.floors, tolerances=GATE.tolerances, policy_size=True)


def publish_handmade(store, salt: int, when: float, gate: Gate = GATE, **manifest) -> dict:
    """A hand-made vocabulary (`salt`) published at `when`, judged by `gate`; `manifest` as handmade_manifest's."""
    from farm.signing import farm_key
    from vocabgen import publish as pub

    data = handmade_vocab(salt=salt)
    m = handmade_manifest(data, farm_key(), **manifest)
    return pub.publish(store, data, m, when=when, gate=gate)


@pytest.fixture(scope="session")
def mir_entities(toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str]]:
    """Every x86 MIR2Vec entity LLVM 22 lists (`llvm-ir2vec entities --mode=mir` on hash.c's MIR) with its
    section, in LLVM's order."""
    from vocabgen.layout import placement

    tmp = tmp_path_factory.mktemp("mir-entities")
    ll, mir = tmp / "hash.ll", tmp / "hash.mir"
    toolchain.run("clang", ["-O2", "-S", "-emit-llvm", DATA / "csrc" / "hash.c", "-o", ll])
    toolchain.run("llc", ["-O2", "-stop-after=prologepilog", ll, "-o", mir])
    out = toolchain.run("llvm-ir2vec", ["entities", "--mode=mir", mir]).stdout.decode()
    names = [line.split("\t")[0] for line in out.splitlines()[1:] if line.strip()]
    return [(n, section) for n, (section, _) in zip(names, placement("mir", names), strict=True)]
