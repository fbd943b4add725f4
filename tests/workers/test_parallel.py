"""Per-module jobs on all cores, each result counted once by the progress (farm/progress.py, tested there)."""

from __future__ import annotations

import threading

from farm import progress
from workers import parallel


def test_run_all_reports_every_item_once_and_keeps_results(capsys) -> None:
    seen: list[int] = []
    lock = threading.Lock()

    def work(i: int) -> str | None:
        with lock:
            seen.append(i)
        return "bad" if i % 3 == 0 else None

    order = list(parallel.run_all(work, range(7), jobs=2, desc="t", is_failure=bool, every=0.0))
    assert sorted(seen) == list(range(7)) and dict(order) == {i: ("bad" if i % 3 == 0 else None) for i in range(7)}
    err = capsys.readouterr().err.splitlines()
    # The progress counts the results in the order they were handed out.
    assert [ln.split(",")[0] for ln in err] == [
        f"t: {n}/7 done ({sum(1 for _, r in order[:n] if r)} failed)" for n in range(1, 7)]


def test_run_all_takes_the_farms_interval_by_default(capsys, monkeypatch) -> None:
    monkeypatch.setattr(progress, "PROGRESS_EVERY", 3600.0)
    assert dict(parallel.run_all(lambda i: i, range(3), jobs=1, desc="t")) == {0: 0, 1: 1, 2: 2}
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(progress, "PROGRESS_EVERY", 0.0)
    list(parallel.run_all(lambda i: i, range(3), jobs=1, desc="t"))
    assert [ln.split(",")[0] for ln in capsys.readouterr().err.splitlines()] == ["t: 1/3 done (0 failed)",
                                                                                 "t: 2/3 done (0 failed)"]
