"""The history on SQLite and on a real PostgreSQL (tests/pgserver.py): rows per run/builder/subject/metric/policy,
run order, concurrent writers (the alerts' outbox in the same database: tests/regression/alerts/test_outbox.py)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from farm.errors import InputError
from regression.history import History, Measurement, Skipped
from regression.rules import Comparison


def _start(h: History, run_id: str, builder: str = "b1", policy: str = "never"):
    return h.start_run(run_id, builder, llvm_version="22.1.8", llvm_commit="a" * 40, policy_id=policy,
                       vocab_version="ir-v3", config={"opt_flags": ["-Oz"]})


def test_one_row_per_run_builder_subject_metric_policy(history_at: str) -> None:
    h = History(history_at)
    run = _start(h, "r1")
    rows = [Measurement("zlib", "binary", "text_size", p, v, unit="bytes")
            for p, v in (("heuristic", 10), ("policy", 9))]
    rows.append(Measurement("zlib/compress", "workload", "wall_time", "policy", 0.2, (0.1, 0.2, 0.3), "s"))
    h.add_measurements(run, rows)
    h.add_measurements(run, [Measurement("zlib", "binary", "text_size", "policy", 8, unit="bytes")])  # replaces
    with h.transaction(write=False) as db:
        got = [tuple(r) for r in db.execute("SELECT run_id, builder, subject, metric, policy, value, llvm_commit,"
                                            " policy_id, vocab_version FROM measurements ORDER BY subject, policy")]
    assert got == [
        ("r1", "b1", "zlib", "text_size", "heuristic", 10.0, "a" * 40, "never", "ir-v3"),
        ("r1", "b1", "zlib", "text_size", "policy", 8.0, "a" * 40, "never", "ir-v3"),
        ("r1", "b1", "zlib/compress", "wall_time", "policy", 0.2, "a" * 40, "never", "ir-v3"),
    ]
    back = h.measurements(run, "policy")
    assert [m.samples for m in back] == [(), (0.1, 0.2, 0.3)]
    assert h.run("r1", "b1").config == {"opt_flags": ["-Oz"]}


def test_run_ids_are_unique_per_builder_unless_failed(history_at: str) -> None:
    h = History(history_at)
    run = _start(h, "r1")
    with pytest.raises(InputError, match="run r1 of builder b1 already exists"):
        _start(h, "r1")
    _start(h, "r1", builder="b2")  # another builder may use the same id
    h.add_measurements(run, [Measurement("x", "total", "text_size", "policy", 1)])
    h.fail_run(run, "boom")
    again = _start(h, "r1")  # a failed attempt is replaced, its partial rows dropped
    assert again.status == "running" and h.measurements(again) == []
    with pytest.raises(InputError, match="no run 'zz'"):
        h.run("zz", "b1")


def test_previous_runs_follow_insertion_order(history_at: str) -> None:
    h = History(history_at)
    verdicts = ["ok", "regression", None, "regression"]  # None: a failed run
    runs = []
    for i, v in enumerate(verdicts):
        run = _start(h, f"r{i}")
        if v is None:
            h.fail_run(run, "compiler crashed")
        else:
            h.complete_run(run, v, f"file:///r{i}")
        runs.append(h.run(f"r{i}", "b1"))
    current = _start(h, "r9")
    assert h.previous_run(current).run_id == "r3"
    assert h.previous_run(current, verdict="ok").run_id == "r0"
    assert h.previous_run(runs[0]) is None
    assert [r.run_id for r in h.runs("b1", limit=3)] == ["r2", "r3", "r9"]
    assert [r.run_id for r in h.runs("b1", upto_seq=runs[1].seq)] == ["r0", "r1"]
    assert h.latest_run("b1").run_id == "r9"


def test_verdicts_and_skips_round_trip(history_at: str) -> None:
    h = History(history_at)
    run = _start(h, "r1")
    c = Comparison("lua/fib", "workload", "instructions", "heuristic", 100.0, 110.0, 10.0, None, "regressed", True)
    inf = Comparison("m.c", "module", "text_size", "heuristic", 0.0, 8.0, float("inf"), None, "regressed", False)
    h.add_verdicts(run, [c, inf])
    h.add_skipped(run, [Skipped("lua", "policy", "policy-cc exited with code 1: boom")])
    got = {x.subject: x for x in h.verdicts(run)}
    assert got["lua/fib"] == c
    assert got["m.c"].delta_pct is None  # infinite growth is stored as unknown, verdict kept
    assert h.skipped(run) == [Skipped("lua", "policy", "policy-cc exited with code 1: boom")]


def test_concurrent_builders_write_without_losing_rows(history_at: str) -> None:
    path = history_at
    History(path)
    errors: list[BaseException] = []

    def builder(name: str) -> None:
        try:
            h = History(path)
            run = _start(h, "r", builder=name)
            for i in range(30):
                h.add_measurements(run, [Measurement(f"m{i}", "module", "text_size", "policy", i)])
            h.complete_run(run, "ok", None)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=builder, args=(f"b{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    h = History(path)
    assert sorted(r.builder for r in h.runs()) == ["b0", "b1", "b2", "b3"]
    assert all(len(h.measurements(r)) == 30 and r.status == "complete" for r in h.runs())


def test_unwritable_location_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(Exception, match="history database") as e:
        History(blocker / "h.sqlite")
    assert "\n" not in str(e.value)


def test_hostile_json_in_a_row_is_one_store_error_and_no_failed_upgrade(tmp_path: Path) -> None:
    """JSON columns are read through farm/jsonio.py: a hand-edited row (nesting past the parser's depth) is one
    StoreError naming it, and the upgrade that reads configs (revision 0004) takes it for no bisect."""
    import importlib

    from farm.errors import StoreError

    portable = importlib.import_module("regression.schema.versions.0004_portable")
    hostile = "[" * 200_000
    assert portable.bisect_alert(hostile) is None and portable.bisect_alert("[1]") is None
    # the other ways farm/jsonio.py names, in the revision's frozen copy too: too many digits, not JSON at all
    assert portable.bisect_alert('{"bisect": {"alert": ' + "9" * 5000 + "}}") is None
    assert portable.bisect_alert('{"bisect": ') is None
    assert portable.bisect_alert('{"bisect": {"alert": 3}}') == 3 and portable.bisect_alert('{"bisect": {}}') == 0
    h = History(tmp_path / "h.sqlite")
    _start(h, "r1")
    with h.transaction() as db:
        db.execute("UPDATE runs SET config=:c WHERE run_id='r1'", {"c": hostile})
    with pytest.raises(StoreError, match=r"^history: run r1 of builder b1 config: JSON nested too deeply to read$"):
        h.runs()
