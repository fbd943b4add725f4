"""Turn registry entries into Buildbot build factories and builder configurations.

Every registry step becomes a FarmStep: Buildbot's shell step machinery (ShellMixin) running
`mlgo-farm -v VERB ...` (with `--json` when the step reads the verb's answer), whose stdout is read
line by line as it arrives (master.stepspec's StepOutput) so that the finished step sets its
captured properties, says its result as its summary ("1,183 unique triplets (3 skipped)") and links
its pages on the farm's dashboard, all from the fields of the answer. A fan-out's steps are laid out by
master/fanout.py, a loop's (one build per trial, added as the verb asks) by master/loop.py.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from buildbot import config
from buildbot.plugins import steps, util
from buildbot.process import buildstep, logobserver
from twisted.internet import defer

from master import fanout, stepspec
from master.loop import LoopAsk
from master.registry import Builder, Step, by_name, downstream, loop_trials
from master.stepspec import (
    BUILD_URL,
    DASHBOARD,
    ERROR_PREFIX,
    WHAT_IF,
    StepOutput,
    check_output_spec,
    placeholders,
    render_args,
)
from master.watchdog import FarmBuild
from master.workerset import WorkerSpec, workers_for

#: The command line the worker runs for every step (`mlgo-farm` must be on the worker's PATH).
FARM_COMMAND = ("mlgo-farm", "-v")
#: The source Buildbot shows for properties a step captured (master/rest.py reads them by it).
CAPTURED = "SetPropertyFromCommand Step"
#: What a what-if build's `{buildername}` ends in (master/schedulers.py's TextForceScheduler marks them).
WHAT_IF_SUFFIX = ".what-if"
#: Build property set when the step failed with one of its `mails_itself` exit codes (master/reporters.py).
MAILED_BY_FARM = "mailed_by_farm"


def trigger_scheduler(builder_name: str) -> str:
    """Name of the Triggerable scheduler fed when `builder_name` succeeds."""
    return f"after-{builder_name}"


def _command(builder: Builder, step: Step, farm_command: Sequence[str], runs_if=None):
    """The step's command line, rendered from the build's properties when the step starts.

    Buildbot renders a step's command before it asks `doStepIf`; a step that will be skipped
    (`runs_if` false: a fan-out's merge in a build that did not fan out) may name properties
    nobody set, so it gets an empty command it never runs instead of a rendering error.
    """
    defaults = builder.defaults()
    wants_url = BUILD_URL in placeholders(step.args)

    @util.renderer
    @defer.inlineCallbacks
    def command(props):
        if runs_if is not None and not runs_if(props):
            return [*farm_command]
        # the build's own page, for what the verb mails (Buildbot knows it only once the build runs)
        url = (yield props.build.getUrl()) if wants_url and getattr(props, "build", None) is not None else None

        def lookup(name: str):
            value = props.getProperty(name)
            if value is None and name == BUILD_URL:
                return url
            if name == "buildername" and props.getProperty(WHAT_IF):
                return f"{builder.name}{WHAT_IF_SUFFIX}"  # its regression runs stay out of the nightly history
            return defaults.get(name) if value is None else value

        return [*farm_command, *stepspec.command_args(step, lookup)]

    return command


@util.renderer
def _step_env(props) -> dict[str, str]:
    """A what-if build's verbs mail nobody: their `[smtp] recipients` is emptied (the regression alert is the
    farm's own mail, which master/reporters.py does not see)."""
    return {"MLGO_FARM_SMTP_RECIPIENTS": ""} if props.getProperty(WHAT_IF) else {}


def _extract(capture: Sequence[tuple[str, str]]):
    """The properties `capture` takes from a finished step's answer (as FarmStep sets them)."""

    def extract(rc: int, stdout: str, stderr: str) -> dict[str, str]:
        return StepOutput(Step("extract", (), capture=tuple(capture))).feed(stdout).properties(rc)

    return extract


class _Lines(logobserver.LogLineObserver):
    """Hands each stdout line to the step's StepOutput as Buildbot receives it (nothing is buffered), and keeps
    the verb's error line from stderr (the one line it prints when it fails; `-v` logs go there too)."""

    def __init__(self, output: StepOutput) -> None:
        super().__init__()
        self.output = output
        self.error = ""

    def outLineReceived(self, line: str) -> None:
        self.output.line(line)

    def errLineReceived(self, line: str) -> None:
        if line.startswith(ERROR_PREFIX):
            self.error = line.strip()
        self.output.err_line(line)


class FarmStep(buildstep.ShellMixin, buildstep.BuildStep):
    """An `mlgo-farm` verb that tells its result: captured properties, a summary, links to the dashboard.

    Buildbot's SetPropertyFromCommand would say "property 'report' set" and keep the whole stdout in
    memory; this reads it line by line and says what the verb found ("text +1.39% REGRESSION"). The
    step's declarations are checked when the master reads its configuration (config.error), as
    Buildbot's own step classes check their arguments.
    """

    name = "farm"

    def __init__(self, spec: Step, **kwargs) -> None:
        kwargs = self.setupShellMixin(kwargs)
        problem = check_output_spec(spec)
        if problem:
            config.error(problem)
        self.spec = spec
        super().__init__(**kwargs)
        self.output = StepOutput(spec)
        self.lines = _Lines(self.output)
        self.addLogObserver("stdio", self.lines)

    @defer.inlineCallbacks
    def run(self):
        cmd = yield self.makeRemoteShellCommand()
        yield self.runCommand(cmd)
        stdio = yield self.getLog("stdio")
        yield stdio.finish()  # every line has reached the observer
        found = self.output.properties(cmd.rc)
        for prop, value in found.items():
            self.setProperty(prop, value, CAPTURED)
        if found:
            yield self.addCompleteLog("property changes", "\n".join(f"{k}: {v!r}" for k, v in sorted(found.items())))
        if cmd.rc in self.spec.mails_itself:
            self.setProperty(MAILED_BY_FARM, cmd.rc, "FarmStep")
        said = self.output.summary()
        if cmd.rc != 0 and not cmd.interrupted:
            # a failure says why (what its mail names as the cause), not what it would have published
            said = self.output.cause(self.lines.error) or said
        if said:
            self.descriptionDone = [said]
        base = self.master.config.buildbotURL + DASHBOARD
        for name, path in self.output.links():
            yield self.addURL(name, base + path)
        return cmd.results()  # as Buildbot's ShellCommand: its decodeRC, interruptions and timeouts


class AskStep(LoopAsk, FarmStep):
    """A Loop's ask step: the verb's answer, then the next steps it asks for (master/loop.py)."""

    def __init__(self, spec: Step, *, loop_builder: Builder, registry, active, make, waits: bool, **kwargs) -> None:
        super().__init__(spec, **kwargs)
        self.builder, self.registry, self.active, self.make = loop_builder, registry, active, make
        self.waits = waits

    @defer.inlineCallbacks
    def run(self):
        result = yield super().run()
        return (yield self.after_answer(result))


def _loop_steps(builder: Builder, registry: Sequence[Builder], farm_command: Sequence[str], can_wait: bool) -> list:
    """A loop's first step: its ask step, or where no worker can wait for the trial builds, its `alone` step."""
    loop = builder.loop
    assert loop is not None
    named = {s.name: s for s in builder.steps}
    if not can_wait and loop.alone:
        return [make_step(builder, named[loop.alone], farm_command)]
    known, active = by_name(registry), {b.name for b in registry}

    def make(step: Step, ask: bool = False):
        if not ask:
            return make_step(builder, step, farm_command)
        return make_step(builder, step, farm_command, step_class=AskStep, loop_builder=builder, registry=known,
                         active=active, make=make, waits=can_wait)

    return [make(named[loop.ask], ask=True)]


def _export(template: str):
    @util.renderer
    def value(props):
        return render_args([template], props.getProperty)[0]

    return value


def make_step(builder: Builder, step: Step, farm_command: Sequence[str] = FARM_COMMAND, **overrides):
    """The Buildbot step that runs `step`; `overrides` are Buildbot step arguments (doStepIf, workdir, ...)."""
    common = dict(
        name=step.name,
        command=_command(builder, step, farm_command, overrides.get("doStepIf")),
        timeout=step.timeout,
        haltOnFailure=True,
        logEnviron=False,  # the environment may carry store or SMTP secrets
        env=_step_env,
        description=f"{step.name} running",
        descriptionDone=step.name,
    )
    common.update(overrides)
    cls = common.pop("step_class", FarmStep)
    return cls(step, **common)


def _maker(builder: Builder, farm_command: Sequence[str]) -> fanout.MakeStep:
    def make(step: Step, **overrides):
        return make_step(builder, step, farm_command, **overrides)

    return make


def make_factory(builder: Builder, registry: Sequence[Builder],
                 farm_command: Sequence[str] = FARM_COMMAND, can_wait: bool = True) -> util.BuildFactory:
    """The builder's steps in order (a fan-out's as master/fanout.py lays them out), then a trigger for the
    builders that run after it."""
    if builder.fan_out:
        factory = util.BuildFactory(fanout.parent_steps(builder, _maker(builder, farm_command), can_wait))
    elif builder.loop:
        factory = util.BuildFactory(_loop_steps(builder, registry, farm_command, can_wait))
    else:
        factory = util.BuildFactory([make_step(builder, s, farm_command) for s in builder.steps])
    if downstream(registry, builder.name):
        factory.addStep(steps.Trigger(
            name="trigger",
            schedulerNames=[trigger_scheduler(builder.name)],
            waitForFinish=False,
            set_properties={"upstream_worker": util.Property("workername"),
                            **{k: _export(v) for k, v in builder.exports.items()}},
        ))
    return factory


def active_builders(registry: Sequence[Builder], workers: Sequence[WorkerSpec]) -> list[Builder]:
    """Builders at least one configured worker can run (the others are left out of the master)."""
    return [b for b in registry if workers_for(b.tags, workers)]


def same_worker_chooser(allowed: Sequence[str]):
    """nextWorker for a triggered builder: wait for the upstream build's worker when it may run here."""

    def choose(builder, workers, request):
        wanted = request.properties.getProperty("upstream_worker")
        if wanted in allowed:
            return next((w for w in workers if w.worker.workername == wanted), None)
        return random.choice(workers) if workers else None

    return choose


def builder_configs(registry: Sequence[Builder], workers: Sequence[WorkerSpec],
                    farm_command: Sequence[str] = FARM_COMMAND) -> list[util.BuilderConfig]:
    """One Buildbot builder per active registry builder, plus a `{name}-shard` builder per fan-out."""
    active = active_builders(registry, workers)
    waiting = fanout.waiting_lock(workers)
    trials = loop_trials(active)
    configs = []
    for b in active:
        names = workers_for(b.tags, workers)
        chooser = same_worker_chooser(names) if b.same_worker else None
        can_wait = fanout.can_wait(b, workers)
        locks = fanout.parent_locks(b, waiting, can_wait) if b.fan_out else None
        if b.loop and can_wait:  # it waits for its trials in a slot of its worker, as a fan-out for its shards
            locks = [waiting.access("counting")]
        configs.append(util.BuilderConfig(
            name=b.name, description=b.description, workernames=names,
            factory=make_factory(b, active, farm_command, can_wait),
            tags=["trial"] if b.name in trials else list(b.schedule_kinds), nextWorker=chooser, locks=locks,
        ))
        if b.fan_out:
            fanout.check_capacity(b, workers)
            configs.append(util.BuilderConfig(
                name=fanout.shard_builder(b.name), description=f"one shard of {b.name}", workernames=names,
                factory=util.BuildFactory(fanout.shard_steps(b, _maker(b, farm_command))), tags=["shard"],
                nextWorker=chooser,
            ))
    for c in configs:  # Buildbot's Build with its start made safe (master/watchdog.py)
        c.factory.buildClass = FarmBuild
    return configs
