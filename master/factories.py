"""Turn registry entries into Buildbot build factories and builder configurations."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from buildbot.plugins import steps, util

from master import fanout
from master.registry import Builder, Step, downstream, render_args
from master.workerset import WorkerSpec, workers_for

#: The command line the worker runs for every step (`mlgo-farm` must be on the worker's PATH).
FARM_COMMAND = ("mlgo-farm", "-v")


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

    @util.renderer
    def command(props):
        if runs_if is not None and not runs_if(props):
            return [*farm_command]

        def lookup(name: str):
            value = props.getProperty(name)
            return defaults.get(name) if value is None else value

        return [*farm_command, *render_args(step.args, lookup)]

    return command


def _extract(capture: Sequence[tuple[str, str]]):
    patterns = [(prop, re.compile(pattern)) for prop, pattern in capture]

    def extract(rc: int, stdout: str, stderr: str) -> dict[str, str]:
        found: dict[str, str] = {}
        for line in stdout.splitlines() if rc == 0 else []:
            for prop, rx in patterns:
                m = rx.search(line.strip())
                if m:
                    found[prop] = m.group(1)
        return found

    return extract


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
        description=f"{step.name} running",
        descriptionDone=step.name,
    )
    common.update(overrides)
    if step.capture:
        return steps.SetPropertyFromCommand(extract_fn=_extract(step.capture), **common)
    return steps.ShellCommand(**common)


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
    configs = []
    for b in active:
        names = workers_for(b.tags, workers)
        chooser = same_worker_chooser(names) if b.same_worker else None
        can_wait = fanout.can_wait(b, workers)
        configs.append(util.BuilderConfig(
            name=b.name, description=b.description, workernames=names,
            factory=make_factory(b, active, farm_command, can_wait), tags=list(b.schedule_kinds), nextWorker=chooser,
            locks=fanout.parent_locks(b, waiting, can_wait) if b.fan_out else None,
        ))
        if b.fan_out:
            fanout.check_capacity(b, workers)
            configs.append(util.BuilderConfig(
                name=fanout.shard_builder(b.name), description=f"one shard of {b.name}", workernames=names,
                factory=util.BuildFactory(fanout.shard_steps(b, _maker(b, farm_command))), tags=["shard"],
                nextWorker=chooser,
            ))
    return configs
