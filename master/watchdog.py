"""No build waits forever to start: FarmBuild, Buildbot's Build with its start made safe, and a watchdog.

Why FarmBuild. In Buildbot 4.3.0 `Build.startBuild` reads `workerforbuilder.worker` again after
each of its first database round trips (addBuild, the stop consumer, the preparation step), but a
worker that disconnects meanwhile (SIGKILL, a lost network) is detached at once: `Builder.detached`
sets `workerforbuilder.worker` to None. Its next read fails: `_setup_locks` ->
`locks.get_real_locks_from_accesses_raw` reads `workerforbuilder.worker.workername` even for a
build without locks (AttributeError: 'NoneType' object has no attribute 'workername'), and later
reads fail the same way (`buildPreparationFailure` -> `worker.putInQuarantine()`). The exception
leaves startBuild before the build subscribed to its connection's loss (`lostRemote`) and before
anything could finish it: Builder._startBuildFor only logs it ("please file a bug"), the build stays
in `Builder.building` with state `created`, its request stays claimed, `stop` only sets a flag
nobody reads, and only a master restart (whose housekeeping ends the build RETRY) frees it. That is
Buildbot's bug; FarmBuild works around it: a start that fails because the worker left ends the
build RETRY at once (Buildbot then queues the request again, as for any lost worker), with one line
in its preparation step; any other failure to start ends it EXCEPTION. Its `buildFinished` runs
once, so a start that resumes after the build was ended (a ping answered late) finishes nothing twice.

Why the watchdog. Whatever else may wedge a build before its first step (a ping to a half-open
connection waits for TCP's timeout, another such bug), the master checks every few seconds for
builds that started no step `deadline` seconds after it first saw them (`[buildbot] start_deadline`),
are not waiting for a lock (a busy lock is a queue, not a hang) and are not finished. Each is
retried, with one line in its preparation step and build, and the build property WATCHDOG that the
mail alert (master/reporters.py) reports; a request the watchdog already retried MAX_RETRIES times
fails instead, so a build that always wedges does not loop silently.
"""

from __future__ import annotations

import weakref

from buildbot.process.build import Build
from buildbot.process.results import EXCEPTION, FAILURE, RETRY, statusToString
from buildbot.util import service
from twisted.internet import defer, task
from twisted.python import log
from twisted.python.failure import Failure

#: Build property holding the watchdog's line, for the alert mail.
WATCHDOG = "watchdog"
#: Property source Buildbot shows for it.
SOURCE = "mlgo-farm watchdog"
#: Retries of one build request before the watchdog fails it.
MAX_RETRIES = 2


def _worker_gone(build: Build) -> bool:
    wfb = build.workerforbuilder
    return wfb is None or wfb.worker is None


@defer.inlineCallbacks
def end_unstarted(build: Build, line: str, results: int):
    """End a build that never reached its first step: `line` in its preparation step and build, then
    Buildbot's own finish (RETRY puts its requests back in the queue)."""
    build.stopped = build.terminate = True  # a start that resumes later runs no step
    build.results = results
    updates = build.master.data.updates
    try:
        if build.buildid is not None:
            build.setProperty(WATCHDOG, line, SOURCE)
            yield updates.setBuildProperty(build.buildid, WATCHDOG, line, SOURCE)
            prep = getattr(build, "_preparation_step", None)
            if prep is not None and prep.stepid is not None:
                yield updates.setStepStateString(prep.stepid, line)
                yield prep.addCompleteLog(WATCHDOG, line + "\n")
                step = yield build.master.data.get(("steps", prep.stepid))
                if step and not step["complete"]:
                    yield updates.finishStep(prep.stepid, results, False)
    except Exception:  # the line is a courtesy; the finish below is what frees the build
        log.err(Failure(), f"recording why {build} ended")
    if getattr(build, "stopBuildConsumer", None) is not None:
        yield build.buildFinished([line], results)
    else:  # it failed before Buildbot recorded it: nothing to finish in the database, only the slot
        build.finished = True
        build.workerforbuilder.buildFinished()
        build.builder.buildFinished(build, build.workerforbuilder)


class FarmBuild(Build):
    """Buildbot's Build, whose start ends it (RETRY when its worker left) instead of wedging it; see the module."""

    @defer.inlineCallbacks
    def startBuild(self, workerforbuilder):
        try:
            yield super().startBuild(workerforbuilder)
        except Exception:
            why = Failure()
            if self.finished:
                return
            if _worker_gone(self):
                line = f"worker {self.workername} left while the build started; retried"
                log.msg(f"{self}: {line} ({why.getErrorMessage()})")
                yield end_unstarted(self, line, RETRY)
            else:
                log.err(why, f"starting {self}")
                yield end_unstarted(self, f"the build failed to start: {why.getErrorMessage()}", EXCEPTION)

    def buildFinished(self, text, results):
        if self.finished:
            return defer.succeed(None)
        return super().buildFinished(text, results)


class Watchdog(service.BuildbotService):
    """Retries (then fails) builds that started no step `deadline` seconds after the master saw them."""

    name = "mlgo-farm-watchdog"

    def checkConfig(self, deadline: float, interval: float | None = None):
        if deadline <= 0:
            from buildbot.config.errors import error

            error(f"watchdog deadline must be greater than 0, got {deadline!r}")

    def reconfigService(self, deadline: float, interval: float | None = None):
        self.deadline = float(deadline)
        self.interval = interval or min(30.0, max(0.5, self.deadline / 10))
        if not hasattr(self, "_seen"):
            self._seen: weakref.WeakKeyDictionary[Build, float] = weakref.WeakKeyDictionary()
            self._retried: dict[int, int] = {}
        if getattr(self, "_loop", None) is not None and self._loop.running:
            self._loop.stop()
            self._loop = None
            return self._start()
        return defer.succeed(None)

    def _start(self):
        self._loop = task.LoopingCall(self.check)
        self._loop.clock = self.master.reactor
        self._loop.start(self.interval, now=False).addErrback(log.err, "mlgo-farm watchdog stopped")
        return defer.succeed(None)

    @defer.inlineCallbacks
    def startService(self):
        yield super().startService()
        yield self._start()

    @defer.inlineCallbacks
    def stopService(self):
        if getattr(self, "_loop", None) is not None and self._loop.running:
            self._loop.stop()
        yield super().stopService()

    def stuck(self, build: Build, now: float) -> float | None:
        """Seconds `build` has waited for its first step, once past the deadline (None: not stuck)."""
        if build.finished or build.executedSteps or build._acquiringLock is not None:
            self._seen.pop(build, None)
            return None
        age = now - self._seen.setdefault(build, now)
        return age if age >= self.deadline else None

    @defer.inlineCallbacks
    def check(self):
        now = self.master.reactor.seconds()
        for builder in list(self.master.botmaster.builders.values()):
            for build in list(builder.building):
                age = self.stuck(build, now)
                if age is None:
                    continue
                self._seen.pop(build, None)
                try:
                    yield self.rescue(build, age)
                except Exception:
                    log.err(Failure(), f"mlgo-farm watchdog on {build}")

    def rescue(self, build: Build, age: float):
        brid = build.requests[0].id if build.requests else -1
        tries = self._retried.get(brid, 0)
        results = RETRY if tries < MAX_RETRIES else FAILURE
        if results == RETRY:
            self._retried[brid] = tries + 1
        where = f"worker {build.workername or '?'} {'gone' if _worker_gone(build) else 'connected'}"
        line = (f"mlgo-farm watchdog: no step started {age:.0f}s after the build began ({where}, deadline "
                f"{self.deadline:g}s); {statusToString(results)}"
                + (f" after {tries} retries" if results != RETRY else f" ({tries + 1} of {MAX_RETRIES})"))
        log.msg(f"{build}: {line}")
        return end_unstarted(build, line, results)
