"""Alerts as records with a life, in the history database (tables: regression/schema/versions/0002_alerts.py).

Each transition of a builder into regression opens an alert: the builder, the first bad run, the last good run
before it, when, and its state. People triage it (Perfherder's states, LNT's and chromeperf's ideas):
`untriaged` -> `acknowledged` / `investigating` -> `fixed`, `invalid` or `wontfix`. The farm itself sets
`detected-fixed` when a later run of the builder is back within the rules (the recovery mail names the alerts it
closes). Every change of state keeps who, when and a note (`alert_states`). An untriaged alert older than
`[alerts] triage_days` is overdue (Perfherder's triage due date).

A run that is better than the previous good run beyond the rules' noise is recorded as an alert of kind
`improvement`, state `improvement`, and never mailed. A regression alert whose changed inputs (the LLVM commit or
package, the policy, the vocabulary between its good and bad runs) are those of another builder's open alert joins
that alert's group (`group_id`, the id of the group's first alert). `bisect` keeps a bisect's result
(regression/bisectrun.py: the culprit input or why none, the re-runs that show it).

The alert of a run is written in the transaction that completes the run (History.complete_run's `record`: when
to open, group or close one is regression/alerts/lifecycle.py's), so a run's verdict, its alert and its mail are
recorded together or not at all.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from farm import jsonio
from farm.errors import InputError, StoreError
from regression.database import Record, Tx
from regression.history import History, Run

if TYPE_CHECKING:
    from regression.bisectllvm import Before

#: The kinds of alert: a transition into regression (mailed), an improvement (recorded, never mailed).
REGRESSION, IMPROVEMENT = "regression", "improvement"
#: The transition out of regression: no alert of its own; its mail names the alerts it closes (detected-fixed).
RECOVERY = "recovery"
UNTRIAGED, ACKNOWLEDGED, INVESTIGATING = "untriaged", "acknowledged", "investigating"
FIXED, INVALID, WONTFIX, DETECTED_FIXED = "fixed", "invalid", "wontfix", "detected-fixed"
#: Every state of a regression alert, in the order a triage goes.
STATES = (UNTRIAGED, ACKNOWLEDGED, INVESTIGATING, FIXED, INVALID, WONTFIX, DETECTED_FIXED)
#: The states a person sets (detected-fixed is the farm's own finding; an improvement may also be marked invalid).
SETTABLE = (UNTRIAGED, ACKNOWLEDGED, INVESTIGATING, FIXED, INVALID, WONTFIX)
#: States in which an alert is still news: it may be detected fixed, and other builders' alerts may join its group.
OPEN = (UNTRIAGED, ACKNOWLEDGED, INVESTIGATING)
#: Who the farm's own changes of state are recorded as.
FARM = "mlgo-farm"
#: The longest note a change of state keeps, in characters (anyone may read it on the dashboard: a paragraph, not a
#: log; pages show older, longer ones cut to this, master/dashboard/views_alerts.py).
MAX_NOTE = 2000
#: The inputs of a run an alert compares between its good and bad runs (a bisect swaps them back: regression/bisect.py).
INPUTS = ("llvm", "policy", "vocab", "bench")


def bench_label(run: Run) -> str | None:
    """The sources of the run's local benchmarks as `name@sha256` (12 digits) by name, or None when the run recorded
    none (runs of before `bench_sources`, and runs of Debian's benchmarks, whose source version is not recorded)."""
    sources = run.config.get("bench_sources")
    if not isinstance(sources, dict) or not sources:
        return None
    return ", ".join(f"{name}@{str(digest)[:12]}" for name, digest in sorted(sources.items()))


def inputs_of(run: Run) -> dict[str, str | None]:
    """The run's inputs as alerts compare them: LLVM by commit, else package version, else version; the benchmark
    sources only when the run recorded them (an input one run did not record is not compared)."""
    inputs = {"llvm": run.llvm_commit or run.llvm_package or run.llvm_version, "policy": run.policy_id,
              "vocab": run.vocab_version}
    bench = bench_label(run)
    return {**inputs, "bench": bench} if bench is not None else inputs


def changed_inputs(good: Run | None, bad: Run) -> dict[str, list[str | None]]:
    """`{input: [good value, bad value]}` for every input both runs recorded that differs ({} without a good run:
    nothing to narrow)."""
    if good is None:
        return {}
    before, after = inputs_of(good), inputs_of(bad)
    return {k: [before[k], after[k]] for k in INPUTS if k in before and k in after and before[k] != after[k]}


@dataclass(frozen=True)
class StateChange:
    at: float
    state: str
    who: str
    note: str


@dataclass(frozen=True)
class Alert:
    id: int
    kind: str
    builder: str
    bad_run: str
    good_run: str | None
    created: float
    state: str
    changed: float
    closed_by: str | None = None
    inputs: dict[str, list[str | None]] = field(default_factory=dict)
    group_id: int | None = None
    bisect: dict[str, Any] | None = None

    def due(self, triage_days: float) -> float:
        """When an untriaged alert becomes overdue."""
        return self.created + triage_days * 86400

    def overdue(self, triage_days: float, now: float | None = None) -> bool:
        return self.state == UNTRIAGED and (time.time() if now is None else now) > self.due(triage_days)

    def as_json(self, triage_days: float, now: float | None = None) -> dict[str, Any]:
        return {**asdict(self), "due": self.due(triage_days) if self.kind == REGRESSION else None,
                "overdue": self.overdue(triage_days, now)}


def _alert(row: Record) -> Alert:
    d = dict(row)
    where = f"history: alert #{d.get('id')}"
    d["inputs"] = jsonio.loads(d["inputs"] or "{}", f"{where} inputs", StoreError)
    d["bisect"] = jsonio.loads(d["bisect"], f"{where} bisect", StoreError) if d["bisect"] else None
    return Alert(**d)


#: The columns of an Alert, as its queries select them.
_COLUMNS = "id, kind, builder, bad_run, good_run, created, state, changed, closed_by, inputs, group_id, bisect"
#: The open states as a statement's parameters (`state IN (:open0, :open1, :open2)`).
_OPEN_IN = "(" + ", ".join(f":open{i}" for i in range(len(OPEN))) + ")"
_OPEN_ARGS = {f"open{i}": s for i, s in enumerate(OPEN)}


def _state_change(db: Tx, alert_id: int, at: float, state: str, who: str, note: str) -> None:
    db.execute("INSERT INTO alert_states (alert_id, at, state, who, note) VALUES (:alert_id, :at, :state, :who, :note)",
               {"alert_id": alert_id, "at": at, "state": state, "who": who, "note": note})


def _insert(db: Tx, kind: str, run: Run, good: Run | None, state: str, note: str,
            inputs: dict, group_id: int | None = None) -> int:
    now = time.time()
    [(alert_id,)] = db.execute(
        "INSERT INTO alerts (kind, builder, bad_run, good_run, created, state, changed, inputs, group_id)"
        " VALUES (:kind, :builder, :bad_run, :good_run, :now, :state, :now, :inputs, :group_id) RETURNING id",
        {"kind": kind, "builder": run.builder, "bad_run": run.run_id, "good_run": good.run_id if good else None,
         "now": now, "state": state, "inputs": json.dumps(inputs, sort_keys=True), "group_id": group_id})
    _state_change(db, alert_id, now, state, FARM, note)
    return int(alert_id)


def _get(db: Tx, alert_id: int) -> Alert | None:
    row = db.execute(f"SELECT {_COLUMNS} FROM alerts WHERE id=:id", {"id": alert_id}).fetchone()
    return _alert(row) if row else None


def overlapping(a: dict[str, list], b: dict[str, list], before: Before | None = None) -> list[str]:
    """The inputs two alerts' changes share: the same input moved to the same new value (the same LLVM commit or
    package, the same policy or vocabulary version), or, with `before` (the order of LLVM commits,
    regression/bisectllvm.py `commit_order`), LLVM revision ranges (good, bad] that share a commit, as LNT groups
    regressions whose ranges overlap: neither range ends at or before the other's start."""
    shared = [k for k in INPUTS if k in a and k in b and a[k][1] is not None and a[k][1] == b[k][1]]
    if "llvm" in shared or before is None or "llvm" not in a or "llvm" not in b:
        return shared
    (g1, b1), (g2, b2) = a["llvm"], b["llvm"]
    order = [before(b1, g2), before(b2, g1)] if g1 and b1 and g2 and b2 else [None]
    if None not in order and not any(order):
        return ["llvm", *shared]
    return shared


class AlertStore:
    """The alerts of one history database."""

    def __init__(self, history: History, before: Before | None = None) -> None:
        self.history = history
        #: the order of LLVM commits, for grouping alerts whose revision ranges overlap (`overlapping`)
        self.before = before

    from_row = staticmethod(_alert)

    @staticmethod
    def in_group(db: Tx, group_id: int | None) -> list[Alert]:
        """The alerts of a group, oldest first (in the transaction `db`)."""
        return [_alert(r) for r in db.execute(f"SELECT {_COLUMNS} FROM alerts WHERE group_id=:group ORDER BY id",
                                              {"group": group_id}).fetchall()]

    # --- in the transaction that completes a run ------------------------------------------------
    def open_regression(self, db: Tx, run: Run, good: Run | None) -> Alert:
        """The alert of `run`'s transition into regression (after `good`), in the group of another builder's open
        alert whose changed inputs overlap its own."""
        inputs = changed_inputs(good, run)
        group = None
        if inputs:
            for mate in db.execute(f"SELECT {_COLUMNS} FROM alerts WHERE kind=:kind AND builder<>:builder"
                                   f" AND state IN {_OPEN_IN} ORDER BY id",
                                   {"kind": REGRESSION, "builder": run.builder, **_OPEN_ARGS}).fetchall():
                m = _alert(mate)
                if overlapping(inputs, m.inputs, self.before):
                    group = m.group_id or m.id
                    db.execute("UPDATE alerts SET group_id=:group WHERE id=:id AND group_id IS NULL",
                               {"group": group, "id": m.id})
                    break
        note = f"regression detected in run {run.run_id}" + (f" after good run {good.run_id}" if good else "")
        alert_id = _insert(db, REGRESSION, run, good, UNTRIAGED, note, inputs, group)
        return _get(db, alert_id)  # type: ignore[return-value]

    @staticmethod
    def open_of(db: Tx, builder: str) -> list[Alert]:
        """The builder's open regression alerts (in the transaction `db`): a builder with one is in regression
        already, and another run of it that regresses is no new transition (History.complete_run serialises them)."""
        return [_alert(r) for r in db.execute(f"SELECT {_COLUMNS} FROM alerts WHERE builder=:builder AND kind=:kind"
                                              f" AND state IN {_OPEN_IN} ORDER BY id",
                                              {"builder": builder, "kind": REGRESSION, **_OPEN_ARGS}).fetchall()]

    def detect_fixed(self, db: Tx, run: Run) -> list[Alert]:
        """Close the builder's open regression alerts: `run` is back within the rules. Returns those closed."""
        now, closed = time.time(), []
        for alert in self.open_of(db, run.builder):
            db.execute("UPDATE alerts SET state=:state, changed=:now, closed_by=:run WHERE id=:id",
                       {"state": DETECTED_FIXED, "now": now, "run": run.run_id, "id": alert.id})
            _state_change(db, alert.id, now, DETECTED_FIXED, FARM, f"run {run.run_id} is back within the rules")
            closed.append(_get(db, alert.id))
        return closed  # type: ignore[return-value]

    def record_improvement(self, db: Tx, run: Run, good: Run | None) -> Alert:
        """`run` is better than `good` beyond the rules' noise: recorded, never mailed."""
        note = f"run {run.run_id} improved" + (f" on {good.run_id}" if good else "")
        alert_id = _insert(db, IMPROVEMENT, run, good, IMPROVEMENT, note, changed_inputs(good, run))
        return _get(db, alert_id)  # type: ignore[return-value]

    # --- reading and triage ---------------------------------------------------------------------
    def get(self, alert_id: int) -> Alert:
        with self.history.transaction(write=False) as db:
            alert = _get(db, alert_id)
        if alert is None:
            raise InputError(f"no alert #{alert_id} in {self.history.where}")
        return alert

    def alerts(self, state: str | None = None, builder: str | None = None, kind: str | None = None,
             group_id: int | None = None, bad_run: str | None = None) -> list[Alert]:
        """Alerts newest first, filtered."""
        if state is not None and state not in (*STATES, IMPROVEMENT):
            raise InputError(f"unknown alert state {state!r} (one of {', '.join((*STATES, IMPROVEMENT))})")
        sql, args = f"SELECT {_COLUMNS} FROM alerts WHERE 1=1", {}
        for column, value in (("state", state), ("builder", builder), ("kind", kind), ("group_id", group_id),
                              ("bad_run", bad_run)):
            if value is not None:
                sql += f" AND {column}=:{column}"
                args[column] = value
        with self.history.transaction(write=False) as db:
            return [_alert(r) for r in db.execute(sql + " ORDER BY id DESC", args).fetchall()]

    def states(self, alert_id: int) -> list[StateChange]:
        """The alert's history of states, oldest first."""
        with self.history.transaction(write=False) as db:
            rows = db.execute("SELECT at, state, who, note FROM alert_states WHERE alert_id=:id ORDER BY at, id",
                              {"id": alert_id}).fetchall()
        return [StateChange(**dict(r)) for r in rows]

    def set_state(self, alert_id: int, state: str, who: str, note: str) -> Alert:
        """A person's change of state, kept with who, when and the note (a one-line InputError if not allowed)."""
        allowed = SETTABLE
        who, note = who.strip(), note.strip()
        if not who:
            raise InputError("a change of state needs who made it")
        if not note:
            raise InputError("a change of state needs a note (why)")
        if len(note) > MAX_NOTE:
            raise InputError(f"a note of {len(note)} characters: at most {MAX_NOTE} (link to a longer text)")
        with self.history.transaction() as db:
            alert = _get(db, alert_id)
            if alert is None:
                raise InputError(f"no alert #{alert_id} in {self.history.where}")
            if alert.kind == IMPROVEMENT:
                allowed = (IMPROVEMENT, ACKNOWLEDGED, INVALID)
            if state not in allowed:
                raise InputError(f"alert #{alert_id} ({alert.kind}) cannot be set to {state!r}: one of "
                                 f"{', '.join(allowed)}")
            now = time.time()
            db.execute("UPDATE alerts SET state=:state, changed=:now WHERE id=:id",
                       {"state": state, "now": now, "id": alert_id})
            _state_change(db, alert_id, now, state, who, note)
            return _get(db, alert_id)  # type: ignore[return-value]

    def set_bisect(self, alert_id: int, result: dict[str, Any]) -> Alert:
        """Keep a bisect's result (regression/bisectrun.py) on the alert; its state is the people's to change."""
        with self.history.transaction() as db:
            db.execute("UPDATE alerts SET bisect=:bisect WHERE id=:id",
                       {"bisect": json.dumps(result, sort_keys=True), "id": alert_id})
            alert = _get(db, alert_id)
        if alert is None:
            raise InputError(f"no alert #{alert_id} in {self.history.where}")
        return alert

    def counts(self, triage_days: float, now: float | None = None) -> dict[str, int]:
        """Untriaged and overdue regression alerts, for the overview."""
        untriaged = self.alerts(state=UNTRIAGED, kind=REGRESSION)
        return {"untriaged": len(untriaged), "overdue": sum(a.overdue(triage_days, now) for a in untriaged)}
