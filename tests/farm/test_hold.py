"""The tests' hold on a training: a file the test controls, never a guess at how long the training lasts."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from farm import hold
from farm.errors import FarmError
from tests.servers import wait_until


def test_unset_or_without_its_file_it_returns_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(hold.ENV, raising=False)
    hold.checkpoint("training")
    here = tmp_path / "holds"
    here.mkdir()
    monkeypatch.setenv(hold.ENV, str(here / "gate"))
    hold.checkpoint("training")
    assert list(here.iterdir()) == [], "nothing written when nothing is held"


def test_holds_while_the_file_exists_and_says_who_is_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = tmp_path / "gate"
    gate.touch()
    monkeypatch.setenv(hold.ENV, str(gate))
    done = threading.Event()
    worker = threading.Thread(target=lambda: (hold.checkpoint("training"), done.set()), daemon=True)
    worker.start()
    marker = hold.held_marker(gate)
    # the marker is created, then its line written: wait for the line, not for the file
    wait_until(lambda: marker.exists() and marker.read_text().endswith("\n"), 10, "the marker's line")
    assert marker.read_text() == f"{os.getpid()}\n"
    assert not done.is_set(), "held while the file exists"
    gate.unlink()
    worker.join(10)
    assert done.is_set()


def test_a_hold_never_lasts_forever(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = tmp_path / "gate"
    gate.touch()
    monkeypatch.setenv(hold.ENV, str(gate))
    monkeypatch.setenv(hold.SECONDS_ENV, "0.2")
    with pytest.raises(FarmError, match=rf"^training held by the test file {gate} for more than 0.2s$"):
        hold.checkpoint("training")
