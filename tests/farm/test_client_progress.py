"""`vocab retrain --wait` and `policy retrain --wait` show the chain's steps done (farm/client.py `wait_chain`,
through farm/progress.py): a line per step on stderr, with stage, done/total and elapsed. The chain is fake results
that finish one step per poll, so nothing waits on time."""

from __future__ import annotations

import re

import pytest

from farm import client
from farm.errors import FarmError


class Polls:
    """The wait's pauses, counted instead of slept."""

    def __init__(self) -> None:
        self.n = 0

    def sleep(self, seconds: float) -> None:
        self.n += 1


class Step:
    """A chain task that succeeds after `after` polls, or fails then with `error`."""

    def __init__(self, name: str, after: int, polls: Polls, parent: Step | None, error: Exception | None = None):
        self.name, self.after, self.polls, self.parent, self.error = name, after, polls, parent, error
        self.id, self.state, self.info = name, "PENDING", None

    def successful(self) -> bool:
        return self.error is None and self.polls.n >= self.after

    def failed(self) -> bool:
        return self.error is not None and self.polls.n >= self.after

    @property
    def result(self) -> object:
        return self.error if self.error is not None else {"published": self.name}


def _chain(polls: Polls, error: Exception | None = None) -> Step:
    train = Step("vocabgen.train", 2, polls, None)
    validate = Step("vocabgen.validate", 3, polls, train)
    return Step("vocabgen.publish", 5, polls, validate, error)


def test_a_line_per_step_done_with_stage_done_total_and_elapsed(monkeypatch, capsys) -> None:
    polls = Polls()
    monkeypatch.setattr(client.time, "sleep", polls.sleep)
    got = client.wait_chain(_chain(polls), 3600, None, ("train", "validate", "publish"), desc="vocab retrain")
    assert got == {"published": "vocabgen.publish"}
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    stage = "vocab retrain: chain steps done (train → validate → publish)"
    assert [ln.split(",")[0] for ln in lines] == [f"{stage}: {n}/3 done" for n in (1, 2, 3)]
    assert all(re.search(r", \d+m\d\ds(, about \d+m\d\ds left)?$", ln) for ln in lines)


def test_without_a_verb_the_wait_says_nothing_and_a_failure_is_still_one_error(monkeypatch, capsys) -> None:
    polls = Polls()
    monkeypatch.setattr(client.time, "sleep", polls.sleep)
    assert client.wait_chain(_chain(polls), 3600, None, ()) == {"published": "vocabgen.publish"}
    assert capsys.readouterr().err == ""
    polls = Polls()
    monkeypatch.setattr(client.time, "sleep", polls.sleep)
    with pytest.raises(FarmError, match="the gate said no"):
        client.wait_chain(_chain(polls, FarmError("the gate said no")), 3600, None, ("train", "validate", "publish"),
                          desc="vocab retrain")
    assert [ln.split(",")[0] for ln in capsys.readouterr().err.splitlines()] == [
        "vocab retrain: chain steps done (train → validate → publish): 1/3 done",
        "vocab retrain: chain steps done (train → validate → publish): 2/3 done"]
