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
first could not write once another writer had committed). One engine per URL per process: a builder opens the
history many times a run, and the engine's pool keeps the connections. A URL's password is never shown:
`shown(url)` hides it, and every database error becomes one FarmError line naming the URL without it.

A reader that must answer soon (the dashboard's pages: a hung server held every page, and the downloads queued
behind them, 60 s per request) opens the history through `limited(where, seconds)`: a URL of its own engine whose
connections give up connecting after `seconds`, whose every statement the server cancels after `seconds`
(PostgreSQL's statement_timeout: a table locked by a migration or a VACUUM FULL), and whose transactions are cut
by the client after DEADLINE_FACTOR times that (a server that answers nothing at all: stopped, or behind a network
partition, where no server-side timeout runs and TCP would wait a quarter of an hour). Its connections are not
pooled: each transaction connects anew, so none is left to a dead server between requests.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import socket
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
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

#: The URL query key that asks for a limited engine (read by the farm, never sent to the driver): see `limited`.
_LIMIT = "mlgo_farm_limit"
#: A limited transaction is cut by the client after this many times its limit (the server's own timeouts first).
DEADLINE_FACTOR = 2

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


def limited(where: str | Path | URL, seconds: float) -> URL:
    """`where`'s URL, for a reader that must answer within about `seconds` (see the module's docstring)."""
    if not (math.isfinite(seconds) and seconds > 0):
        raise InputError(f"a history database's time limit must be a positive number of seconds, not {seconds!r}")
    return url_of(where).update_query_dict({_LIMIT: f"{seconds:g}"})


def limit_of(url: URL) -> float | None:
    """The seconds `limited` gave `url` (None: not limited)."""
    value = url.query.get(_LIMIT)
    return float(value) if isinstance(value, str) else None


def shown(url: URL | str) -> str:
    """The URL as messages show it: never its password."""
    if isinstance(url, URL):
        url = url.difference_update_query([_LIMIT])
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
    limit = limit_of(url)
    url = url.difference_update_query([_LIMIT])
    if backend(url) == SQLITE:
        made = sa.create_engine(url, connect_args={"timeout": limit or BUSY_TIMEOUT})

        @event.listens_for(made, "connect")
        def _connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # pysqlite begins nothing itself: the begin event does
            dbapi_connection.execute("PRAGMA journal_mode=WAL")

        @event.listens_for(made, "begin")
        def _begin(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("immediate") else "BEGIN")

        return made
    if limit is None:
        return sa.create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": BUSY_TIMEOUT})
    options = " ".join(filter(None, [str(url.query.get("options") or ""),
                                     f"-c statement_timeout={math.ceil(limit * 1000)}"]))
    return sa.create_engine(url, poolclass=sa.pool.NullPool,
                            connect_args={"connect_timeout": max(1, math.ceil(limit)), "options": options})


class _Deadline:
    """Cuts a limited transaction's connection when it has taken DEADLINE_FACTOR times its limit: the socket is shut
    down under the blocked read, which then fails (SQLite's connections have no socket: their limit is the busy
    timeout)."""

    def __init__(self, conn: Connection, seconds: float) -> None:
        self.seconds = seconds * DEADLINE_FACTOR
        self.passed = False
        self._done = False
        self._lock = threading.Lock()  # the socket is cut only while the connection holds it open
        fileno = getattr(getattr(conn.connection.dbapi_connection, "pgconn", None), "socket", None)
        self._timer = threading.Timer(self.seconds, self._cut, (fileno,)) if isinstance(fileno, int) else None
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def _cut(self, fileno: int) -> None:
        with self._lock:
            if self._done:
                return
            self.passed = True
            with socket.socket(fileno=os.dup(fileno)) as sock, suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        """Before the connection is closed (its descriptor's number may be another file's afterwards)."""
        with self._lock:
            self._done = True
        if self._timer is not None:
            self._timer.cancel()


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
    """One transaction on the history's database, shared by the stores that write with it (regression/history.py,
    regression/alerts/records.py and outbox.py): `execute(sql, {"name": value})` with named `:params`; a list of
    dicts runs it per row."""

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
    limit, deadline = limit_of(url), None
    try:
        with engine(url).connect() as conn:
            deadline = _Deadline(conn, limit) if limit is not None else None
            try:
                if immediate:
                    conn = conn.execution_options(immediate=True)
                with conn.begin():
                    yield Tx(conn)
            finally:
                if deadline is not None:
                    deadline.cancel()
    except exc.SQLAlchemyError as e:
        if deadline is not None and deadline.passed:
            raise HistoryError(f"history database {shown(url)}: no answer within {deadline.seconds:g} s") from None
        raise error(url, e) from None
