"""History files as farms of before alembic wrote them (regression/migrations.py `LEGACY`): the first schema
(`user_version` 0, maybe without the columns later added on open), then the statements of versions 1 and 2."""

from __future__ import annotations

import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL, builder TEXT NOT NULL,
    started REAL NOT NULL, finished REAL,
    status TEXT NOT NULL,
    verdict TEXT,
    llvm_version TEXT, llvm_commit TEXT, policy_id TEXT, vocab_version TEXT,
    report_url TEXT, error TEXT, config TEXT NOT NULL DEFAULT '{}', llvm_package TEXT,
    UNIQUE (run_id, builder));
CREATE TABLE IF NOT EXISTS measurements (
    run_id TEXT NOT NULL, builder TEXT NOT NULL, subject TEXT NOT NULL, kind TEXT NOT NULL,
    metric TEXT NOT NULL, policy TEXT NOT NULL, value REAL NOT NULL, samples TEXT NOT NULL DEFAULT '[]',
    unit TEXT NOT NULL DEFAULT '', llvm_commit TEXT, policy_id TEXT, vocab_version TEXT, llvm_package TEXT,
    PRIMARY KEY (run_id, builder, subject, metric, policy));
CREATE TABLE IF NOT EXISTS verdicts (
    run_id TEXT NOT NULL, builder TEXT NOT NULL, subject TEXT NOT NULL, kind TEXT NOT NULL,
    metric TEXT NOT NULL, baseline TEXT NOT NULL, base_value REAL, value REAL NOT NULL,
    delta_pct REAL, p_value REAL, verdict TEXT NOT NULL, gating INTEGER NOT NULL,
    PRIMARY KEY (run_id, builder, subject, metric, baseline));
CREATE TABLE IF NOT EXISTS skipped (
    run_id TEXT NOT NULL, builder TEXT NOT NULL, subject TEXT NOT NULL, variant TEXT NOT NULL,
    reason TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL, builder TEXT NOT NULL, kind TEXT NOT NULL,
    sender TEXT NOT NULL, recipients TEXT NOT NULL, message BLOB NOT NULL,
    created REAL NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT, sent REAL);
"""

#: The statements of the old versions 1 (alerts) and 2 (measurements.sha256).
VERSIONS = (
    (
        """CREATE TABLE alerts (
            id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, builder TEXT NOT NULL, bad_run TEXT NOT NULL,
            good_run TEXT, created REAL NOT NULL, state TEXT NOT NULL, changed REAL NOT NULL, closed_by TEXT,
            inputs TEXT NOT NULL DEFAULT '{}', group_id INTEGER, bisect TEXT, UNIQUE (builder, bad_run, kind))""",
        "CREATE INDEX alerts_state ON alerts (state, builder)",
        """CREATE TABLE alert_states (
            alert_id INTEGER NOT NULL REFERENCES alerts (id),
            at REAL NOT NULL, state TEXT NOT NULL, who TEXT NOT NULL, note TEXT NOT NULL DEFAULT '')""",
        "CREATE INDEX alert_states_alert ON alert_states (alert_id, at)",
        "ALTER TABLE outbox ADD COLUMN alert_id INTEGER",
        "ALTER TABLE outbox ADD COLUMN hold_until REAL",
    ),
    ("ALTER TABLE measurements ADD COLUMN sha256 TEXT",),
)


def old_database(path: Path, version: int = 0, package_columns: bool = True) -> None:
    """A history file of `version` with one complete run `old` of builder b1 (and a bisect's re-run `old-bisect`);
    at version 1 and above, an alert on it with two changes of state at the same second, in rowid order."""
    schema = SCHEMA if package_columns else SCHEMA.replace(", llvm_package TEXT", "")
    db = sqlite3.connect(path)
    db.executescript(schema)
    db.execute("INSERT INTO runs (run_id, builder, started, status, verdict, policy_id) "
               "VALUES ('old', 'b1', 1.0, 'complete', 'regression', 'p1')")
    db.execute("INSERT INTO runs (run_id, builder, started, status, verdict, policy_id, config) "
               """VALUES ('old-bisect', 'b1', 2.0, 'complete', 'ok', 'p0', '{"bisect": {"alert": 1}}')""")
    for statements in VERSIONS[:version]:
        for sql in statements:
            db.execute(sql)
    if version >= 1:
        db.execute("INSERT INTO alerts (kind, builder, bad_run, created, state, changed) "
                   "VALUES ('regression', 'b1', 'old', 5.0, 'acknowledged', 5.0)")
        for state in ("untriaged", "investigating", "acknowledged"):  # the same second: rowid is the order
            db.execute("INSERT INTO alert_states (alert_id, at, state, who) VALUES (1, 5.0, ?, 'x')", (state,))
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()
