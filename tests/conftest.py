"""Shared fixtures: the real LLVM toolchain and real loopback servers."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from tests import servers

DATA = Path(__file__).parent / "data"
CSRC = DATA / "csrc"


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    tc = Toolchain(Path(os.environ.get("MLGO_FARM_LLVM_BIN_DIR", "/usr/lib/llvm-22/bin")))
    tc.check("clang", "opt", "llc", "llvm-ir2vec", "llvm-size")
    return tc


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory):
    with servers.redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture
def s3_endpoint():
    ep = servers.start_s3()
    yield ep
    ep.stop()


@pytest.fixture
def mailbox():
    with servers.smtp_server() as box:
        yield box


@pytest.fixture(scope="session", autouse=True)
def _no_worker_cache():
    """The worker caches (workers/cache.py) are off unless a test turns them on: session and module
    fixtures run before `_isolated_config` and would otherwise fill the real var/cache, and a test of
    a tool's failure must meet the tool, not an entry another test left. tests/workers/test_cache.py
    turns them on."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLGO_FARM_CACHE_ENABLED", "false")
        yield


@pytest.fixture(autouse=True)
def _isolated_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads a developer's config file or writes to the real var/.

    The promotion gate's `policy_size` rule is off unless a test turns it on: with it, an IR
    vocabulary becomes `latest` only after a policy chain retrained with it, which tests of
    publishing are not about (tests/vocabgen/test_gate.py and tests/policyhost/test_policy_celery.py
    turn it on; `make demo` runs with it).
    """
    monkeypatch.setenv("MLGO_FARM_GATE_POLICY_SIZE", "false")
    monkeypatch.setenv("MLGO_FARM_LLVM_POLL_INTERVAL", "0")  # no master polls github.com (tests poll a local repo)
    empty = tmp_path / "mlgo-farm.toml"
    empty.write_text("")
    monkeypatch.setenv("MLGO_FARM_CONFIG", str(empty))
    monkeypatch.setenv("MLGO_FARM_PATHS_VAR_DIR", str(tmp_path / "var"))


@pytest.fixture(scope="session")
def have_apt_source() -> bool:
    """Debian sources can be fetched (the packages' tests and the split check need them)."""
    return shutil.which("apt-get") is not None


@pytest.fixture(scope="session")
def cxx_corpus(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> Path:
    """The tests' own C++ package (tests/cxxpackage.py) compiled into an -Oz corpus, -fPIC as Debian's are."""
    from tests import cxxpackage
    from workers.corpus import from_sources

    tmp = tmp_path_factory.mktemp("cxx")
    return from_sources(cxxpackage.write(tmp / "src"), tmp / "corpus", toolchain, jobs=2, flags=cxxpackage.FLAGS,
                        level="Oz").path
