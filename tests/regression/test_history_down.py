"""A history that goes down mid-run (regression/unfinished.py): the run stayed `running` for ever, lost what it had
measured, and its error named the database, not the run. A real PostgreSQL of its own, stopped by the benchmark's
own workload (the moment between measuring and recording, with no hook in the farm), and started again."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from farm.cli import main
from farm.config import load_settings
from regression import compare, database, unfinished
from regression.history import History
from regression.tasks import sweep_unfinished
from tests.pgserver import postgres_server

#: A benchmark whose workload runs its argument (stops the database) and prints the same line whatever happens.
STOPPER = ('#include <stdio.h>\n#include <stdlib.h>\n'
           'int main(int c, char **v) { if (c > 1 && system(v[1])) {} puts("done"); return 0; }\n')


def _run(url: str, src: Path, run_id: str, arg: str) -> int:
    return main(["regress", "run", "--history", url, "--bench-dir", str(src), f"--bench-arg={arg}", "--repeats", "0",
                 "--no-callgrind", "--builder", "nightly", "--run-id", run_id])


def test_a_run_whose_history_goes_down_names_itself_keeps_its_measurements_and_is_failed_once_it_is_back(
        tmp_path: Path, capsys, monkeypatch) -> None:
    src = tmp_path / "stopper"
    src.mkdir()
    (src / "main.c").write_text(STOPPER)
    with postgres_server() as pg:  # its own: this test stops it
        url = pg.create_database()
        assert _run(url, src, "r1", shlex.join(pg.stop_argv) + " >/dev/null 2>&1") == 1
        err = capsys.readouterr().err
        kept = compare.run_dir(load_settings(), "nightly", "r1") / unfinished.KEPT
        assert len(err.strip().splitlines()) == 1 and pg.password not in err
        assert "run r1 of builder nightly could not be completed nor marked failed (history database " in err
        assert f"its measurements are kept in {kept}" in err
        measured = json.loads(kept.read_text())["measurements"]
        assert {(m["subject"], m["policy"]) for m in measured} >= {("stopper", p) for p in ("heuristic", "policy")}

        pg.start()  # the history is back: nobody has said otherwise yet
        h = History(url)
        assert h.run("r1", "nightly").status == "running"
        assert _run(url, src, "r2", "true") == 0  # the next run on this host marks it failed
        r1 = h.run("r1", "nightly")
        assert r1.status == "failed" and "the history was down" in r1.error and str(kept) in r1.error
        assert h.run("r2", "nightly").status == "complete"
        assert list(unfinished.spool_dir(load_settings()).glob("*/*.json")) == []
        database.dispose(database.url_of(url))


def test_the_sweep_fails_a_spooled_run_once_the_history_is_back(tmp_path: Path, monkeypatch, capsys) -> None:
    """Celery beat's sweep does what the next run does, for a host whose next run is far off."""
    src = tmp_path / "stopper"
    src.mkdir()
    (src / "main.c").write_text(STOPPER)
    with postgres_server() as pg:
        url = pg.create_database()
        assert _run(url, src, "r1", shlex.join(pg.stop_argv) + " >/dev/null 2>&1") == 1
        capsys.readouterr()
        monkeypatch.setenv("MLGO_FARM_REGRESSION_HISTORY_URL", url)
        assert sweep_unfinished()["failed"] == []  # still down: kept for the next sweep
        pg.start()
        assert sweep_unfinished() == {"failed": ["run r1 of builder nightly"]}
        assert History(url).run("r1", "nightly").status == "failed"
        database.dispose(database.url_of(url))
