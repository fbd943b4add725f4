"""The dashboard on a bad day (issue 47, items 3 and 14): a corrupt index blanks only its own section of the front
page, with one line saying why; a history database that is unreachable, locked or stopped makes the pages that read
it say the history is unavailable within `[regression] page_timeout` (the front page and a policy's page show
everything else; a page that is only the history answers a one-line 503), while the pages of the store and the
downloads, which never read the history, answer as always. The real app over the store tests/master/test_dashboard.py
builds; the history a real SQLite file or a real PostgreSQL server (tests/pgserver.py) locked by a session or
stopped with SIGSTOP. No assertion on how long anything took: only that every request answered, and what."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from farm.config import load_settings
from farm.errors import FarmError
from farm.objectstore import FileStore
from master.dashboard.app import create_app
from regression import database
from tests.master.test_dashboard import V1, fill_history, populate
from tests.servers import free_port

#: The pages that never read the history, and a download: each must answer 200 whatever the history does.
STORE_PAGES = ("/vocab/", f"/vocab/ir/{V1}/", "/policies/", "/datasets/", "/index.json",
               f"/store/vocab/ir/{V1}/vocab.json", "/store/policies/inline/latest/model.onnx")
#: Pages that are the history: a one-line 503 while it is unavailable.
HISTORY_PAGES = ("/regression/", "/regression/regression-inliner-size/", "/alerts/", "/alerts/index.json")


def _app(monkeypatch: pytest.MonkeyPatch, store: Path, history: Path | str):
    monkeypatch.setenv("MLGO_FARM_REGRESSION_PAGE_TIMEOUT", "1")
    return create_app(load_settings(), store=FileStore(store), history=history).test_client()


def _history_unavailable(c, why: str) -> None:
    """The front page and a policy's page with the history's one line in place of its rows; the store's pages,
    downloads included, as always; the history's own pages a one-line 503 that no cache keeps."""
    for url in ("/", "/index.html"):
        page = c.get(url)
        text = page.get_data(as_text=True)
        assert page.status_code == 200, (url, text[:300])
        note = text.split('id="overview-history-note">')[1].split("</p>")[0]
        assert note.startswith("The regression history is unavailable: history database ") and why in note, note
        assert "not known while the history is unavailable" in text and 'id="overview-vocab"' in text
        assert V1 not in text or "served" in text  # the vocabularies' section is there
    policy = c.get("/policies/inline/P1/").get_data(as_text=True)
    assert 'id="runs-note">The regression history is unavailable: ' in policy and why in policy
    for url in STORE_PAGES:
        assert c.get(url).status_code == 200, url
    for url in HISTORY_PAGES:
        r = c.get(url)
        text = r.get_data(as_text=True)
        assert r.status_code == 503 and text.startswith("503 Service Unavailable: history database "), (url, text)
        assert text.count("\n") == 1 and why in text and r.headers["Cache-Control"] == "no-store", (url, text)


def _history_back(c) -> None:
    page = c.get("/").get_data(as_text=True)
    assert "overview-history-note" not in page and "regression-inliner-size" in page and "1 untriaged" not in page
    for url in HISTORY_PAGES:
        assert c.get(url).status_code == 200, url


def test_a_corrupt_index_blanks_only_its_own_section_of_the_front_page(tmp_path: Path, monkeypatch) -> None:
    populate(tmp_path / "store")
    fill_history(tmp_path / "history.sqlite")
    c = _app(monkeypatch, tmp_path / "store", tmp_path / "history.sqlite")
    (tmp_path / "store/vocab/index.json").write_text("{not json")
    page = c.get("/").get_data(as_text=True)
    note = page.split('id="overview-vocab-note">')[1].split("</p>")[0]
    assert note.startswith("The vocabularies cannot be listed: vocab/index.json: ") and note.count("\n") == 0, note
    assert "regression-inliner-size" in page and "1 latest" in page and "overview-history-note" not in page

    (tmp_path / "store/policies/index.json").write_text("[" * 100_000)
    page = c.get("/").get_data(as_text=True)
    assert 'id="overview-policies-note">cannot be listed: policies/index.json: ' in page
    assert "overview-vocab-note" in page and "regression-inliner-size" in page


def test_an_unreachable_history_leaves_the_store_pages_and_the_front_page_working(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    populate(tmp_path / "store")
    nobody = f"postgresql://farm:secret-pw@127.0.0.1:{free_port()}/history"  # nothing listens there
    c = _app(monkeypatch, tmp_path / "store", nobody)
    _history_unavailable(c, "127.0.0.1")
    assert "secret-pw" not in c.get("/").get_data(as_text=True)


@pytest.fixture(scope="module")
def postgres() -> Iterator:
    from tests.pgserver import postgres_server

    with postgres_server() as server:
        yield server


@pytest.fixture
def pg_history(postgres, tmp_path: Path, monkeypatch) -> Iterator[tuple]:
    """(the app's test client, the history's URL) over a PostgreSQL history holding fill_history's runs."""
    populate(tmp_path / "store")
    url = postgres.create_database()
    fill_history(url)
    c = _app(monkeypatch, tmp_path / "store", url)
    _history_back(c)
    yield c, url
    database.dispose()


def test_a_history_locked_by_another_session_is_unavailable_not_a_minute_per_page(pg_history) -> None:
    """A session holding ACCESS EXCLUSIVE locks on the history's tables (a migration, a VACUUM FULL, a stuck
    transaction): each statement waits on it until the server cancels it at page_timeout."""
    import psycopg

    c, url = pg_history
    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql")) as locker:
        locker.execute("LOCK TABLE runs, alerts IN ACCESS EXCLUSIVE MODE")
        _history_unavailable(c, "canceling statement due to statement timeout")
    _history_back(c)  # the lock released (the transaction rolled back): the history again, nothing to restart


def _cluster_pids(url: str) -> list[int]:
    """The postmaster serving `url` and every process it started."""
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql")) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        postmaster = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                    children.append(int(entry))
    return [postmaster, *children]


@contextlib.contextmanager
def _stopped(pids: list[int]) -> Iterator[None]:
    try:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):  # a backend that has just exited
                os.kill(pid, signal.SIGSTOP)
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def test_a_stopped_server_is_unavailable_and_a_transaction_it_stops_answering_is_cut(pg_history) -> None:
    """The whole cluster stopped (SIGSTOP): a new connection is refused by its connect timeout; a transaction
    already connected when the server stopped answering (no server-side timeout runs then) is cut by the client at
    twice page_timeout, one line."""
    c, url = pg_history
    pids = _cluster_pids(url)
    with _stopped(pids):
        _history_unavailable(c, "history database")
    _history_back(c)

    limited = database.limited(url, 1)
    with pytest.raises(FarmError) as e, database.transaction(limited) as tx:
        tx.execute("SELECT 1")
        with _stopped(_cluster_pids(url)):  # this transaction's backend among them
            tx.execute("SELECT count(*) FROM runs")
    assert str(e.value) == f"history database {database.shown(limited)}: no answer within 2 s"
    assert "\n" not in str(e.value) and postgres_password(url) not in str(e.value)
    _history_back(c)


def postgres_password(url: str) -> str:
    return url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]


@pytest.fixture
def pg_master(postgres, monkeypatch) -> Iterator[tuple]:
    """A real master whose history is a PostgreSQL database holding fill_history's runs; its pages given 120 s
    (so that a page held by a lock is still held while the test looks); (port, history URL)."""
    from tests.master.test_dashboard_live import _run_master

    url = postgres.create_database()

    def fill(s) -> Path:
        fill_history(url)
        populate(s.var_dir / "store")
        return s.var_dir / "store"

    running = _run_master(monkeypatch, {"MLGO_FARM_REGRESSION_HISTORY_URL": url,
                                        "MLGO_FARM_REGRESSION_PAGE_TIMEOUT": "120"}, fill)
    port, *_ = next(running)
    try:
        yield port, url
    finally:
        running.close()
        database.dispose()


def test_on_the_master_downloads_never_queue_behind_pages_held_by_a_hung_history(pg_master) -> None:
    """Every thread of the pages' pool held by a page waiting on a locked history (twice as many pages asked), a
    download still answers at once: downloads have a pool of their own (master/dashboard/mount.py). Released, the
    held pages answer."""
    import select

    import psycopg

    from master.dashboard.mount import POOL_THREADS
    from tests.master.test_dashboard_live import DASH, _get, _request
    from tests.servers import wait_until

    port, url = pg_master
    plain = url.replace("postgresql+psycopg", "postgresql")
    with psycopg.connect(plain) as locker, psycopg.connect(plain, autocommit=True) as watcher:
        locker.execute("LOCK TABLE runs, alerts IN ACCESS EXCLUSIVE MODE")
        pages = [_request(port, f"{DASH}regression/") for _ in range(2 * POOL_THREADS)]
        try:
            def waiting() -> int:
                return watcher.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()[0]

            wait_until(lambda: waiting() >= POOL_THREADS, 60, "every page thread waiting on the locked history")
            status, body, _ = _get(port, f"{DASH}store/vocab/ir/{V1}/vocab.json")
            assert status == 200 and body.startswith(b"{")
            assert select.select(pages, [], [], 0)[0] == []  # the pages still wait (120 s each): the scene held
        except BaseException:
            for sock in pages:
                sock.close()
            raise
    # the lock released (its transaction rolled back): every held page answers, with the history
    for sock in pages:
        with sock:
            assert sock.recv(12).startswith(b"HTTP/1.1 200")
