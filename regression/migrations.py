"""The history database's schema versions: each migration upgrades an existing SQLite file in place.

The first schema (runs, measurements, verdicts, skipped, outbox: regression/history.py's SCHEMA, with its
added columns) is version 0, which every database made before versions were counted has. A database's version
is SQLite's `PRAGMA user_version`; `migrate` applies the migrations it lacks, in order, in one transaction
(two builders opening an old file at once: the second finds it upgraded). A file of a newer farm than this one
is refused rather than written to.

Version 1: alerts as records with a life (regression/alertstore.py): `alerts`, one per transition into
regression (or an improvement), and `alert_states`, every change of an alert's state with who, when and a note;
the outbox's `alert_id` and `hold_until` (a regression mail held `[alerts] group_wait` minutes, so that the
alerts of other builders with the same change join it in one summary).
Version 2: `measurements.sha256`, the digest of the object file or binary a row measured (regression/compare.py):
rows of byte-identical builds are "no change" without judging their numbers (LNT's binary hash check).

An alert has room for what later work attaches: `group_id` (alerts of several builders sharing a change of
inputs) and `bisect` (JSON: the culprit input and its evidence runs, regression/bisectrun.py).
"""

from __future__ import annotations

import sqlite3

from farm.errors import FarmError

#: Each migration's statements; the schema's version is the number of migrations applied.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE alerts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,               -- regression | improvement
            builder TEXT NOT NULL,
            bad_run TEXT NOT NULL,            -- the first bad run (for an improvement: the better run)
            good_run TEXT,                    -- the last good run before it (none: the builder's first run)
            created REAL NOT NULL,
            state TEXT NOT NULL,
            changed REAL NOT NULL,            -- when the state last changed
            closed_by TEXT,                   -- the run that found the builder recovered (detected-fixed)
            inputs TEXT NOT NULL DEFAULT '{}',  -- JSON: the inputs that changed between good_run and bad_run
            group_id INTEGER,                 -- alerts of several builders with overlapping changed inputs
            bisect TEXT,                      -- JSON: a bisect's result (the culprit input, its evidence runs)
            UNIQUE (builder, bad_run, kind))""",
        "CREATE INDEX alerts_state ON alerts (state, builder)",
        """CREATE TABLE alert_states (
            alert_id INTEGER NOT NULL REFERENCES alerts (id),
            at REAL NOT NULL, state TEXT NOT NULL, who TEXT NOT NULL, note TEXT NOT NULL DEFAULT '')""",
        "CREATE INDEX alert_states_alert ON alert_states (alert_id, at)",
        # a queued mail's alert (a group's summary replaces its mates' pending one) and how long it is held
        "ALTER TABLE outbox ADD COLUMN alert_id INTEGER",
        "ALTER TABLE outbox ADD COLUMN hold_until REAL",
    ),
    (
        # the sha256 of what a row measured (an object file, a binary): byte-identical builds are "no change"
        "ALTER TABLE measurements ADD COLUMN sha256 TEXT",
    ),
)

VERSION = len(MIGRATIONS)


def version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def migrate(db: sqlite3.Connection, where: str) -> int:
    """Bring `db` to VERSION in one transaction (committed by the caller's `with db:`); returns the version found.
    A database at VERSION is only read (the dashboard opens the history on every page)."""
    found = version(db)
    if found < VERSION:
        db.execute("BEGIN IMMEDIATE")  # the second of two openers waits here, then finds nothing left to do
        found = version(db)
    if found > VERSION:
        raise FarmError(f"history database {where} has schema version {found}, newer than this farm's {VERSION}: "
                        "upgrade the farm on this host")
    for statements in MIGRATIONS[found:]:
        for sql in statements:
            db.execute(sql)
    if found != VERSION:
        db.execute(f"PRAGMA user_version = {VERSION}")
    return found
