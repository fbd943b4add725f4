"""Where the regression history lives: an SQLite file on this machine (the embedded default) or a PostgreSQL
database that the builders of several machines share, both through SQLAlchemy Core.

One SQLite file on shared storage is not safe across machines (its locks are only as good as the network file
system's), so a farm spanning machines points `[regression] history_url` at PostgreSQL instead; a plain path (or
an empty setting) keeps the file. Every statement of the history and its stores is written once for both: named
`:params`, `INSERT ... ON CONFLICT ... DO UPDATE`, `RETURNING id`, no `rowid`, no `json_extract`, no PRAGMA outside
SQLite-only code (this module's set-up, the pre-alembic files' checks in regression/migrations.py). The schema
and its versions are alembic's (regression/migrations.py).

SQLite keeps what the farm always had: WAL (readers never wait for a writer), a 60 s busy timeout (builders
writing at once queue up), and real transactions: pysqlite's own transaction handling is turned off and `BEGIN`
is emitted on SQLAlchemy's begin (SQLAlchemy's documented recipe), `BEGIN IMMEDIATE` where a writer must hold the
lock before it reads (every writing transaction of the history, and a schema upgrade: a deferred one that read
first could not write once another writer had committed). One engine per URL per process: the dashboard opens the
history on every page, and its pool keeps the connections. A URL's password is never shown: `shown(url)` hides
it, and every database error becomes one FarmError line naming the URL without it.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.engine import URL, Connection, Engine

from farm.errors import FarmError, HistoryError, InputError, first_line
from farm.secrets import redact

#: The drivers the farm speaks (a `postgresql://` or `postgres://` URL gets psycopg 3).
SQLITE, POSTGRESQL = "sqlite", "postgresql"
_DRIVERS = {"sqlite": "sqlite", "sqlite+pysqlite": "sqlite", "postgresql": "postgresql+psycopg",
            "postgres": "postgresql+psycopg", "postgresql+psycopg": "postgresql+psycopg"}
#: Seconds a writer waits for SQLite's lock (several builders finishing at once) and for a PostgreSQL connection.
BUSY_TIMEOUT = 60

_engines: dict[str, Engine] = {}
_lock = threading.Lock()


def _forget_in_child() -> None:
    """A forked child (a Celery prefork worker) makes its own connections: the parent's stay the parent's."""
    global _lock
    _lock = threading.Lock()
    for made in _engines.values():
        made.dispose(close=False)
    _engines.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def url_of(where: str | Path | URL) -> URL:
    """The database URL of a history: a URL as given (`postgresql://` means psycopg 3), a plain path the SQLite file.
    """
    if isinstance(where, URL):
        url = where
    else:
        text = str(where).strip()
        if "://" not in text:
            if not text:
                raise InputError("the history database: no path or URL given")
            return URL.create("sqlite", database=str(Path(text).expanduser().absolute()))
        if re.split(r"[/?#]", text.split("://", 1)[1], maxsplit=1)[0].count("@") > 1:
            # which `@` ends the password is a guess (SQLAlchemy takes the first, the host then holds the rest)
            raise InputError(f"history database {redact(text)}: two '@' before the host: percent-encode an '@' of the"
                             " user or password as %40")
        try:
            url = sa.make_url(text)
        except exc.ArgumentError:
            raise InputError(f"history database {redact(text)}: not a database URL") from None
    driver = _DRIVERS.get(url.drivername)
    if driver is None:
        raise InputError(f"history database {shown(url)}: the farm keeps its history in SQLite (a path or "
                         "sqlite:///PATH) or PostgreSQL (postgresql://USER@HOST/DB)")
    if driver == "sqlite" and url.database in (None, "", ":memory:"):
        raise InputError(f"history database {shown(url)}: name a file (an in-memory database is no history)")
    return url.set(drivername=driver)


def shown(url: URL | str) -> str:
    """The URL as messages show it: never its password."""
    if isinstance(url, URL):
        if url.get_backend_name() == SQLITE and url.database:
            return url.database  # a file is named by its path, as it always was
        return url.render_as_string(hide_password=True)
    return redact(url)


def backend(url: URL) -> str:
    return url.get_backend_name()


def engine(url: URL) -> Engine:
    """The process's engine of `url` (made on first use)."""
    key = url.render_as_string(hide_password=False)
    with _lock:
        found = _engines.get(key)
        if found is None:
            found = _engines[key] = _make(url)
    return found


def dispose(url: URL | None = None) -> None:
    """Close the pooled connections (of one URL, or all): tests that drop a database, a process that forks."""
    with _lock:
        keys = [url.render_as_string(hide_password=False)] if url is not None else list(_engines)
        for key in keys:
            found = _engines.pop(key, None)
            if found is not None:
                found.dispose()


def _make(url: URL) -> Engine:
    if backend(url) == SQLITE:
        made = sa.create_engine(url, connect_args={"timeout": BUSY_TIMEOUT})

        @event.listens_for(made, "connect")
        def _connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # pysqlite begins nothing itself: the begin event does
            dbapi_connection.execute("PRAGMA journal_mode=WAL")

        @event.listens_for(made, "begin")
        def _begin(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("immediate") else "BEGIN")

        return made
    return sa.create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": BUSY_TIMEOUT})


def error(url: URL, e: BaseException) -> FarmError:
    """A database error as one line naming the history's URL (without its password, nor the password anywhere)."""
    if isinstance(e, FarmError):
        return e
    cause = getattr(e, "orig", None) or e
    text = first_line(cause)
    if url.password:
        text = text.replace(str(url.password), "***")
    return HistoryError(f"history database {shown(url)}: {redact(text)}")


class Rows(list):
    """A statement's rows, read at once (the history's answers are small): `fetchone`, `fetchall`, iteration."""

    def fetchone(self) -> Record | None:
        return self[0] if self else None

    def fetchall(self) -> list[Record]:
        return list(self)


class Record(tuple):
    """A row by position (`row[0]`) or by column (`row["id"]`, `dict(row)`), as sqlite3.Row was."""

    _index: dict[str, int]

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._index)


class Tx:
    """One transaction on the history's database, shared by the stores that write with it (regression/alertstore.py,
    regression/outcome.py): `execute(sql, {"name": value})` with named `:params`; a list of dicts runs it per row."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.backend = conn.dialect.name

    def execute(self, sql: str, params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None) -> Rows:
        if isinstance(params, Sequence) and not params:
            return Rows()
        result = self.conn.execute(sa.text(sql), params)  # type: ignore[arg-type]
        if not result.returns_rows:
            return Rows()
        index = {k: i for i, k in enumerate(result.keys())}
        rows = Rows()
        for row in result:
            rec = Record(row)
            rec._index = index
            rows.append(rec)
        return rows


def serialise(tx: Tx, name: str) -> None:
    """Hold `name`'s lock until `tx` ends, so transactions that decide by what they read (a builder's transition into
    regression: History.complete_run) take turns. PostgreSQL's READ COMMITTED lets two of them read the same state
    and both act on it: a transaction-scoped advisory lock keyed on the name makes the second wait for the first's
    commit, then read what it wrote. SQLite needs none: its writing transactions (`BEGIN IMMEDIATE`) already take
    turns."""
    if tx.backend == "postgresql":
        key = int.from_bytes(hashlib.sha256(f"mlgo-farm:{name}".encode()).digest()[:8], "big", signed=True)
        tx.execute("SELECT pg_advisory_xact_lock(:key)", {"key": key})


@contextmanager
def transaction(url: URL, immediate: bool = False) -> Iterator[Tx]:
    """One transaction: committed when the block ends, rolled back when it raises; database errors become one
    FarmError line. `immediate`: on SQLite, take the write lock before the first read."""
    try:
        with engine(url).connect() as conn:
            if immediate:
                conn = conn.execution_options(immediate=True)
            with conn.begin():
                yield Tx(conn)
    except exc.SQLAlchemyError as e:
        raise error(url, e) from None
