"""The history database's schema versions: alembic revisions (regression/schema/versions/), applied on open.

Alembic is the tool made for it (Buildbot's own database uses it), and it speaks SQLite and PostgreSQL alike. The
revisions, oldest first: `0001_base` (runs, measurements, verdicts, skipped, outbox), `0002_alerts` (alerts and
their states, the outbox's alert and hold), `0003_sha256` (what a measurement measured), `0004_portable` (what
only SQLite could answer, as columns: a bisect's re-run, the order of an alert's states). Each file says why.

`ensure` runs on every open: a database at the head revision is only read (the dashboard opens the history on
every page). Otherwise it upgrades in one transaction holding the upgrade lock (SQLite: `BEGIN IMMEDIATE`;
PostgreSQL: `pg_advisory_xact_lock`), reading the revision again under it, so of two builders opening an old
database at once, the second finds it upgraded. A file made before alembic (no `alembic_version` table) has
SQLite's `PRAGMA user_version` 0, 1 or 2 (`LEGACY`): it is stamped with the matching revision and upgraded in
place; it is then given `user_version` 3, which a farm of before alembic refuses as newer than itself. A database
of a newer farm (a revision this one does not know) is refused, never written to.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import URL

from farm.errors import FarmError
from regression import database
from regression.database import Tx

#: The alembic environment: env.py and the revisions.
SCHEMA_DIR = Path(__file__).parent / "schema"
#: A pre-alembic file's `PRAGMA user_version` -> the revision its schema is.
LEGACY = ("0001_base", "0002_alerts", "0003_sha256")
#: The `user_version` of an SQLite file upgraded by alembic: above LEGACY, so a farm of before refuses it.
LEGACY_REFUSED = len(LEGACY)
#: Columns the first release's farm added on open (a pre-alembic file at `user_version` 0 may lack them).
_ADDED_COLUMNS = (("runs", "llvm_package"), ("measurements", "llvm_package"))
#: pg_advisory_xact_lock's key of the history's upgrade (any constant: "mlgo" in ASCII).
LOCK_KEY = 0x6D6C676F

logging.getLogger("alembic").setLevel(logging.WARNING)  # one line per revision applied is alembic's, not ours


@functools.cache
def _script():
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(SCHEMA_DIR))


def head() -> str:
    return str(_script().get_current_head())


def revisions() -> list[str]:
    """Every revision, oldest first."""
    return [s.revision for s in reversed(list(_script().walk_revisions()))]


def found(tx: Tx, where: str) -> str | None:
    """The revision the database is at: alembic's, else a pre-alembic file's by its `user_version`; None: empty."""
    inspector = sa.inspect(tx.conn)
    if inspector.has_table("alembic_version"):
        rows = tx.execute("SELECT version_num FROM alembic_version")
        if len(rows) != 1:
            raise FarmError(f"history database {where}: {len(rows)} schema revisions in alembic_version, expected 1")
        return str(rows[0][0])
    if not inspector.has_table("runs"):
        return None
    if tx.backend != database.SQLITE:
        raise FarmError(f"history database {where} has a history's tables but no schema revision (alembic_version)")
    version = int(tx.execute("PRAGMA user_version")[0][0])
    if version >= len(LEGACY):
        raise FarmError(f"history database {where} has schema version {version}, newer than this farm's: "
                        "upgrade the farm on this host")
    return LEGACY[version]


def _check(revision: str | None, where: str) -> None:
    if revision is not None and revision not in revisions():
        raise FarmError(f"history database {where} is at schema revision {revision}, which this farm does not know "
                        f"(its newest is {head()}): a newer farm wrote it; upgrade the farm on this host")


def ensure(url: URL) -> str | None:
    """Bring the database at `url` to the head revision; returns the revision it was at (None: it was empty)."""
    where = database.shown(url)
    with database.transaction(url) as tx:
        before = found(tx, where)
        legacy = before is not None and not sa.inspect(tx.conn).has_table("alembic_version")
    _check(before, where)
    if before == head() and not legacy:
        return before
    with database.transaction(url, immediate=True) as tx:
        if tx.backend == database.POSTGRESQL:
            tx.execute("SELECT pg_advisory_xact_lock(:key)", {"key": LOCK_KEY})
        before = found(tx, where)  # again, under the lock: another opener may have upgraded it meanwhile
        _check(before, where)
        _upgrade(tx, before)
    return before


def _upgrade(tx: Tx, before: str | None) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(SCHEMA_DIR))
    cfg.attributes["connection"] = tx.conn
    inspector = sa.inspect(tx.conn)
    if before is not None and not inspector.has_table("alembic_version"):  # a file of before alembic
        for table, column in _ADDED_COLUMNS:
            if column not in {c["name"] for c in inspector.get_columns(table)}:
                tx.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")
        command.stamp(cfg, before)
    if before != head():
        command.upgrade(cfg, "head")
    if tx.backend == database.SQLITE:
        tx.execute(f"PRAGMA user_version = {LEGACY_REFUSED}")
