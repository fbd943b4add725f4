"""A registry FanOut as Buildbot objects: the trigger that starts one build per shard, the shard builder's
steps, and the lock that keeps waiting builds from taking every build slot.

A fanned-out build (`shards` = N > 1) lays out its steps as:

    fan-out  ShardTrigger: N requests of `{name}-shard`, each with its own `shard` (I/N) and the run id,
             waits for all of them (waitForFinish)
    merge    `dataset merge --run RUN --shards N -o OUTPUT`: refuses an incomplete, mixed or corrupt set
    ...      the builder's remaining steps (publish), on the merged dataset
    drop-shards  always: the run's parts leave the store

with the fanned-out steps skipped; with N = 1 it is the other way round, and the build is what it
always was. A shard build runs the fanned-out steps in a directory of its own (`shard-RUN-I-of-N`:
two shards may share a worker), uploads its part (`dataset put-shard`) and removes the directory.

A build waiting for its shards holds a build slot of its worker. If waiting builds held every slot
their shards could use, nothing would move again; so a waiting build takes the counting WorkerLock
`fan-out-waiting`, of which a worker with `max_builds` slots grants max_builds - 1: every worker
always keeps a slot for shards. Buildbot checks a build's locks before it gives the build a
worker, so a build that would wait too many waits for a slot instead of holding one. Where no
worker has two slots, N > 1 fails at once, saying so (N = 1 needs no waiting).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Sequence
from typing import Any

from buildbot.plugins import steps, util
from buildbot.process.results import FAILURE
from twisted.internet import defer

from farm.errors import InputError
from master.registry import SHARD, SHARD_RUN, SHARDS, Builder, Step
from master.stepspec import placeholders
from master.workerset import WorkerSpec

#: Make a Buildbot step of a registry step for the builder at hand (factories.make_step, bound).
MakeStep = Callable[..., Any]
LOCK = "fan-out-waiting"
_SHARD_VALUE = re.compile(r"([0-9]{1,4})/([0-9]{1,4})")


def shard_builder(name: str) -> str:
    return f"{name}-shard"


def shard_scheduler(name: str) -> str:
    """The Triggerable that starts `{name}-shard` builds."""
    return f"shards-{name}"


def shard_count(props: Any, default: int) -> int:
    """N of this build (`shards`, else the fan-out's default); -1 when it is not a number."""
    value = props.getProperty(SHARDS)
    if value in (None, ""):
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def workers_of(b: Builder, workers: Sequence[WorkerSpec]) -> list[WorkerSpec]:
    return [w for w in workers if w.runs(b.tags)]


def can_wait(b: Builder, workers: Sequence[WorkerSpec]) -> bool:
    """Whether some worker of `b` has a slot to wait in and one more for shards."""
    return any(w.max_builds >= 2 for w in workers_of(b, workers))


def check_capacity(b: Builder, workers: Sequence[WorkerSpec]) -> None:
    """A fan-out whose default N > 1 waits on any of its workers (a triggered run keeps to its upstream's)."""
    small = [w.name for w in workers_of(b, workers) if w.max_builds < 2]
    if b.fan_out and b.fan_out.default > 1 and small:
        raise InputError(f"builder {b.name!r} fans out into {b.fan_out.default} shards by default, but worker(s) "
                         f"{', '.join(small)} have one build slot, taken by the waiting build: give them "
                         f"max_builds >= 2 or make the default 1")


def waiting_lock(workers: Sequence[WorkerSpec]) -> util.WorkerLock:
    """The lock of waiting builds: max_builds - 1 per worker (one lock for all fan-outs)."""
    return util.WorkerLock(LOCK, maxCount=0, maxCountForWorker={w.name: w.max_builds - 1 for w in workers})


def parent_locks(b: Builder, lock: util.WorkerLock, waits: bool):
    """Build locks of a fan-out builder: the waiting lock only when this build will wait (N > 1)."""
    default = b.fan_out.default if b.fan_out else 1

    @util.renderer
    def locks(props):
        return [lock.access("counting")] if waits and shard_count(props, default) != 1 else []

    return locks


class ShardTrigger(steps.Trigger):
    """Buildbot's Trigger, fanned out.

    `getSchedulersAndProperties` is Buildbot's hook for what a trigger starts; here it returns one
    entry per shard, each with its own `shard` (`I/N`), so Buildbot starts N buildsets and, with
    waitForFinish, waits for every one. Their properties differ in `shard`, so
    master/collapse.py never merges one shard's request into another's. The run id
    (`{builder}-b{buildid}-{8 hex}`) is set on this build too, for its merge and clean-up steps;
    the random part keeps a run's store folder its own even when a new master counts build ids
    from 1 again against the same bucket.
    """

    def __init__(self, builder_name: str, default: int, most: int, passed: Sequence[str], waits: bool, **kwargs):
        self.builder_name, self.default, self.most = builder_name, default, most
        self.passed, self.waits = tuple(passed), waits
        self.problem: str | None = None
        self.count, self.run_id = 0, ""
        super().__init__(schedulerNames=[shard_scheduler(builder_name)], waitForFinish=True,
                         parent_relationship="shard of", **kwargs)

    def getSchedulersAndProperties(self):
        given = {k: v for k in self.passed if (v := self.getProperty(k)) not in (None, "")}
        return [{"sched_name": shard_scheduler(self.builder_name), "unimportant": False,
                 "props_to_set": {**given, SHARDS: str(self.count), SHARD: f"{i}/{self.count}", SHARD_RUN: self.run_id}}
                for i in range(1, self.count + 1)]

    @defer.inlineCallbacks
    def run(self):
        self.count = shard_count(self, self.default)
        if not 2 <= self.count <= self.most:
            self.problem = f"shards={self.getProperty(SHARDS)!r}: use 1..{self.most}"
        elif not self.waits:
            self.problem = (f"shards={self.count} needs a worker of {self.builder_name} with max_builds >= 2 (this "
                            f"build holds a slot while its shards run); none has: run with shards=1")
        if self.problem:
            yield self.addCompleteLog("stdio", self.problem + "\n")
            return FAILURE
        self.run_id = f"{self.builder_name}-b{self.build.buildid}-{secrets.token_hex(4)}"
        self.setProperty(SHARD_RUN, self.run_id, "fan-out", runtime=True)
        return (yield super().run())

    def getResultSummary(self):
        return {"step": self.problem} if self.problem else super().getResultSummary()


def parent_steps(b: Builder, make: MakeStep, waits: bool) -> list:
    """The fan-out builder's own steps (see the module docstring)."""
    f = b.fan_out
    assert f is not None
    fanned, rest = b.steps[:len(f.steps)], b.steps[len(f.steps):]

    def unsplit(step) -> bool:
        return shard_count(step, f.default) == 1

    def split(step) -> bool:
        return not unsplit(step)

    def triggered(step) -> bool:  # the trigger ran and named the run
        return split(step) and bool(step.getProperty(SHARD_RUN))

    # what the shard builds' steps read, and where a triggered run's files are; Buildbot names each build itself
    passed = sorted({p for s in (*fanned, f.upload()) for p in placeholders(s.args)}
                    - {SHARD, SHARD_RUN, "buildername"} | {"upstream_worker"})
    return [
        *(make(s, doStepIf=unsplit) for s in fanned),
        # a failed shard does not stop the build here: the merge then names what is missing, in one line
        ShardTrigger(b.name, f.default, f.most, passed, waits, name=f.TRIGGER, doStepIf=split,
                     haltOnFailure=False, flunkOnFailure=True),
        make(f.merge(), doStepIf=triggered),
        *(make(s) for s in rest),
        make(f.drop(), doStepIf=triggered, alwaysRun=True, haltOnFailure=False, flunkOnFailure=False,
             warnOnFailure=True),
    ]


@util.renderer
def shard_workdir(props) -> str:
    """`shard-RUN-I-of-N`: each shard build its own directory, even beside another on one worker."""
    m = _SHARD_VALUE.fullmatch(str(props.getProperty(SHARD) or ""))
    key = f"{m[1]}-of-{m[2]}" if m else "unknown"
    return f"shard-{props.getProperty(SHARD_RUN) or 'unknown'}-{key}"


def shard_steps(b: Builder, make: MakeStep) -> list:
    """A shard build: the fanned-out steps (with `--shard I/N`), the upload, then its directory removed."""
    f = b.fan_out
    assert f is not None
    fanned: tuple[Step, ...] = b.steps[:len(f.steps)]
    return [
        *(make(s, workdir=shard_workdir) for s in (*fanned, f.upload())),
        steps.RemoveDirectory(name="clean", dir=shard_workdir, alwaysRun=True, haltOnFailure=False,
                              flunkOnFailure=False, warnOnFailure=True),
    ]
