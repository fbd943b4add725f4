"""Regression history in SQLite: runs, one row per run/builder/subject/metric/policy, verdicts, alert outbox
(the alerts' records and states: regression/alertstore.py; the schema's versions: regression/migrations.py).

Every measurement row carries the LLVM commit, the LLVM package version (Debian's clang has no
commit, so a row is never "commit unknown"), the policy id (a published policy's version) and the
vocabulary version of its run. Alerts are written to an outbox in the same transaction that
completes the run, so a run's result and its pending alert are never lost, even when the mail server is down.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from farm.errors import FarmError, InputError
from regression import migrations
from regression.rules import Comparison

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL, builder TEXT NOT NULL,
    started REAL NOT NULL, finished REAL,
    status TEXT NOT NULL,             -- running | complete | failed
    verdict TEXT,                     -- ok | regression (complete runs)
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


@dataclass(frozen=True)
class Run:
    seq: int
    run_id: str
    builder: str
    started: float
    finished: float | None
    status: str
    verdict: str | None
    llvm_version: str | None
    llvm_commit: str | None
    policy_id: str | None
    vocab_version: str | None
    report_url: str | None
    error: str | None
    config: dict = field(default_factory=dict)
    #: the LLVM package and its version when the toolchain came from one (`clang-22 1:22.1.8-1~deb12u1`)
    llvm_package: str | None = None

    @property
    def llvm_label(self) -> str:
        """The LLVM commit (12 digits), else the package version, else the LLVM version."""
        return (self.llvm_commit or "")[:12] or self.llvm_package or self.llvm_version or "-"


#: What keeps a bisect's re-runs (regression/bisectrun.py: `config.bisect` names their alert) out of the builder's
#: runs, trends and baselines: they answer one alert's question and are no night of the builder.
NOT_BISECT = " AND json_extract(config, '$.bisect') IS NULL"

#: Columns added after the first release: (table, column, type), added to older databases on open.
_ADDED_COLUMNS = (("runs", "llvm_package", "TEXT"), ("measurements", "llvm_package", "TEXT"))


@dataclass(frozen=True)
class Measurement:
    subject: str
    kind: str  # module | binary | total | workload | build
    metric: str
    policy: str  # heuristic | policy
    value: float
    samples: tuple[float, ...] = ()
    unit: str = ""
    #: the sha256 of the object file or binary measured (a workload's: its binary's); None when not known
    sha256: str | None = None


@dataclass(frozen=True)
class Skipped:
    subject: str
    variant: str
    reason: str


@dataclass(frozen=True)
class OutboxMessage:
    id: int
    run_id: str
    builder: str
    kind: str
    sender: str
    recipients: list[str]
    message: bytes
    attempts: int
    last_error: str | None
    sent: float | None
    #: the alert it tells of (regression/alertstore.py) and until when it is held for the alert's group mates
    alert_id: int | None = None
    hold_until: float | None = None


def _run(row: sqlite3.Row) -> Run:
    d = dict(row)
    d["config"] = json.loads(d["config"] or "{}")
    return Run(**d)


class History:
    """The history database (one file; safe for several builders writing at once)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.executescript(SCHEMA)
                for table, column, kind in _ADDED_COLUMNS:
                    if column not in {r["name"] for r in db.execute(f"PRAGMA table_info({table})")}:
                        db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            with self._connect() as db:
                migrations.migrate(db, str(self.path))
        except (OSError, sqlite3.Error) as e:
            raise FarmError(f"history database {self.path}: {e}") from None

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=60)
        db.row_factory = sqlite3.Row
        try:
            db.execute("PRAGMA journal_mode=WAL")
            with db:  # one transaction: commit on success, roll back on error
                yield db
        finally:
            db.close()

    def transaction(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """One transaction on the database, for the stores that share its file (regression/alertstore.py)."""
        return self._connect()

    # --- runs -------------------------------------------------------------------------------
    def start_run(self, run_id: str, builder: str, *, llvm_version: str | None, llvm_commit: str | None,
                  policy_id: str, vocab_version: str | None, config: dict | None = None,
                  llvm_package: str | None = None) -> Run:
        """Record a new run as `running`; a run id can be reused only if its earlier attempt failed."""
        with self._connect() as db:
            old = db.execute("SELECT status FROM runs WHERE run_id=? AND builder=?", (run_id, builder)).fetchone()
            if old is not None and old["status"] != "failed":
                raise InputError(f"run {run_id} of builder {builder} already exists ({old['status']})")
            if old is not None:
                for table in ("runs", "measurements", "verdicts", "skipped"):
                    db.execute(f"DELETE FROM {table} WHERE run_id=? AND builder=?", (run_id, builder))
            db.execute(
                "INSERT INTO runs (run_id, builder, started, status, llvm_version, llvm_commit, policy_id,"
                " vocab_version, config, llvm_package) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, builder, time.time(), "running", llvm_version, llvm_commit, policy_id, vocab_version,
                 json.dumps(config or {}, sort_keys=True), llvm_package),
            )
        return self.run(run_id, builder)

    def run(self, run_id: str, builder: str) -> Run:
        with self._connect() as db:
            row = db.execute("SELECT * FROM runs WHERE run_id=? AND builder=?", (run_id, builder)).fetchone()
        if row is None:
            raise InputError(f"no run {run_id!r} of builder {builder!r} in {self.path}")
        return _run(row)

    def runs(self, builder: str | None = None, limit: int | None = None, upto_seq: int | None = None,
             bisect: bool = False) -> list[Run]:
        """Runs oldest first (the newest `limit` of them), optionally only one builder's, up to `upto_seq`; a
        bisect's re-runs only with `bisect` (they are no night of the builder: not in its trend, not a baseline)."""
        sql, args = "SELECT * FROM runs WHERE 1=1" + ("" if bisect else NOT_BISECT), []
        if builder is not None:
            sql += " AND builder=?"
            args.append(builder)
        if upto_seq is not None:
            sql += " AND seq<=?"
            args.append(upto_seq)
        sql += " ORDER BY seq DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._connect() as db:
            rows = db.execute(sql, args).fetchall()
        return [_run(r) for r in reversed(rows)]

    def latest_run(self, builder: str) -> Run:
        runs = self.runs(builder, limit=1)
        if not runs:
            raise InputError(f"no runs of builder {builder!r} in {self.path}")
        return runs[0]

    def builders(self) -> list[str]:
        """The builders with at least one run (any status), sorted."""
        with self._connect() as db:
            return [r[0] for r in db.execute("SELECT DISTINCT builder FROM runs ORDER BY builder")]

    def previous_run(self, run: Run, verdict: str | None = None) -> Run | None:
        """The last complete run of the same builder before `run` (with that verdict, if given); never a bisect's
        re-run."""
        sql = "SELECT * FROM runs WHERE builder=? AND seq<? AND status='complete'" + NOT_BISECT
        args: list = [run.builder, run.seq]
        if verdict is not None:
            sql += " AND verdict=?"
            args.append(verdict)
        with self._connect() as db:
            row = db.execute(sql + " ORDER BY seq DESC LIMIT 1", args).fetchone()
        return _run(row) if row else None

    def fail_run(self, run: Run, error: str) -> None:
        with self._connect() as db:
            db.execute("UPDATE runs SET status='failed', error=?, finished=? WHERE seq=?",
                       (error, time.time(), run.seq))

    def complete_run(self, run: Run, verdict: str, report_url: str | None, alert: tuple | None = None,
                     record: Callable[[sqlite3.Connection], tuple | None] | None = None) -> None:
        """Mark the run complete and, in the same transaction, queue its alert `(kind, sender, to, message)` (and
        optionally `alert_id, hold_until`); `record(db)`, in that transaction too, records the alert's life
        (regression/alertstore.py) and returns the message to queue, if any."""
        with self._connect() as db:
            db.execute("UPDATE runs SET status='complete', verdict=?, report_url=?, finished=? WHERE seq=?",
                       (verdict, report_url, time.time(), run.seq))
            if record is not None:
                alert = record(db)
            if alert is not None:
                kind, sender, recipients, message, alert_id, hold_until = (*alert, None, None)[:6]
                db.execute(
                    "INSERT INTO outbox (run_id, builder, kind, sender, recipients, message, created, alert_id,"
                    " hold_until) VALUES (?,?,?,?,?,?,?,?,?)",
                    (run.run_id, run.builder, kind, sender, json.dumps(recipients), message, time.time(), alert_id,
                     hold_until),
                )

    def set_report_url(self, run: Run, report_url: str | None) -> None:
        """Point a run at where its report really is (after a publication failed)."""
        with self._connect() as db:
            db.execute("UPDATE runs SET report_url=? WHERE seq=?", (report_url, run.seq))

    # --- results ----------------------------------------------------------------------------
    def add_measurements(self, run: Run, rows: Iterable[Measurement]) -> None:
        with self._connect() as db:
            db.executemany(
                "INSERT OR REPLACE INTO measurements (run_id, builder, subject, kind, metric, policy, value, samples,"
                " unit, llvm_commit, policy_id, vocab_version, llvm_package, sha256)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(run.run_id, run.builder, m.subject, m.kind, m.metric, m.policy, float(m.value),
                  json.dumps(list(m.samples)), m.unit, run.llvm_commit, run.policy_id, run.vocab_version,
                  run.llvm_package, m.sha256) for m in rows],
            )

    def measurements(self, run: Run, policy: str | None = None) -> list[Measurement]:
        sql = ("SELECT subject, kind, metric, policy, value, samples, unit, sha256 FROM measurements"
               " WHERE run_id=? AND builder=?")
        args: list = [run.run_id, run.builder]
        if policy is not None:
            sql += " AND policy=?"
            args.append(policy)
        with self._connect() as db:
            rows = db.execute(sql + " ORDER BY subject, metric, policy", args).fetchall()
        return [Measurement(r["subject"], r["kind"], r["metric"], r["policy"], r["value"],
                            tuple(json.loads(r["samples"])), r["unit"], r["sha256"]) for r in rows]

    def add_skipped(self, run: Run, items: Iterable[Skipped]) -> None:
        with self._connect() as db:
            db.executemany("INSERT INTO skipped VALUES (?,?,?,?,?)",
                           [(run.run_id, run.builder, s.subject, s.variant, s.reason) for s in items])

    def skipped(self, run: Run) -> list[Skipped]:
        with self._connect() as db:
            rows = db.execute("SELECT subject, variant, reason FROM skipped WHERE run_id=? AND builder=?"
                              " ORDER BY subject, variant", (run.run_id, run.builder)).fetchall()
        return [Skipped(**dict(r)) for r in rows]

    def add_verdicts(self, run: Run, comparisons: Iterable[Comparison]) -> None:
        with self._connect() as db:
            db.executemany(
                "INSERT OR REPLACE INTO verdicts VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [(run.run_id, run.builder, c.subject, c.kind, c.metric, c.baseline, c.base_value, c.value,
                  None if c.delta_pct is None or c.delta_pct == float("inf") else c.delta_pct, c.p_value,
                  c.verdict, int(c.gating)) for c in comparisons],
            )

    def verdicts(self, run: Run) -> list[Comparison]:
        with self._connect() as db:
            rows = db.execute("SELECT * FROM verdicts WHERE run_id=? AND builder=? ORDER BY subject, metric, baseline",
                              (run.run_id, run.builder)).fetchall()
        return [Comparison(r["subject"], r["kind"], r["metric"], r["baseline"], r["base_value"], r["value"],
                           r["delta_pct"], r["p_value"], r["verdict"], bool(r["gating"])) for r in rows]

    # --- outbox -----------------------------------------------------------------------------
    def outbox(self, pending_only: bool = False, due_only: bool = False) -> list[OutboxMessage]:
        """The queued mails; `pending_only`: not sent yet; `due_only`: and no longer held (`hold_until` passed)."""
        sql, args = "SELECT * FROM outbox WHERE 1=1", []
        if pending_only or due_only:
            sql += " AND sent IS NULL"
        if due_only:
            sql += " AND (hold_until IS NULL OR hold_until <= ?)"
            args.append(time.time())
        with self._connect() as db:
            rows = db.execute(sql + " ORDER BY id", args).fetchall()
        return [OutboxMessage(r["id"], r["run_id"], r["builder"], r["kind"], r["sender"],
                              json.loads(r["recipients"]), bytes(r["message"]), r["attempts"], r["last_error"],
                              r["sent"], r["alert_id"], r["hold_until"]) for r in rows]

    def queue(self, run_id: str, builder: str, kind: str, sender: str, recipients: list[str], message: bytes,
              alert_id: int | None = None) -> None:
        """Queue a mail that no run's completion carries (a bisect's follow-up, regression/bisectrun.py)."""
        with self._connect() as db:
            db.execute("INSERT INTO outbox (run_id, builder, kind, sender, recipients, message, created, alert_id)"
                       " VALUES (?,?,?,?,?,?,?,?)",
                       (run_id, builder, kind, sender, json.dumps(recipients), message, time.time(), alert_id))

    def mark_sent(self, message_id: int) -> None:
        with self._connect() as db:
            db.execute("UPDATE outbox SET sent=?, attempts=attempts+1, last_error=NULL WHERE id=?",
                       (time.time(), message_id))

    def mark_attempt_failed(self, message_id: int, error: str) -> None:
        with self._connect() as db:
            db.execute("UPDATE outbox SET attempts=attempts+1, last_error=? WHERE id=?", (error, message_id))
