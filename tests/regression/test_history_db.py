"""The history's database beyond one file (regression/database.py, regression/migrations.py): PostgreSQL shared by
processes, its errors as one line without the password, a database of a newer farm refused, the configured URL,
schema revisions that import no code of the farm."""

from __future__ import annotations

import ast
import multiprocessing
from pathlib import Path

import pytest

from farm.cli import main
from farm.errors import FarmError
from regression import compare, database, migrations
from regression.alerts.outbox import Outbox
from regression.history import History
from tests import pgserver
from tests.regression.conftest import open_at_once
from tests.test_layout import PACKAGES


def test_processes_complete_runs_at_once_on_postgresql(postgres) -> None:
    url = postgres.create_database()
    spawn = multiprocessing.get_context("spawn")
    procs = [spawn.Process(target=pgserver.complete_runs, args=(url, f"b{i}", 8)) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    h = History(url)
    assert sorted((r.builder, r.run_id) for r in h.runs()) == [(f"b{i}", f"r{j}") for i in range(2) for j in range(8)]
    assert all(r.status == "complete" and len(h.measurements(r)) == 20 for r in h.runs())
    assert len({m.id for m in Outbox(h).messages()}) == 16
    database.dispose(database.url_of(url))


def test_openers_of_a_new_postgresql_database_create_its_schema_once(postgres) -> None:
    url = postgres.create_database()
    assert open_at_once(url, 4) == []
    with History(url).transaction(write=False) as db:
        assert [tuple(r) for r in db.execute("SELECT version_num FROM alembic_version")] == [(migrations.head(),)]
    database.dispose(database.url_of(url))


def test_a_wrong_password_is_one_line_naming_the_url_without_it(postgres, capsys) -> None:
    url = postgres.create_database()
    wrong = url.replace(postgres.password, "not-the-Secret-42")
    with pytest.raises(FarmError) as e:
        History(wrong)
    message = str(e.value)
    assert "\n" not in message and "not-the-Secret-42" not in message and postgres.password not in message
    assert message.startswith(f"history database postgresql+psycopg://farm:***@127.0.0.1:{postgres.port}/")
    assert "password authentication failed" in message
    # through the command line: exit 1, one line on stderr, no password anywhere
    assert main(["regress", "history", "--history", wrong]) == 1
    out, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and "farm:***@" in err
    assert "not-the-Secret-42" not in out + err
    # the dashboard's pages: 503 with that line (master/dashboard/app.py answers a StoreError so)
    from farm.errors import StoreError
    from master.dashboard import trends

    with pytest.raises(StoreError, match=r"^history database .*farm:\*\*\*@") as e:
        trends.open_history(wrong)
    assert "not-the-Secret-42" not in str(e.value)
    # nothing listening: one line too
    with pytest.raises(FarmError, match=r"^history database postgresql\+psycopg://farm:\*\*\*@127\.0\.0\.1:1/x: "):
        History(postgres.url("x", password="hunter2").replace(f":{postgres.port}/", ":1/"))


def test_a_database_of_a_newer_farm_is_refused_and_not_written(history_at: str) -> None:
    h = History(history_at)
    with h.transaction() as db:
        db.execute("UPDATE alembic_version SET version_num='9999_from_the_future'")
    with pytest.raises(FarmError, match=r"schema revision 9999_from_the_future, which this farm does not know.*"
                                        "upgrade the farm") as e:
        History(history_at)
    assert "\n" not in str(e.value)
    with h.transaction(write=False) as db:
        assert [tuple(r) for r in db.execute("SELECT version_num FROM alembic_version")] == [("9999_from_the_future",)]


def test_the_configured_url_is_the_history_of_every_verb(postgres, monkeypatch, capsys) -> None:
    url = postgres.create_database()
    bare = url.replace(f":{postgres.password}@", "@")
    monkeypatch.setenv("MLGO_FARM_REGRESSION_HISTORY_URL", bare.replace("postgresql+psycopg://", "postgresql://"))
    monkeypatch.setenv("MLGO_FARM_REGRESSION_HISTORY_PASSWORD", postgres.password)
    h = compare.open_history()
    assert h.path is None and h.where == f"postgresql+psycopg://farm:***@127.0.0.1:{postgres.port}/" + \
        url.rsplit("/", 1)[1]
    h.start_run("r1", "nightly", llvm_version="22", llvm_commit=None, policy_id="p", vocab_version=None)
    assert main(["regress", "history", "--json"]) == 0
    assert '"run_id": "r1"' in capsys.readouterr().out
    # the dashboard opens it too (master/dashboard/context.py keeps the setting as it is)
    from master.dashboard import trends

    shared = trends.open_history(compare.history_path(compare.load_settings()))
    assert shared is not None and [r.run_id for r in shared.runs()] == ["r1"]
    database.dispose(database.url_of(url))


def test_urls_and_paths(tmp_path: Path) -> None:
    from master.dashboard import trends

    assert trends.open_history(tmp_path / "none.sqlite") is None  # no file yet: no history, nothing created
    assert not (tmp_path / "none.sqlite").exists()
    assert database.url_of("postgres://u:pw@h/db").drivername == "postgresql+psycopg"
    assert database.shown(database.url_of("postgresql://u:pw@h:5/db")) == "postgresql+psycopg://u:***@h:5/db"
    assert database.shown(database.url_of(tmp_path / "h.sqlite")) == str(tmp_path / "h.sqlite")
    assert History(f"sqlite:///{tmp_path}/u.sqlite").path == tmp_path / "u.sqlite"
    for bad, message in (("mysql://u:pw@h/db", "SQLite .* or PostgreSQL"), ("sqlite://", "name a file")):
        with pytest.raises(FarmError, match=message) as e:
            History(bad)
        assert "pw" not in str(e.value)


def test_a_raw_at_in_the_password_is_refused_in_one_line_without_the_password(monkeypatch, capsys) -> None:
    """Two `@` before the host: which one ends the password is a guess, so it is refused (said to percent-encode),
    and no part of the password is printed, on the command line nor by the configured URL."""
    raw = "postgresql://farm:p@ss-Secret42@127.0.0.1:1/history"
    with pytest.raises(FarmError, match=r"percent-encode .*%40") as e:
        History(raw)
    assert "Secret42" not in str(e.value) and "ss-" not in str(e.value)
    assert main(["regress", "history", "--history", raw]) == 2
    out, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and "percent-encode" in err
    assert "postgresql://farm:***@127.0.0.1:1/history" in err and "Secret42" not in out + err
    monkeypatch.setenv("MLGO_FARM_REGRESSION_HISTORY_URL", raw)
    assert main(["regress", "history"]) == 2
    out, err = capsys.readouterr()
    assert "percent-encode" in err and "Secret42" not in out + err and "ss-" not in out + err
    # percent-encoded, the same password is the URL's own (and still never shown)
    url = database.url_of(raw.replace("p@ss", "p%40ss"))
    assert url.password == "p@ss-Secret42" and "Secret42" not in database.shown(url)


REVISIONS = Path(migrations.__file__).parent / "schema" / "versions"


def farm_imports(path: Path) -> list[str]:
    """What a revision file imports of the farm's packages (lazily too; a relative import is the farm's too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in PACKAGES]
        elif isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in PACKAGES):
            found.append("." * node.level + (node.module or ""))
    return found


def test_a_schema_revision_imports_no_code_of_the_farm(tmp_path: Path) -> None:
    """LNT's rule: an upgrade script stays as it was written while the software changes, so a revision imports
    no module of the farm (what it needs of one, it keeps a frozen copy of: revision 0004's `bisect_alert`)."""
    revisions = sorted(REVISIONS.glob("[0-9]*.py"))
    assert len(revisions) >= 5
    assert {p.name: farm_imports(p) for p in revisions} == {p.name: [] for p in revisions}
    lazy = tmp_path / "0099_x.py"
    lazy.write_text("import json\nimport sqlalchemy as sa\n\ndef f():\n    from farm import jsonio\n"
                    "    import regression.history\n    from . import y\n")
    assert farm_imports(lazy) == ["farm", "regression.history", "."]
