"""A registry Loop as Buildbot objects: a build that starts builds of other builders one at a time, for as long as
its verb asks (the bisect coordinator `regression-bisect`: one `regression-bisect-rerun` build per re-run).

Buildbot's own dynamic steps do it, so every trial is a real build with its own page, log and worker:

    next      `regress bisect ALERT --next`: one JSON answer, the next trial (what runs it, which properties) or done
    trial-1   Trigger of the trial builder's Triggerable with those properties, waiting for the build (waitForFinish)
    next      asked again, now that the history holds the trial's re-run
    ...
    finish    `regress bisect ALERT --finish`, once `next` says done

Each `next` step adds the steps after it (`Build.addStepsAfterCurrentStep`). The state lives in what the verb reads
(for a bisect: the re-runs the history recorded), never in the master; the master only checks what the answer asks:
the trial builder must be one the Loop declares and active on this master, every property it passes must be a
parameter of that builder and accepted by it (a trial spec is `control|policy|vocab|bench|llvm|llvm=<40 hex>`, never
a path nor an executable), the same trial twice in a row means the first left no record (stop), and the number of
trials is bounded: `most` + ceil(log2 of the answer's `log2_of`), said in the step's log. `decide` is that check as a
pure function (tested without Buildbot).

A coordinator holds a build slot while its trial runs, so it takes the fan-out's waiting lock (master/fanout.py:
every worker keeps a slot for the builds it waits for); where no worker of it has two slots, the factory runs the
Loop's `alone` step instead, the whole bisect in one build.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from buildbot.plugins import steps
from buildbot.process.results import FAILURE, SUCCESS
from twisted.internet import defer

from master.registry import Builder, Loop

#: The largest `log2_of` value believed (2^40 commits): an answer cannot make the bound unbounded.
MOST_LOG2 = 40


def trial_scheduler(name: str) -> str:
    """The Triggerable that starts builds of trial builder `name`."""
    return f"trial-{name}"


def bound(loop: Loop, answer: Mapping[str, Any]) -> tuple[int, str]:
    """The most trials this build may start, and how it was reckoned (for the step's log)."""
    n = answer.get(loop.log2_of) if loop.log2_of else None
    n = n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0
    extra = min(math.ceil(math.log2(n)), MOST_LOG2) if n > 1 else 0
    if not loop.log2_of:
        return loop.most, f"at most {loop.most} trials"
    return loop.most + extra, f"at most {loop.most} + ceil(log2 {n} {loop.log2_of}) = {loop.most + extra} trials"


@dataclass(frozen=True)
class Decision:
    """What the build does after an answer: start `builder` with `properties`, run the finish step, or fail."""

    action: str  # trial | finish | fail
    said: str
    builder: str | None = None
    properties: Mapping[str, str] | None = None


def decide(loop: Loop, answer: Mapping[str, Any], builders: Mapping[str, Builder], active: set[str], made: int,
           last: Mapping[str, str] | None) -> Decision:
    """Check the ask step's `answer` (`made` trials started so far, `last` the properties of the latest)."""
    if answer.get("done") is True:
        return Decision("finish", f"done after {made} trial(s)")
    most, how = bound(loop, answer)
    kinds = dict(loop.trials)
    runs_on = answer.get("runs_on")
    name = kinds.get(runs_on) if isinstance(runs_on, str) else None
    if name is None:
        return Decision("fail", f"the answer names no known kind of trial (runs_on={runs_on!r}; "
                                f"expected {', '.join(kinds)})")
    if name not in active:
        return Decision("fail", f"no worker of this master runs {name} (a trial that runs on {runs_on} workers)")
    params = {p.name: p for p in builders[name].params}
    props: dict[str, str] = {}
    for field in loop.passes:
        value = answer.get(field)
        value = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
        if value is None or not params[field].accepts(value):
            return Decision("fail", f"{field}={answer.get(field)!r} is not a value {name} accepts "
                                    f"({params[field].regex or ', '.join(params[field].choices)})")
        props[field] = value
    if last is not None and dict(last) == props:
        return Decision("fail", f"asked for the same trial again ({_show(props)}): the last trial build left no "
                                "record of its re-run; see its log")
    if made >= most:
        return Decision("fail", f"{made} trials made, {how}: stopped")
    return Decision("trial", f"trial {made + 1}, {how}: {name} with {_show(props)}", name, props)


def _show(props: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in props.items())


class LoopAsk:
    """Mixin of the ask step (a FarmStep, master/factories.py): after the verb answered, add the next steps."""

    builder: Builder
    registry: Mapping[str, Builder]
    active: set[str]
    make: Callable[..., Any]
    #: whether a worker of the builder has a slot to wait in (else a trial would never get one: fail, saying so)
    waits: bool

    @defer.inlineCallbacks
    def after_answer(self, result):
        loop = self.builder.loop
        assert loop is not None
        if result != SUCCESS:
            return result
        state = self.build.__dict__.setdefault("_farm_loop", {"made": 0, "last": None})
        answer = self.output.result()
        bad = [f"{prop}={value!r}" for prop, value in self.output.properties(0).items()
               if any(p.name == prop and not p.accepts(str(value)) for p in self.builder.params)]
        d = Decision("fail", f"the answer sets {', '.join(bad)}, not an accepted value") if bad else \
            decide(loop, answer, self.registry, self.active, state["made"], state["last"])
        if d.action == "trial" and not self.waits:
            d = Decision("fail", f"{d.said}: but no worker of {self.builder.name} has two build slots (max_builds "
                                 f">= 2) to wait in while it runs")
        yield self.addCompleteLog("loop", d.said + "\n")
        if d.action == "fail":
            self.descriptionDone = [d.said[:200]]
            return FAILURE
        if d.action == "finish":
            self.build.addStepsAfterCurrentStep([self.make(self.spec_of(loop.finish))])
            return SUCCESS
        state["made"] += 1
        state["last"] = dict(d.properties or {})
        trigger = steps.Trigger(
            name=f"{loop.TRIGGER}-{state['made']}", schedulerNames=[trial_scheduler(d.builder)], waitForFinish=True,
            set_properties=dict(d.properties or {}), parent_relationship="trial of",
            # a failed trial is recorded as such by its verb: the next answer says what it means
            haltOnFailure=False, flunkOnFailure=False, warnOnFailure=True,
            description=f"{d.builder} running", descriptionDone=f"{d.builder}: {_show(d.properties or {})}")
        self.build.addStepsAfterCurrentStep([trigger, self.make(self.spec_of(loop.ask), ask=True)])
        return SUCCESS

    def spec_of(self, name: str):
        return next(s for s in self.builder.steps if s.name == name)
