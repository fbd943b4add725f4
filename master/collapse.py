"""Which pending build requests Buildbot may merge: only those that would build the very same thing.

Buildbot's default (`collapseRequests = True`) compares source stamps and only the properties a
scheduler set itself, never those from the force form or a trigger; so three forces of
`triplets-ir` with three corpora, or two `vocab-retrain` requests for two datasets, became one
build and the older requests ended SKIPPED. Here a newer request replaces an older pending one
only when every build input is the same.

Ignored as bookkeeping, because they say who asked and how rather than what is built:
`owner` and `reason` (two people asking for the same corpus want one build, and `mlgo-farm
master force --wait` tells the one whose request was merged), and `scheduler` (a nightly and a
forced request with the same properties build the same thing). Everything else counts, whatever
set it, including `upstream_worker`: a triggered build reads the files its upstream build left
on that worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from buildbot.process.buildrequest import BuildRequest
from twisted.internet import defer

BOOKKEEPING = frozenset({"owner", "reason", "scheduler"})


def build_inputs(props: Mapping[str, Any]) -> dict[str, Any]:
    """Buildset properties (`{name: (value, source)}`, as the data API gives them) minus bookkeeping.

    Only the value counts: `corpus_input=zlib` is the same input whether a force form or a
    trigger set it.
    """
    return {name: vs[0] for name, vs in props.items() if name not in BOOKKEEPING}


def same_inputs(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return build_inputs(a) == build_inputs(b)


@defer.inlineCallbacks
def collapse_requests(master, builder, new_br: dict, old_br: dict):
    """`c['collapseRequests']`, called by Buildbot 4.3 as fn(master, builder, new_br, old_br) when
    `new_br` is added: True lets Buildbot complete the unclaimed `old_br` as SKIPPED."""
    if not (yield BuildRequest.canBeCollapsed(master, new_br, old_br)):
        return False  # Buildbot's own checks: older request, same source stamps, same scheduler properties
    new_props = yield master.data.get(("buildsets", str(new_br["buildsetid"]), "properties"))
    old_props = yield master.data.get(("buildsets", str(old_br["buildsetid"]), "properties"))
    return same_inputs(new_props or {}, old_props or {})
