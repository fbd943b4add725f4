"""Hostile alert ids and notes (issue 47, items 7 and 14), from the CLI and on the dashboard, over a real SQLite
history: an id is ASCII digits within a database integer (farm/ids.py), read the same way by `regress alert
show|set`, `regress bisect` and the pages' routes; anything else is one line and exit 2 on the CLI, a one-line 404 on
the pages (a number past 2**63 - 1 was SQLite's OverflowError: a 46-73 line traceback, an anonymous 500; '١٢' read as
12). A note is capped when it is set, and one kept before the cap is cut on the pages and in the JSON."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from farm import ids
from farm.cli import main
from farm.config import load_settings
from farm.errors import InputError
from farm.objectstore import FileStore
from master.dashboard.app import create_app
from regression.alerts.records import MAX_NOTE, AlertStore
from tests.master.test_alert_pages import _history
from tests.master.test_dashboard import populate

#: What int() reads and a record number is not: past any database integer (2**63 exactly, 20 and 400 digits),
#: other scripts' digits (Arabic-Indic, Devanagari, fullwidth), signs, spaces, underscores, zero.
HOSTILE = (str(2 ** 63), "9" * 20, "7" * 400, "١٢", "१", "１２", "+1", " 1", "1_0", "0", "00")


def _cli(argv: list[str], capsys) -> tuple[int, list[str]]:
    """`mlgo-farm ARGV`'s exit status and the lines of its standard error (a usage error exits through SystemExit)."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, err.strip().splitlines()


@pytest.fixture
def alerted(tmp_path: Path):
    """(the dashboard's test client, the history's path, the first alert's id)."""
    populate(tmp_path / "store")
    h = _history(tmp_path / "history.sqlite")
    app = create_app(load_settings(), store=FileStore(tmp_path / "store"), history=tmp_path / "history.sqlite")
    return app.test_client(), tmp_path / "history.sqlite", AlertStore(h).alerts()[-1].id


def test_one_parser_reads_ids_ascii_digits_within_a_database_integer() -> None:
    assert ids.record_id("12") == 12 and ids.record_id(str(ids.MAX_ID)) == ids.MAX_ID
    for text in HOSTILE:
        with pytest.raises(InputError) as e:
            ids.record_id(text)
        assert "\n" not in str(e.value) and len(str(e.value)) < 160, str(e.value)


@pytest.mark.parametrize("text", HOSTILE)
def test_the_cli_refuses_a_hostile_id_in_one_line_exit_2(alerted, text: str, capsys) -> None:
    _, db, alert_id = alerted
    for argv in (["regress", "alert", "show", text], ["regress", "alert", "set", text, "fixed", "--note", "x"],
                 ["regress", "bisect", text, "--next"]):
        code, err = _cli([*argv, "--history", str(db)], capsys)
        assert code == 2 and len(err) == 1 and "number from 1 to" in err[0], (argv, code, err)
    assert AlertStore(_store_of(db)).get(alert_id).state == "acknowledged"  # nothing was changed


def _store_of(db: Path):
    from regression.history import History

    return History(db)


@pytest.mark.parametrize("text", HOSTILE)
def test_the_pages_answer_a_hostile_id_with_a_one_line_404(alerted, text: str) -> None:
    c, _, alert_id = alerted
    for path in (f"/alerts/{text}/", f"/alerts/{text}/alert.json"):
        r = c.get(path)
        body = r.get_data(as_text=True)
        assert r.status_code == 404 and body.startswith("404 Not Found: ") and body.count("\n") == 1, (path, body)
    assert c.post(f"/alerts/{text}/state", data={"state": "fixed", "note": "x"}).status_code in (403, 404, 405)
    assert c.get(f"/alerts/{alert_id}/").status_code == 200


def test_a_note_is_capped_when_set_and_an_older_long_one_is_cut_on_the_pages(alerted, capsys) -> None:
    c, db, alert_id = alerted
    long = "x" * (MAX_NOTE + 1)
    code, err = _cli(["regress", "alert", "set", str(alert_id), "fixed", "--note", long, "--history", str(db)], capsys)
    assert code == 2 and len(err) == 1 and f"at most {MAX_NOTE}" in err[0] and long not in err[0], err
    with pytest.raises(InputError, match=f"at most {MAX_NOTE}"):
        AlertStore(_store_of(db)).set_state(alert_id, "fixed", "alice", long)
    assert main(["regress", "alert", "set", str(alert_id), "fixed", "--note", "y" * MAX_NOTE, "--by", "bob",
                 "--history", str(db)]) == 0  # the longest note taken
    capsys.readouterr()

    # a note kept before the cap (written as an older farm could): cut to the cap where anyone reads it
    with _store_of(db).transaction() as tx:
        tx.execute("INSERT INTO alert_states (alert_id, at, state, who, note) VALUES (:id, :at, 'fixed', 'old', "
                   ":note)", {"id": alert_id, "at": time.time() + 1, "note": "z" * 1_000_000})
    page = c.get(f"/alerts/{alert_id}/").get_data(as_text=True)
    assert "z" * MAX_NOTE + "…" in page and "z" * (MAX_NOTE + 1) not in page and len(page) < 100_000
    states = c.get(f"/alerts/{alert_id}/alert.json").get_json()["states"]
    assert states[-1]["note"] == "z" * MAX_NOTE + "…" and states[-2]["note"] == "y" * MAX_NOTE
