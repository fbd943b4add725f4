"""farm/locks.py made_once: concurrent tasks that need one local output make it once."""

from __future__ import annotations

import threading
from pathlib import Path

from farm.locks import made_once


def test_made_once_lets_the_second_caller_wait_and_reuse_the_first_copy(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    made: list[str] = []
    entered, release = threading.Event(), threading.Event()

    def make(who: str) -> None:
        made.append(who)
        entered.set()
        if who == "first":
            release.wait(60)
        else:  # a second maker frees the first, and the test fails on `made`
            release.set()
        out.mkdir()
        (out / "done.json").write_text(who)

    first = threading.Thread(target=made_once, args=(out, "done.json", lambda: make("first")))
    first.start()
    assert entered.wait(60)  # the first caller is inside make(), holding the lock
    results: list[Path] = []
    second = threading.Thread(target=lambda: results.append(made_once(out, "done.json", lambda: make("second"))))
    second.start()
    second.join(2)  # with the lock it is still waiting; a wrongly unlocked one has called make() by now
    release.set()
    first.join(60)
    second.join(60)
    assert made == ["first"] and results == [out] and (out / "done.json").read_text() == "first"


def test_made_once_skips_a_complete_copy_and_remakes_an_incomplete_one(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    out.mkdir()
    calls: list[int] = []
    assert made_once(out, "done.json", lambda: calls.append(1)) == out and calls == [1]  # no marker: made
    (out / "done.json").write_text("{}")
    assert made_once(out, "done.json", lambda: calls.append(2)) == out and calls == [1]
