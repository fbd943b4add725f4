"""The fan-out in threads: an interrupted training stops its searches instead of waiting for them."""

from __future__ import annotations

import threading

import pytest

from policyhost import train_tasks


def test_an_interrupted_fanout_drops_queued_jobs_and_tells_running_ones_to_stop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C or SIGTERM reaches the main thread while searches run in the pool: the queued ones never start and
    the running ones see `stop` set, so the run exits after the compiles in flight (a search in flight is up to a
    minute of compiles on LLVM's code). Each search here runs until it is told to stop; without the stop the
    test fails after a minute instead of hanging."""
    ran, saw_stop = [], []

    def job(item: int, toolchain, cache, stop: threading.Event) -> int:
        ran.append(item)
        if item == 0:
            raise KeyboardInterrupt  # what farm/cli.py's SIGTERM handler raises, delivered through the pool
        saw_stop.append(stop.wait(timeout=60))
        return item

    monkeypatch.setitem(train_tasks.JOBS, "test", job)
    run = train_tasks.thread_fanout(None, None, 2)
    with pytest.raises(KeyboardInterrupt):
        run("test", list(range(50)))
    assert saw_stop and all(saw_stop), saw_stop
    assert len(ran) <= 3, ran  # the interrupting job, the one beside it, at most one the free thread took
