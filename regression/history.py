"""Regression history: runs, one row per run/builder/subject/metric/policy, verdicts and skipped subjects, in an
SQLite file or a PostgreSQL database shared by several machines (regression/database.py; the schema's versions:
regression/migrations.py). The alerts and their outbox share the database and its transactions
(regression/alerts/).

Every measurement row carries the LLVM commit, the LLVM package version (Debian's clang has no
commit, so a row is never "commit unknown"), the policy id (a published policy's version) and the
vocabulary version of its run. A run is completed in one transaction with whatever its alert records
(`complete_run`'s `record`), so a run's result and its pending alert are never lost, even when the mail server is
down.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL

from farm import jsonio
from farm.errors import FarmError, InputError, StoreError
from regression import database, migrations
from regression.database import Record, Tx
from regression.rules import Comparison


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
NOT_BISECT = " AND bisect_alert IS NULL"
#: The columns of a Run, as its queries select them.
_RUN_COLUMNS = ", ".join(f.name for f in fields(Run))


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


def _stored(text: str | bytes | None, where: str, empty: str = "{}") -> Any:
    """A JSON column's value, read through farm/jsonio.py: a hand-edited or truncated row is one StoreError naming
    it, whatever it holds (hostile numbers, nesting)."""
    return jsonio.loads(text or empty, f"history: {where}", StoreError)


def _run(row: Record) -> Run:
    d = dict(row)
    d["config"] = _stored(d["config"], f"run {d.get('run_id')} of builder {d.get('builder')} config")
    return Run(**d)


def bisect_alert(config: dict | None) -> int | None:
    """The alert a run bisects (`config.bisect.alert`, regression/bisectrun.py; 0: a bisect naming none), None for
    a builder's own run: the column NOT_BISECT reads."""
    value = (config or {}).get("bisect")
    if value is None:
        return None
    alert = value.get("alert") if isinstance(value, dict) else None
    return alert if isinstance(alert, int) and not isinstance(alert, bool) else 0


#: Columns a measurement row replaces when the same run/builder/subject/metric/policy is measured again.
_MEASURED = ("kind", "value", "samples", "unit", "llvm_commit", "policy_id", "vocab_version", "llvm_package",
             "sha256")
_JUDGED = ("kind", "base_value", "value", "delta_pct", "p_value", "verdict", "gating")


def _upsert(table: str, key: tuple[str, ...], rest: tuple[str, ...]) -> str:
    columns = (*key, *rest)
    return (f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)})"
            f" ON CONFLICT ({', '.join(key)}) DO UPDATE SET {', '.join(f'{c}=excluded.{c}' for c in rest)}")


class History:
    """The history database: an SQLite file (a path) or a PostgreSQL database (a URL); safe for several builders
    writing at once. `where` names it in messages (never with a password); `path` is the SQLite file (None for a
    server's database)."""

    def __init__(self, where: str | Path | URL) -> None:
        self.url = database.url_of(where)
        self.where = database.shown(self.url)
        self.backend = database.backend(self.url)
        self.path = Path(str(self.url.database)) if self.backend == database.SQLITE else None
        try:
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            migrations.ensure(self.url)
        except OSError as e:
            raise FarmError(f"history database {self.where}: {e.strerror or e}") from None

    @classmethod
    def existing(cls, where: str | Path | URL) -> History | None:
        """The history at `where` if the farm has written one: an SQLite file that exists (never created by looking:
        the dashboard's pages, Celery beat's delivery), or a server's database (created and upgraded by whoever
        opens it first)."""
        url = database.url_of(where)
        if database.backend(url) == database.SQLITE and not Path(str(url.database)).is_file():
            return None
        return cls(url)

    def __repr__(self) -> str:
        return f"History({self.where})"

    def _read(self) -> contextlib.AbstractContextManager[Tx]:
        return database.transaction(self.url)

    def _write(self) -> contextlib.AbstractContextManager[Tx]:
        """A writing transaction: on SQLite it takes the lock first (a deferred one that read first could not
        write after another writer committed), waiting up to the busy timeout."""
        return database.transaction(self.url, immediate=True)

    def transaction(self, write: bool = True) -> contextlib.AbstractContextManager[Tx]:
        """One transaction on the database, for the stores that share it (regression/alerts/): committed at
        the end of the block, rolled back if it raises. `write=False` for one that only reads."""
        return self._write() if write else self._read()

    # --- runs -------------------------------------------------------------------------------
    def start_run(self, run_id: str, builder: str, *, llvm_version: str | None, llvm_commit: str | None,
                  policy_id: str, vocab_version: str | None, config: dict | None = None,
                  llvm_package: str | None = None) -> Run:
        """Record a new run as `running`; a run id can be reused only if its earlier attempt failed."""
        key = {"run_id": run_id, "builder": builder}
        with self._write() as db:
            old = db.execute("SELECT status FROM runs WHERE run_id=:run_id AND builder=:builder", key).fetchone()
            if old is not None and old["status"] != "failed":
                raise InputError(f"run {run_id} of builder {builder} already exists ({old['status']})")
            if old is not None:
                for table in ("runs", "measurements", "verdicts", "skipped"):
                    db.execute(f"DELETE FROM {table} WHERE run_id=:run_id AND builder=:builder", key)
            db.execute(
                "INSERT INTO runs (run_id, builder, started, status, llvm_version, llvm_commit, policy_id,"
                " vocab_version, config, llvm_package, bisect_alert) VALUES (:run_id, :builder, :started, 'running',"
                " :llvm_version, :llvm_commit, :policy_id, :vocab_version, :config, :llvm_package, :bisect_alert)",
                {**key, "started": time.time(), "llvm_version": llvm_version, "llvm_commit": llvm_commit,
                 "policy_id": policy_id, "vocab_version": vocab_version,
                 "config": json.dumps(config or {}, sort_keys=True), "llvm_package": llvm_package,
                 "bisect_alert": bisect_alert(config)})
        return self.run(run_id, builder)

    def add_config(self, run: Run, **entries: Any) -> None:
        """Facts a run learns while it runs (its benchmarks' inputs and profiles: regression/compare.py) merged into
        its config, the JSON column its start wrote, so they need no column and no schema revision; `run.config`
        is updated too."""
        run.config.update(entries)
        with self._write() as db:
            db.execute("UPDATE runs SET config=:config WHERE seq=:seq",
                       {"config": json.dumps(run.config, sort_keys=True), "seq": run.seq})

    def run(self, run_id: str, builder: str) -> Run:
        with self._read() as db:
            row = db.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id=:run_id AND builder=:builder",
                             {"run_id": run_id, "builder": builder}).fetchone()
        if row is None:
            raise InputError(f"no run {run_id!r} of builder {builder!r} in {self.where}")
        return _run(row)

    def runs(self, builder: str | None = None, limit: int | None = None, upto_seq: int | None = None,
             bisect: bool = False) -> list[Run]:
        """Runs oldest first (the newest `limit` of them), optionally only one builder's, up to `upto_seq`; a
        bisect's re-runs only with `bisect` (they are no night of the builder: not in its trend, not a baseline)."""
        sql = f"SELECT {_RUN_COLUMNS} FROM runs WHERE 1=1" + ("" if bisect else NOT_BISECT)
        if builder is not None:
            sql += " AND builder=:builder"
        if upto_seq is not None:
            sql += " AND seq<=:upto_seq"
        sql += " ORDER BY seq DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._read() as db:
            rows = db.execute(sql, {"builder": builder, "upto_seq": upto_seq}).fetchall()
        return [_run(r) for r in reversed(rows)]

    def bisect_runs(self, alert_id: int) -> list[Run]:
        """One alert's bisect re-runs, oldest first: the state its bisect resumes from (regression/bisectrun.py)."""
        with self._read() as db:
            rows = db.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE bisect_alert=:alert ORDER BY seq",
                              {"alert": alert_id}).fetchall()
        return [_run(r) for r in rows]

    def latest_run(self, builder: str) -> Run:
        runs = self.runs(builder, limit=1)
        if not runs:
            raise InputError(f"no runs of builder {builder!r} in {self.where}")
        return runs[0]

    def builders(self) -> list[str]:
        """The builders with at least one run (any status), sorted."""
        with self._read() as db:
            return [r[0] for r in db.execute("SELECT DISTINCT builder FROM runs ORDER BY builder")]

    def previous_run(self, run: Run, verdict: str | None = None) -> Run | None:
        """The last complete run of the same builder before `run` (with that verdict, if given); never a bisect's
        re-run."""
        sql = f"SELECT {_RUN_COLUMNS} FROM runs WHERE builder=:builder AND seq<:seq AND status='complete'" + NOT_BISECT
        if verdict is not None:
            sql += " AND verdict=:verdict"
        with self._read() as db:
            row = db.execute(sql + " ORDER BY seq DESC LIMIT 1",
                             {"builder": run.builder, "seq": run.seq, "verdict": verdict}).fetchone()
        return _run(row) if row else None

    def fail_run(self, run: Run, error: str) -> None:
        with self._write() as db:
            db.execute("UPDATE runs SET status='failed', error=:error, finished=:now WHERE seq=:seq",
                       {"error": error, "now": time.time(), "seq": run.seq})

    def complete_run(self, run: Run, verdict: str, report_url: str | None,
                     record: Callable[[Tx], None] | None = None) -> None:
        """Mark the run complete and, in the same transaction, `record(db)`: what the run's end records besides
        (its alert and its mail: regression/alerts/lifecycle.py). Completions of one builder take turns
        (database.serialise): `record` reads what an earlier one wrote, so one transition opens one alert."""
        with self._write() as db:
            database.serialise(db, f"builder {run.builder}")  # one transition at a time per builder
            db.execute("UPDATE runs SET status='complete', verdict=:verdict, report_url=:url, finished=:now"
                       " WHERE seq=:seq", {"verdict": verdict, "url": report_url, "now": time.time(), "seq": run.seq})
            if record is not None:
                record(db)

    def set_report_url(self, run: Run, report_url: str | None) -> None:
        """Point a run at where its report really is (after a publication failed)."""
        with self._write() as db:
            db.execute("UPDATE runs SET report_url=:url WHERE seq=:seq", {"url": report_url, "seq": run.seq})

    # --- results ----------------------------------------------------------------------------
    def add_measurements(self, run: Run, rows: Iterable[Measurement]) -> None:
        with self._write() as db:
            db.execute(
                _upsert("measurements", ("run_id", "builder", "subject", "metric", "policy"), _MEASURED),
                [{"run_id": run.run_id, "builder": run.builder, "subject": m.subject, "kind": m.kind,
                  "metric": m.metric, "policy": m.policy, "value": float(m.value),
                  "samples": json.dumps(list(m.samples)), "unit": m.unit, "llvm_commit": run.llvm_commit,
                  "policy_id": run.policy_id, "vocab_version": run.vocab_version, "llvm_package": run.llvm_package,
                  "sha256": m.sha256} for m in rows])

    def measurements(self, run: Run, policy: str | None = None) -> list[Measurement]:
        sql = ("SELECT subject, kind, metric, policy, value, samples, unit, sha256 FROM measurements"
               " WHERE run_id=:run_id AND builder=:builder")
        if policy is not None:
            sql += " AND policy=:policy"
        with self._read() as db:
            rows = db.execute(sql + " ORDER BY subject, metric, policy",
                              {"run_id": run.run_id, "builder": run.builder, "policy": policy}).fetchall()
        return [Measurement(r["subject"], r["kind"], r["metric"], r["policy"], r["value"],
                            tuple(_stored(r["samples"], f"run {run.run_id} {r['subject']} {r['metric']} samples",
                                          "[]")), r["unit"], r["sha256"]) for r in rows]

    def add_skipped(self, run: Run, items: Iterable[Skipped]) -> None:
        with self._write() as db:
            db.execute("INSERT INTO skipped (run_id, builder, subject, variant, reason)"
                       " VALUES (:run_id, :builder, :subject, :variant, :reason)",
                       [{"run_id": run.run_id, "builder": run.builder, "subject": s.subject, "variant": s.variant,
                         "reason": s.reason} for s in items])

    def skipped(self, run: Run) -> list[Skipped]:
        with self._read() as db:
            rows = db.execute("SELECT subject, variant, reason FROM skipped WHERE run_id=:run_id AND builder=:builder"
                              " ORDER BY subject, variant", {"run_id": run.run_id, "builder": run.builder}).fetchall()
        return [Skipped(**dict(r)) for r in rows]

    def add_verdicts(self, run: Run, comparisons: Iterable[Comparison]) -> None:
        with self._write() as db:
            db.execute(
                _upsert("verdicts", ("run_id", "builder", "subject", "metric", "baseline"), _JUDGED),
                [{"run_id": run.run_id, "builder": run.builder, "subject": c.subject, "kind": c.kind,
                  "metric": c.metric, "baseline": c.baseline, "base_value": c.base_value, "value": c.value,
                  "delta_pct": None if c.delta_pct is None or c.delta_pct == float("inf") else c.delta_pct,
                  "p_value": c.p_value, "verdict": c.verdict, "gating": int(c.gating)} for c in comparisons])

    def verdicts(self, run: Run) -> list[Comparison]:
        with self._read() as db:
            rows = db.execute("SELECT subject, kind, metric, baseline, base_value, value, delta_pct, p_value, verdict,"
                              " gating FROM verdicts WHERE run_id=:run_id AND builder=:builder"
                              " ORDER BY subject, metric, baseline", {"run_id": run.run_id, "builder": run.builder})
        return [Comparison(r["subject"], r["kind"], r["metric"], r["baseline"], r["base_value"], r["value"],
                           r["delta_pct"], r["p_value"], r["verdict"], bool(r["gating"])) for r in rows]
