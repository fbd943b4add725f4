"""Schedulers derived from the registry: nightly, triggered (after another builder), on change, force."""

from __future__ import annotations

from collections.abc import Sequence

from buildbot.plugins import schedulers, util
from buildbot.schedulers.forcesched import CollectedValidationError, StringParameter

from master.factories import trigger_scheduler
from master.fanout import shard_builder, shard_scheduler
from master.registry import Builder, Param, downstream
from master.registrycheck import parse_cron


def force_scheduler(builder_name: str) -> str:
    return f"force-{builder_name}"


class PatternParameter(StringParameter):
    """Buildbot's StringParameter whose description over REST shows its regex as text.

    Buildbot keeps `regex` compiled and its JSON encoder turns that into null, so a client
    (`mlgo-farm master force`) could not check a value before submitting it.
    """

    def getSpec(self):
        spec = super().getSpec()
        spec["regex"] = self.regex.pattern if self.regex is not None else None
        return spec


class TextForceScheduler(schedulers.ForceScheduler):
    """Buildbot's ForceScheduler, refusing a value that is not text as invalid parameters.

    The web form sends text, but a JSON-RPC client can send `"rev": 123`, a list or an object, and
    Buildbot's checks assume text (a pattern matched against 123 raises TypeError: an HTTP 500 and a
    traceback in the master's log). Raised before any check, this is the 400 every other bad value gets.
    """

    def force(self, owner, builderNames=None, builderid=None, **kwargs):
        bad = {k: f"expected text, got {type(v).__name__} {str(v)[:60]}" for k, v in kwargs.items()
               if not (isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)))}
        if bad:
            raise CollectedValidationError(bad)
        return super().force(owner, builderNames, builderid, **kwargs)


def force_parameter(p: Param):
    """The force-form field of a registry parameter: a strict choice list, or text checked by a regex."""
    label = p.help or p.name
    if p.choices:
        return util.ChoiceStringParameter(name=p.name, label=label, choices=list(p.choices), default=p.default,
                                          strict=True)
    return PatternParameter(name=p.name, label=label, default=p.default, regex=p.pattern, size=60)


#: No free-text source stamp fields: the farm's steps check nothing out, so branch, revision,
#: repository and project would only be unchecked text in every buildset.
def _no_source() -> list:
    fixed = {k: util.FixedParameter(name=k, default="") for k in ("branch", "revision", "repository", "project")}
    return [util.CodebaseParameter(codebase="", **fixed)]


def make_schedulers(active: Sequence[Builder]) -> list:
    """Every scheduler the active builders need; each builder can also be forced on its own.

    A fan-out's shard builder has a Triggerable only: shard builds start from their parent's
    trigger, never from a force form (a shard alone would upload a part no merge waits for).
    """
    out: list = []
    for b in active:
        if b.nightly:
            out.append(schedulers.Nightly(name=f"nightly-{b.name}", builderNames=[b.name], **parse_cron(b.nightly)))
        if b.on_change:
            out.append(schedulers.SingleBranchScheduler(
                name=f"change-{b.name}", builderNames=[b.name],
                change_filter=util.ChangeFilter(project=b.on_change), treeStableTimer=None,
            ))
        after = downstream(active, b.name)
        if after:
            out.append(schedulers.Triggerable(name=trigger_scheduler(b.name), builderNames=after))
        if b.fan_out:
            out.append(schedulers.Triggerable(name=shard_scheduler(b.name), builderNames=[shard_builder(b.name)]))
        out.append(TextForceScheduler(
            name=force_scheduler(b.name),
            builderNames=[b.name],
            buttonName=f"run {b.name}",
            codebases=_no_source(),
            properties=[force_parameter(p) for p in b.parameters],
        ))
    return out
