"""Schedulers derived from the registry: nightly, triggered (after another builder), on change, force."""

from __future__ import annotations

from collections.abc import Sequence

from buildbot.plugins import schedulers, util

from master.factories import trigger_scheduler
from master.registry import Builder, downstream, parse_cron


def force_scheduler(builder_name: str) -> str:
    return f"force-{builder_name}"


def make_schedulers(active: Sequence[Builder]) -> list:
    """Every scheduler the active builders need; each builder can also be forced on its own."""
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
        out.append(schedulers.ForceScheduler(
            name=force_scheduler(b.name),
            builderNames=[b.name],
            buttonName=f"run {b.name}",
            properties=[util.StringParameter(name=p.name, label=p.help or p.name, default=p.default, size=60)
                        for p in b.params],
        ))
    return out
