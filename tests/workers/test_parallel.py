"""Progress of long per-module runs: a builder must hear from a step long before its silence timeout."""

from __future__ import annotations

import io
import threading

from workers import parallel


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


def test_a_line_per_interval_off_a_terminal_counting_failures() -> None:
    out = Pipe()
    p = parallel.Progress(4, "triplets ir: modules", every=0.0, stream=out, is_failure=lambda r: isinstance(r, str))
    for r in (None, "clang failed", None, None):
        p.update(r)
    lines = out.getvalue().splitlines()
    # Not after the last item: the command's own summary follows.
    assert [ln.split(",")[0] for ln in lines] == [
        "triplets ir: modules: 1/4 done (0 failed)", "triplets ir: modules: 2/4 done (1 failed)",
        "triplets ir: modules: 3/4 done (1 failed)"]
    assert all(ln.split(", ")[1].endswith("s") for ln in lines)  # elapsed
    assert all(ln.split(", ")[2].startswith("about ") and ln.endswith("s left") for ln in lines)  # and an estimate


def test_a_run_shorter_than_the_interval_prints_nothing() -> None:
    out = Pipe()
    p = parallel.Progress(3, "corpus", every=3600.0, stream=out)
    for _ in range(3):
        p.update(None)
    assert out.getvalue() == ""


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
