"""What a Buildbot mail about a farm build says: the cause, the revision and what to do.

Buildbot's default mail for a failed build says "failed retrain (failure) ((unknown revision))",
`Revision: (unknown)` and an empty blamelist. The farm's steps know better: a failed FarmStep's
summary is the verb's one error line (master/factories.py), or the result line that failed the build
(a size check that held a policy back, exit 12). This is Buildbot's own MessageFormatter (Jinja
templates) with that cause, the build's revision (its source stamp: the LLVM commit the nightly
polled; else `got_revision`: a Debian source's package version, a corpus's git commit; else what
the build was given), the previous build and what to do, added to the template's context.
master/reporters.py decides which builds are mailed.
"""

from __future__ import annotations

import re

from buildbot.process.results import EXCEPTION, FAILURE, SUCCESS, Results
from buildbot.reporters.message import MessageFormatter
from twisted.internet import defer

from master.stepspec import WHAT_IF

#: Properties that say how a build started, not what it worked on (left out of its inputs).
_BOOKKEEPING = frozenset({"reason", "owner", "scheduler", "upstream_worker", WHAT_IF, "shard_run", "shard"})
#: Property sources of a build's inputs: its force form, its scheduler's defaults, its trigger.
_INPUT_SOURCES = ("Force Build Form", "Scheduler", "Trigger")

#: What to do about a failure, by its cause (the first pattern that matches); `{builder}`, `{force}` and
#: `{log}` are filled in. The last entry matches everything.
ADVICE: tuple[tuple[str, str], ...] = (
    (r"size check FAILED",
     "Nothing to roll back: the new policy stays a candidate and `latest` (and the vocabulary waiting for it) "
     "is unchanged. The cause above has the size check's numbers, the policy's page on the dashboard the rest. "
     "To try again, train with "
     "another vocabulary or recipe: {force} -p vocab=VERSION"),
    (r"apt-get source|deb-src",
     "The worker could not download the Debian source: check its deb-src entries (deploy/setup.sh) and its "
     "network, then force the build again: {force}"),
    (r"^terminated$|timed out|interrupted",
     "The step was stopped before it finished (a timeout or a stop): look at the end of its log ({log}), then "
     "force the build again: {force}"),
    (r"",
     "Read the step's log ({log}) for the context of the line above, fix what it names, then force the build "
     "again: {force}"),
)
#: A build exception is the master's or a worker's, not the input's.
EXCEPTION_ADVICE = ("A build exception comes from the master or the worker, not from the build's inputs: the "
                    "master's twistd.log has the traceback. Force the build again once it is fixed: {force}")


def _failed_step(build: dict) -> dict | None:
    failed = [s for s in build.get("steps") or () if s.get("results") in (FAILURE, EXCEPTION)]
    return failed[-1] if failed else None


def cause(build: dict) -> str:
    """The failing step's one line (its summary without Buildbot's " (failure)"), else the build's state."""
    step = _failed_step(build)
    text = (step or build).get("state_string") or ""
    return re.sub(r" \((?:failure|exception)\)$", "", text) or "no step failed"


def revision(build: dict) -> str:
    """The revision the build worked on, and where it comes from."""
    for ss in (build.get("buildset") or {}).get("sourcestamps") or ():
        if ss.get("revision"):
            where = " ".join(x for x in (ss.get("repository"), ss.get("branch")) if x)
            return f"{ss['revision']}" + (f" ({where})" if where else "")
    got = (build.get("properties") or {}).get("got_revision")
    if got and got[0]:
        return f"{got[0]} (the revision of the code it built)"
    inputs = build_inputs(build)
    return "none in its source stamp (a forced or triggered build)" + (f"; its inputs: {inputs}" if inputs else "")


def build_inputs(build: dict) -> str:
    """`name=value` of the properties the build was given (parameters, trigger exports)."""
    props = build.get("properties") or {}
    return ", ".join(f"{k}={v[0]}" for k, v in sorted(props.items())
                     if k not in _BOOKKEEPING and len(v) > 1 and v[1] in _INPUT_SOURCES and v[0] not in (None, ""))


def started_by(build: dict, blamelist: list[str]) -> str:
    props = build.get("properties") or {}
    scheduler = (props.get("scheduler") or [""])[0]
    owner = (props.get("owner") or [""])[0]
    if scheduler.startswith("force-"):
        return f"forced by {owner or 'someone'}"
    if scheduler.startswith("nightly-"):
        return "the nightly schedule" + (f" (changes by {', '.join(blamelist)})" if blamelist else "")
    if scheduler.startswith("after-"):
        return f"a trigger: {scheduler.removeprefix('after-')} succeeded"
    return scheduler or "unknown"


def advice(build: dict, buildbot_url: str, log_url: str) -> str:
    name = build["builder"]["name"]
    fill = {"builder": name, "force": f"mlgo-farm master force {name} --url {buildbot_url}", "log": log_url}
    if build.get("results") == EXCEPTION:
        return EXCEPTION_ADVICE.format(**fill)
    line = cause(build)
    return next(text for pattern, text in ADVICE if re.search(pattern, line)).format(**fill)


def previous(build: dict) -> str:
    prev = build.get("prev_build")
    if not prev:
        return "none (its first build)"
    text = f"#{prev['number']} {Results[prev['results']]}"
    if prev["results"] != SUCCESS:
        same = cause(prev) == cause(build)
        text += " (the same cause)" if same else f": {cause(prev)}"
    return text


SUBJECT = ("[mlgo-farm] {{ buildername }} #{{ build['number'] }} {{ farm.verb }}: "
           "{{ farm.cause | truncate(140, True, '...', 0) }}")
BODY = """\
{{ buildername }} #{{ build['number'] }} {{ farm.verb }}{% if farm.step %} at step {{ farm.step }}{% endif %}.

Cause:      {{ farm.cause }}
Revision:   {{ farm.revision }}
Build:      {{ build_url }}
{% if farm.log %}Log:        {{ farm.log }}
{% endif %}{% for name, url in farm.links %}{{ (name ~ ':').ljust(11) }} {{ url }}
{% endfor %}Started by: {{ farm.started_by }}
Worker:     {{ workername }}
Previous:   {{ farm.previous }}

What to do:
  {{ farm.advice }}

Steps:
{% for step in build['steps'] %}  {{ step['name'] }}: {{ step['state_string'] }}
{% endfor %}"""


class FarmMessageFormatter(MessageFormatter):
    """Buildbot's Jinja MessageFormatter with the farm's subject and body, and `farm` in their context."""

    def __init__(self) -> None:
        super().__init__(template=BODY, subject=SUBJECT, template_type="plain", want_properties=True,
                         want_steps=True, want_logs=False)

    @defer.inlineCallbacks
    def buildAdditionalContext(self, master, ctx):
        yield super().buildAdditionalContext(master, ctx)
        build = ctx["build"]
        step = _failed_step(build)
        log = f"{ctx['build_url']}/steps/{step['number']}/logs/stdio" if step else ""
        verbs = {SUCCESS: "succeeded", FAILURE: "failed", EXCEPTION: "ended in an exception"}
        ctx["farm"] = {
            "verb": verbs.get(build["results"], Results[build["results"]]),
            "step": step["name"] if step else "",
            "cause": cause(build) if build["results"] != SUCCESS else build.get("state_string", ""),
            "revision": revision(build),
            "log": log,
            "links": [(u["name"], u["url"]) for u in (step or {}).get("urls") or ()],
            "started_by": started_by(build, ctx.get("blamelist") or []),
            "previous": previous(build),
            "advice": (advice(build, ctx["buildbot_url"], log or ctx["build_url"])
                       if build["results"] != SUCCESS else "nothing: it passed"),
        }
