"""Runs of one builder that complete at once (regression/history.py complete_run, database.serialise): on PostgreSQL's
READ COMMITTED two regressing runs both read "the builder was good" and each opened an alert and queued a mail."""

from __future__ import annotations

import threading

from farm.config import load_settings
from regression import database
from regression.alerts import lifecycle
from regression.alerts.outbox import Outbox
from regression.alerts.records import REGRESSION, AlertStore
from regression.history import History
from tests.regression.alerts.test_records import _complete, _fake_run, _row
from tests.servers import wait_until


def _waiting_for_a_lock(h: History) -> bool:
    """Whether a transaction on the database waits for an advisory lock another one holds."""
    with h.transaction(write=False) as db:
        return bool(db.execute("SELECT 1 FROM pg_locks WHERE locktype='advisory' AND NOT granted").fetchone())


def test_two_regressing_runs_of_one_builder_at_once_open_one_alert_and_queue_one_mail(postgres, monkeypatch) -> None:
    monkeypatch.setenv("MLGO_FARM_SMTP_RECIPIENTS", "oncall@example.org")
    url = postgres.create_database()
    h = History(url)
    _complete(h, _fake_run(h, "good", "nightly"), "ok", [_row("unchanged", delta=0.0)])
    settings, rows = load_settings(), [_row("regressed")]
    runs = {name: _fake_run(h, name, "nightly", policy="p2") for name in ("first", "second")}
    records = {}
    for name, run in runs.items():  # both decide "a transition" before either completes, as two builds do
        h.add_verdicts(run, rows)
        kind = lifecycle.transition(h, run, "regression")
        assert kind == REGRESSION
        records[name] = lifecycle.alert_record(settings, h, run, "regression", kind, rows, [], "summary", "http://x/r")
    inside = {name: threading.Event() for name in runs}
    errors: list[BaseException] = []

    def complete(name: str) -> None:
        def record(db):
            inside[name].set()
            if name == "first":  # hold this transaction open until the second one has begun its own
                wait_until(lambda: inside["second"].is_set() or _waiting_for_a_lock(h), 60,
                           "the second completion to start")
            return records[name](db)

        try:
            h.complete_run(runs[name], "regression", None, record=record)
        except BaseException as e:
            errors.append(e)

    first = threading.Thread(target=complete, args=("first",))
    first.start()
    assert inside["first"].wait(60)
    second = threading.Thread(target=complete, args=("second",))
    second.start()
    for t in (first, second):
        t.join(120)
    assert errors == [] and not first.is_alive() and not second.is_alive()
    alerts = AlertStore(h).alerts(builder="nightly", kind="regression")
    assert [a.bad_run for a in alerts] == ["first"]
    assert [(m.kind, m.run_id) for m in Outbox(h).messages()] == [("regression", "first")]
    assert [r.status for r in h.runs("nightly")] == ["complete"] * 3
    database.dispose(database.url_of(url))
