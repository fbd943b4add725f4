"""Alerts as records with a life (regression/alerts/records.py): opened by a transition into regression, closed by the
farm when the builder recovers (and the recovery mail names them), triaged from the CLI with who, when and a note,
flagged overdue, grouped across builders, improvements recorded unmailed, and old databases upgraded in place."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from farm.cli import main
from farm.config import load_settings
from farm.errors import FarmError
from regression import compare, migrations
from regression.alerts import delivery, lifecycle, records
from regression.alerts.outbox import Outbox
from regression.alerts.records import AlertStore
from regression.history import History
from regression.rules import HEURISTIC_BASELINE, PREVIOUS_BASELINE, Comparison
from tests.regression import legacy
from tests.regression.alerts.test_delivery import _run, _subject
from tests.regression.conftest import delivered, open_at_once


def _body(mail) -> str:
    return mail.get_payload(decode=True).decode().replace("\r\n", "\n")


def test_a_regression_opens_an_alert_and_a_recovery_closes_it_as_detected_fixed(smtp_env) -> None:
    assert _run("n1", "heuristic").verdict == "ok"
    bad = _run("n2", "never")
    assert bad.verdict == "regression"
    store = AlertStore(compare.open_history())
    [alert] = store.alerts()
    assert (alert.kind, alert.builder, alert.bad_run, alert.good_run, alert.state) == (
        "regression", "nightly", "n2", "n1", "untriaged")
    assert alert.inputs == {"policy": ["heuristic", "never"]}  # what changed between the good and the bad run
    assert time.time() - 120 < alert.created <= time.time()
    [mail] = delivered(smtp_env)
    page = load_settings().buildbot.dashboard(f"alerts/{alert.id}/")
    assert f"Alert:              #{alert.id} (untriaged) {page}" in _body(mail)

    assert _run("n3", "never").alert is None and len(store.alerts()) == 1  # still regressing: the same alert

    good = _run("n4", "heuristic")
    assert good.alert == "recovery"
    closed = store.get(alert.id)
    assert (closed.state, closed.closed_by) == ("detected-fixed", "n4")
    assert [(s.state, s.who) for s in store.states(alert.id)] == [("untriaged", "mlgo-farm"),
                                                                   ("detected-fixed", "mlgo-farm")]
    assert "n4 is back within the rules" in store.states(alert.id)[1].note
    rec = delivered(smtp_env)[1]
    assert _subject(rec).startswith("[mlgo-farm] recovered: nightly: ")
    assert f"Closes:             alert #{alert.id} (detected-fixed) {page}" in _body(rec)
    assert f"closed alert #{alert.id} as detected-fixed" in _body(rec)


def _fake_run(h: History, run_id: str, builder: str, policy: str = "p1", vocab: str | None = "v1",
              commit: str | None = "c1"):
    return h.start_run(run_id, builder, llvm_version="22.1.8", llvm_commit=commit, policy_id=policy,
                       vocab_version=vocab)


def _row(verdict: str, baseline: str = HEURISTIC_BASELINE, delta: float = 2.0) -> Comparison:
    return Comparison("zlib", "binary", "text_size", baseline, 1000.0, 1000 * (1 + delta / 100), delta, None, verdict,
                      True)


def _complete(h: History, run, verdict: str, rows: list[Comparison]) -> str | None:
    """Complete `run` as outcome.finish does: the verdict, its alert record and its mail in one transaction."""
    h.add_verdicts(run, rows)
    kind = lifecycle.transition(h, run, verdict)
    settings = load_settings()
    record = lifecycle.alert_record(settings, h, run, verdict, kind, rows, [], "summary", "http://x/report")
    h.complete_run(run, verdict, None, record=record)
    return kind


def _alerted(h: History, builder: str, good_policy: str = "p1", bad_policy: str = "p2", prefix: str = "") -> None:
    _complete(h, _fake_run(h, f"{prefix}g", builder, good_policy), "ok", [_row("unchanged", delta=0.0)])
    _complete(h, _fake_run(h, f"{prefix}b", builder, bad_policy), "regression", [_row("regressed")])


def test_a_state_change_from_the_cli_keeps_who_when_and_note(history_at: str, capsys) -> None:
    db = history_at  # `regress alert` takes a path or a URL
    h = History(db)
    _alerted(h, "regression-inliner-size")
    [alert] = AlertStore(h).alerts()
    before = time.time()
    assert main(["regress", "alert", "set", str(alert.id), "acknowledged", "--note", "looking at the policy",
                 "--by", "alice", "--history", str(db)]) == 0
    assert capsys.readouterr().out == f"alert #{alert.id}: untriaged -> acknowledged by alice: looking at the policy\n"
    last = AlertStore(h).states(alert.id)[-1]
    assert (last.state, last.who, last.note) == ("acknowledged", "alice", "looking at the policy")
    assert before <= last.at <= time.time()
    assert AlertStore(h).get(alert.id).state == "acknowledged"

    # the JSON of one alert and of the list
    assert main(["regress", "alert", "show", str(alert.id), "--json", "--history", str(db)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["alert"]["state"] == "acknowledged" and shown["alert"]["bad_run"] == "b"
    assert [(s["state"], s["who"]) for s in shown["states"]] == [("untriaged", "mlgo-farm"), ("acknowledged", "alice")]
    assert main(["regress", "alert", "list", "--state", "acknowledged", "--json", "--history", str(db)]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [a["id"] for a in listed["alerts"]] == [alert.id] and listed["exit_code"] == 0
    assert main(["regress", "alert", "list", "--state", "untriaged", "--history", str(db)]) == 0
    assert capsys.readouterr().out == "no alerts\n"

    # what may not be: one line, exit 2 (bad input)
    for argv, message in ((["set", str(alert.id), "detected-fixed", "--note", "x"], "cannot be set to 'detected"),
                          (["set", str(alert.id), "fixed", "--note", "  "], "needs a note"),
                          (["set", "99", "fixed", "--note", "x"], "no alert #99"),
                          (["show", "99"], "no alert #99")):
        assert main(["regress", "alert", *argv, "--history", str(db)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    assert len(AlertStore(h).states(alert.id)) == 2  # nothing recorded by the refused changes


def test_untriaged_alerts_past_the_configured_age_are_overdue(history_at: str, monkeypatch) -> None:
    h = History(history_at)
    _alerted(h, "b1")
    store = AlertStore(h)
    [alert] = store.alerts()
    assert load_settings().alerts.triage_days == 2.0
    assert store.counts(2.0) == {"untriaged": 1, "overdue": 0}
    assert store.counts(2.0, now=alert.created + 2 * 86400 + 1) == {"untriaged": 1, "overdue": 1}
    monkeypatch.setenv("MLGO_FARM_ALERTS_TRIAGE_DAYS", "0.5")
    assert alert.overdue(load_settings().alerts.triage_days, now=alert.created + 86400)
    store.set_state(alert.id, "investigating", "bob", "bisecting by hand")
    assert store.counts(2.0, now=alert.created + 10 * 86400) == {"untriaged": 0, "overdue": 0}
    monkeypatch.setenv("MLGO_FARM_ALERTS_TRIAGE_DAYS", "0")
    with pytest.raises(FarmError, match="must be greater than 0"):
        load_settings()


def test_alerts_of_builders_with_the_same_changed_input_share_a_group(history_at: str) -> None:
    h = History(history_at)
    _alerted(h, "regression-inliner-size")
    _alerted(h, "regression-inliner-speed")
    _alerted(h, "regression-other", good_policy="p1", bad_policy="p3")  # another policy: not the same change
    store = AlertStore(h)
    by = {a.builder: a for a in store.alerts()}
    size, speed, other = by["regression-inliner-size"], by["regression-inliner-speed"], by["regression-other"]
    assert size.group_id == speed.group_id == size.id
    assert other.group_id is None and other.inputs == {"policy": ["p1", "p3"]}
    assert [a.id for a in store.alerts(group_id=size.id)] == [speed.id, size.id]


def test_alerts_whose_llvm_revision_ranges_overlap_share_a_group(tmp_path: Path) -> None:
    """LLVM moved by different commits on two builders, but their ranges (good, bad] share a commit: one group, as
    LNT groups regressions whose revision ranges overlap; ranges that only touch do not. The order of commits comes
    from the commits' clone the bisect keeps (regression/bisectllvm.py), here of a local stand-in repository."""
    import subprocess

    from regression.alerts.records import overlapping
    from regression.bisectllvm import commit_order

    repo = tmp_path / "llvm-project"
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    commits = []
    for i in range(6):
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", f"c{i + 1}"], check=True)
        commits.append(subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip())
    c1, c2, c3, c4, c5, c6 = commits
    settings = load_settings()
    assert commit_order(settings) is None  # no clone yet: only equal new values group
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(settings.var_dir / "bisect" / "commits.git")],
                   check=True)
    before = commit_order(settings)
    assert before(c1, c4) is True and before(c4, c1) is False and before(c1, "f" * 40) is None
    assert overlapping({"llvm": [c1, c3]}, {"llvm": [c2, c5]}) == []
    assert overlapping({"llvm": [c1, c3]}, {"llvm": [c2, c5]}, before) == ["llvm"]
    assert overlapping({"llvm": [c1, c3]}, {"llvm": [c3, c5]}, before) == []  # they only touch at c3

    h = History(tmp_path / "h.sqlite")
    for builder, good, bad in (("regression-a", c1, c3), ("regression-b", c4, c6), ("regression-c", c2, c5)):
        _complete(h, _fake_run(h, f"{builder}-g", builder, commit=good), "ok", [_row("unchanged", delta=0.0)])
        _complete(h, _fake_run(h, f"{builder}-b", builder, commit=bad), "regression", [_row("regressed")])
    by = {a.builder: a for a in AlertStore(h).alerts()}
    assert by["regression-c"].inputs == {"llvm": [c2, c5]}
    assert by["regression-a"].group_id == by["regression-c"].group_id == by["regression-a"].id
    assert by["regression-b"].group_id is None  # (c4, c6] shares no commit with (c1, c3]


def test_an_improvement_is_recorded_and_not_mailed(tmp_path: Path, smtp_env) -> None:
    h = History(tmp_path / "h.sqlite")
    _complete(h, _fake_run(h, "g", "b1", "p1"), "ok", [_row("unchanged", delta=0.0)])
    rows = [_row("improved", delta=-3.0), _row("improved", PREVIOUS_BASELINE, delta=-3.0)]
    assert _complete(h, _fake_run(h, "better", "b1", "p2"), "ok", rows) is None
    [imp] = AlertStore(h).alerts()
    assert (imp.kind, imp.state, imp.bad_run, imp.good_run) == ("improvement", "improvement", "better", "g")
    assert Outbox(h).messages() == [] and smtp_env.messages == []
    assert AlertStore(h).counts(2.0) == {"untriaged": 0, "overdue": 0}
    # improving only against the heuristic, not against the previous run, is no news
    _complete(h, _fake_run(h, "same", "b1", "p2"), "ok", [_row("improved", delta=-3.0),
                                                          _row("unchanged", PREVIOUS_BASELINE, delta=0.0)])
    assert len(AlertStore(h).alerts()) == 1


@pytest.mark.parametrize("version", [0, 1, 2])
def test_an_old_database_is_upgraded_in_place(tmp_path: Path, version: int) -> None:
    """A file of a farm of before alembic (`user_version` 0, 1 or 2) is stamped at its revision and upgraded."""
    path = tmp_path / "old.sqlite"
    legacy.old_database(path, version, package_columns=version > 0)
    h = History(path)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == migrations.LEGACY_REFUSED  # an old farm refuses it
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(migrations.head(),)]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"alerts", "alert_states", "runs", "outbox"} <= tables
        assert {"alert_id", "hold_until"} <= {r[1] for r in db.execute("PRAGMA table_info(outbox)")}
        assert {"sha256", "llvm_package"} <= {r[1] for r in db.execute("PRAGMA table_info(measurements)")}
        assert db.execute("SELECT run_id, bisect_alert FROM runs ORDER BY seq").fetchall() == [
            ("old", None), ("old-bisect", 1)]  # filled from the rows' config
    assert h.run("old", "b1").verdict == "regression"  # the old rows are kept
    assert [r.run_id for r in h.runs()] == ["old"] and len(h.runs(bisect=True)) == 2
    if version >= 1:  # an alert's states at the same second keep their order
        assert [s.state for s in AlertStore(h).states(1)] == ["untriaged", "investigating", "acknowledged"]
    good = _fake_run(h, "new", "b1")
    _complete(h, good, "ok", [_row("unchanged", delta=0.0)])
    _complete(h, _fake_run(h, "worse", "b1", "p2"), "regression", [_row("regressed")])
    assert [a.bad_run for a in AlertStore(h).alerts(builder="b1", state="untriaged")] == ["worse"]
    History(path)  # opening it again changes nothing
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM alerts WHERE bad_run='worse'").fetchone()[0] == 1
        db.execute("PRAGMA user_version = 7")
        db.execute("DROP TABLE alembic_version")
    with pytest.raises(FarmError, match="schema version 7, newer than this farm's"):
        History(path)


def test_two_openers_of_an_old_database_upgrade_it_once(tmp_path: Path) -> None:
    """Builders opening an old file at once: one upgrades it under BEGIN IMMEDIATE, the other finds it upgraded."""

    from regression import database

    path = tmp_path / "old.sqlite"
    legacy.old_database(path, 1)
    errors = open_at_once(path, 3)
    database.dispose()
    assert errors == []
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(migrations.head(),)]
        assert db.execute("SELECT count(*) FROM alert_states").fetchone()[0] == 3


def test_an_alerts_states_keep_their_order_within_one_second(history_at: str, monkeypatch) -> None:
    h = History(history_at)
    monkeypatch.setattr(records.time, "time", lambda: 1000.0)  # every change at the same second
    _alerted(h, "b1")
    store = AlertStore(h)
    [alert] = store.alerts()
    for state in ("investigating", "acknowledged", "untriaged", "fixed"):
        store.set_state(alert.id, state, "dave", f"to {state}")
    assert [s.state for s in store.states(alert.id)] == ["untriaged", "investigating", "acknowledged", "untriaged",
                                                         "fixed"]
    store.set_bisect(alert.id, {"culprit": "policy"})
    assert store.get(alert.id).bisect == {"culprit": "policy"} and store.get(alert.id).state == "fixed"


def test_a_builder_can_be_detected_fixed_only_once_per_alert(history_at: str) -> None:
    h = History(history_at)
    _alerted(h, "b1")
    store = AlertStore(h)
    [alert] = store.alerts()
    store.set_state(alert.id, records.WONTFIX, "carol", "the policy trades speed for size on purpose")
    _complete(h, _fake_run(h, "back", "b1"), "ok", [_row("unchanged", delta=0.0)])
    assert store.get(alert.id).state == "wontfix"  # a person's verdict stands; only open alerts are detected fixed


def _bodies(smtp_env) -> list[str]:
    return [_body(m) for m in smtp_env.messages]


def test_builders_with_the_same_change_get_one_summary_mail(history_at: str, smtp_env, monkeypatch, capsys) -> None:
    monkeypatch.setenv("MLGO_FARM_ALERTS_GROUP_WAIT", "60")  # minutes a new alert's mail waits for group mates
    db = history_at
    h = History(db)
    _alerted(h, "regression-inliner-size")
    [held] = Outbox(h).messages(pending_only=True)
    assert held.hold_until > time.time() + 59 * 60 and Outbox(h).messages(due_only=True) == []
    _alerted(h, "regression-inliner-speed")
    _alerted(h, "regression-other", bad_policy="p3")
    size, speed, other = (AlertStore(h).alerts(builder=b)[0] for b in
                          ("regression-inliner-size", "regression-inliner-speed", "regression-other"))
    assert speed.group_id == size.id and other.group_id is None
    # no mail of its own for speed
    assert [m.alert_id for m in Outbox(h).messages(pending_only=True)] == [size.id, other.id]

    assert main(["regress", "alerts", "--flush", "--history", str(db)]) == 0
    assert smtp_env.messages == [] and "sent 0, still pending 0" in capsys.readouterr().out  # held, not due yet
    assert main(["regress", "alerts", "--flush", "--held", "--history", str(db)]) == 0
    group, single = smtp_env.messages
    assert _subject(group) == (f"[mlgo-farm] REGRESSION: 2 builders after the same change (policy p1 -> p2): "
                               f"alert group #{size.id}")
    body = _body(group)
    page = load_settings().buildbot.dashboard
    for alert in (size, speed):
        assert (f"  #{alert.id} {alert.builder}: zlib text +2.00%\n"
                "      run b (policy p2; LLVM c1), previous good run g") in body
        assert f"      alert:  {page(f'alerts/{alert.id}/')}" in body
        assert f"report: {page(f'store/regression/{alert.builder}/b/index.html')}" in body
    assert "regression-other" not in body
    assert _subject(single).startswith("[mlgo-farm] REGRESSION: regression-other: ")  # no mates: its own mail
    assert f"Alert:              #{other.id} (untriaged)" in _body(single) and "Group:" not in _body(single)


def test_a_group_mate_after_the_groups_mail_went_out_names_the_group(history_at: str, smtp_env) -> None:
    h = History(history_at)  # [alerts] group_wait 0: every mail goes out at once
    _alerted(h, "regression-inliner-size")
    delivery.deliver_pending(h, load_settings().smtp, backoff=0)
    _alerted(h, "regression-inliner-speed")
    delivery.deliver_pending(h, load_settings().smtp, backoff=0)
    size, speed = (AlertStore(h).alerts(builder=b)[0] for b in ("regression-inliner-size", "regression-inliner-speed"))
    first, second = _bodies(smtp_env)
    assert "Group:" not in first
    assert f"Group:              #{size.id}, the same change as alert #{size.id} (regression-inliner-size) " \
           "(mailed already)" in second and f"Alert:              #{speed.id}" in second


def test_an_alert_row_with_hostile_json_is_one_store_error() -> None:
    """A history row edited by hand (or cut short) names the alert and the column, through farm/jsonio.py."""
    from farm.errors import StoreError
    from regression.alerts.records import AlertStore

    row = {"inputs": "[" * 100_000, "bisect": None, "id": 7}
    with pytest.raises(StoreError, match=r"history: alert #7 inputs: JSON nested too deeply to read"):
        AlertStore.from_row(row)
    with pytest.raises(StoreError, match=r"history: alert #7 bisect: invalid JSON"):
        AlertStore.from_row({**row, "inputs": "{}", "bisect": "{not json"})
