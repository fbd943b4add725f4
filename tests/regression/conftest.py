"""Fixtures for the comparison-side tests (the policy side's are in tests/policyhost/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from tests.conftest import CSRC, DATA
from tests.policyhost.conftest import ir2vec_vocab  # noqa: F401  (a fixture test_compare uses too)


@pytest.fixture(scope="session")
def compare_corpus(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> Path:
    """A real corpus (LLVM's layout) of the C files in tests/data/csrc, made by the workers' code."""
    from workers.corpus import from_sources

    return from_sources(CSRC, tmp_path_factory.mktemp("compare") / "csrc", toolchain, jobs=2, level="Oz").path


@pytest.fixture
def smtp_env(monkeypatch: pytest.MonkeyPatch, mailbox):
    """The farm's [smtp] settings pointed at the loopback aiosmtpd server, with two recipients."""
    monkeypatch.setenv("MLGO_FARM_SMTP_HOST", mailbox.host)
    monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(mailbox.port))
    monkeypatch.setenv("MLGO_FARM_SMTP_RECIPIENTS", "llvm-mlgo@example.org, oncall@example.org")
    monkeypatch.setenv("MLGO_FARM_SMTP_RETRIES", "2")
    return mailbox


def with_corrupt_module(corpus: Path, dest: Path) -> Path:
    """A copy of `corpus` with one more module, `corrupt`, whose bitcode is garbage."""
    import shutil

    shutil.copytree(corpus, dest)
    shutil.copy(DATA / "bad" / "corrupt.bc", dest / "corrupt.bc")
    desc = json.loads((dest / "corpus_description.json").read_text())
    desc["modules"].append("corrupt")
    (dest / "corpus_description.json").write_text(json.dumps(desc))
    return dest


@pytest.fixture(scope="session")
def postgres():
    """One real PostgreSQL cluster for the session (tests/pgserver.py): initdb once, a database per test."""
    from tests.pgserver import postgres_server

    with postgres_server() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def history_at(request: pytest.FixtureRequest, tmp_path: Path):
    """Where a test's history lives, on each backend: an SQLite file's path, or a new PostgreSQL database's URL
    (its pooled connections closed after the test)."""
    from regression import database

    if request.param == "sqlite":
        yield str(tmp_path / "h.sqlite")
        return
    url = request.getfixturevalue("postgres").create_database()
    yield url
    database.dispose(database.url_of(url))


def open_at_once(where, n: int) -> list[BaseException]:
    """Open the history at `where` from `n` threads released together; what they raised (nothing: all opened)."""
    import threading

    from regression.history import History

    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def opener() -> None:
        try:
            barrier.wait()
            History(where)
        except BaseException as e:  # pragma: no cover - reported by the caller
            errors.append(e)

    threads = [threading.Thread(target=opener) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def queuing(run, message: bytes | None, to: tuple[str, ...] = ("a@x",)):
    """A run's completion that queues one mail (`record` of History.complete_run, as regression/alerts/lifecycle.py's
    recorder does)."""
    from regression.alerts.outbox import Mail, put

    return lambda db: put(db, Mail(run.run_id, run.builder, "regression", "farm@x", list(to), message))  # type: ignore[arg-type]


def delivered(box):
    """The messages the loopback SMTP server holds once Celery beat's delivery has passed (regression/tasks.py
    `deliver_alerts`, called as the beat calls it): runs and bisects only queue their mails."""
    from regression.tasks import deliver_alerts

    deliver_alerts()
    return box.messages
