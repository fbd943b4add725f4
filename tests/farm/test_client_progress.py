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


class Training(Step):
    """A chain step that runs: while it has not finished, its state tells the epoch it is at (farm/client.py STAGE),
    one more epoch per poll, the held-out training's then the published one's."""

    def __init__(self, polls: Polls, epochs: int) -> None:
        super().__init__("vocabgen.train", 2 * epochs, polls, None)
        self.epochs = epochs

    @property
    def state(self) -> str:  # type: ignore[override]
        return "SUCCESS" if self.successful() else "STARTED"

    @state.setter
    def state(self, value: str) -> None:
        pass

    @property
    def info(self) -> object:  # type: ignore[override]
        n = self.polls.n
        stage = "held-out training" if n < self.epochs else "training"
        return {"hostname": "w1@host", client.STAGE: {"name": stage, "done": n % self.epochs + 1, "total": self.epochs}}

    @info.setter
    def info(self, value: object) -> None:
        pass


def test_a_running_training_shows_its_epochs(monkeypatch, capsys) -> None:
    """`vocab retrain --wait` shows the epochs a worker's training is at (issue 39 item 2), as plain lines off a
    terminal: stage, done/total and elapsed, each training its own stage."""
    from farm import progress

    monkeypatch.setattr(progress, "PROGRESS_EVERY", 0.0)
    polls = Polls()
    monkeypatch.setattr(client.time, "sleep", polls.sleep)
    train = Training(polls, 3)
    publish = Step("vocabgen.publish", 7, polls, train)
    client.wait_chain(publish, 3600, None, ("train", "publish"), desc="vocab retrain")
    lines = [ln.split(",")[0] for ln in capsys.readouterr().err.splitlines() if "training" in ln]
    assert lines == [f"vocab retrain: train held-out training: {n}/3 done" for n in (1, 2, 3)] + \
        [f"vocab retrain: train training: {n}/3 done" for n in (1, 2, 3)]


def test_a_task_tells_its_stage_at_most_every_interval_and_always_at_its_end() -> None:
    class Task:
        def __init__(self) -> None:
            self.request = type("R", (), {"id": "t1", "hostname": "w1@host"})()
            self.told: list[dict] = []

        def update_state(self, state: str, meta: dict) -> None:
            assert state == "STARTED" and meta["hostname"] == "w1@host"
            self.told.append(meta[client.STAGE])

    task, now = Task(), [0.0]
    tell = client.StageTeller(task, every=1.0, clock=lambda: now[0])
    for epoch in range(1, 6):
        tell("training", epoch, 5)
        now[0] += 0.4
    assert [t["done"] for t in task.told] == [1, 4, 5]  # 0.0 s, 1.2 s, then the last epoch whenever it comes
    task.request.id = None  # run in-process, not by a worker: there is no state to tell
    tell("training", 5, 5)
    assert len(task.told) == 3
