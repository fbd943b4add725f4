"""The shared training output directory of concurrent identical requests."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from farm.vocabfile import sha256
from vocabgen.build import read_local, train_once

DATA = b'{"Opcodes":{}}\n'


def _made(label: str) -> tuple[bytes, dict]:
    return DATA, {"sha256": sha256(DATA), "trained_at": label}


def test_the_second_finisher_reuses_the_first_output_and_never_replaces_it(tmp_path: Path) -> None:
    """Both requests train; the one that finishes second must not rename the directory away under readers."""
    out = tmp_path / "trained" / "ir-0123-abcd"
    first_done = threading.Event()

    def first():
        try:
            return train_once(out, lambda: _made("first"))
        finally:
            first_done.set()

    def second():
        def make():
            assert first_done.wait(30)  # trained, but finishes after the first one has written
            return _made("second")
        return train_once(out, make)

    with ThreadPoolExecutor(2) as ex:
        got = [f.result() for f in [ex.submit(second), ex.submit(first)]]
    assert [m["trained_at"] for _, m in got] == ["first", "first"]
    assert json.loads((out / "manifest.json").read_text())["trained_at"] == "first"
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "vocab.json"]
    assert sorted(p.name for p in out.parent.iterdir()) == [".ir-0123-abcd.lock", "ir-0123-abcd"], "no leftovers"


def test_a_finished_output_is_read_without_training(tmp_path: Path) -> None:
    out = tmp_path / "t"
    train_once(out, lambda: _made("once"))

    def must_not_train():
        raise AssertionError("trained again")

    assert train_once(out, must_not_train) == read_local(out)



def test_a_trained_output_is_readable_by_other_users_whatever_the_umask(tmp_path: Path) -> None:
    import os
    import stat

    from vocabgen.build import write_local

    old = os.umask(0o077)
    try:
        out = write_local(tmp_path / "t", *_made("modes"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir()} == {"vocab.json": 0o644,
                                                                               "manifest.json": 0o644}
