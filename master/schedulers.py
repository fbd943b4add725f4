"""Schedulers derived from the registry: nightly, triggered (after another builder), on change, force."""

from __future__ import annotations

from collections.abc import Sequence

from buildbot.changes.gitpoller import GitError, GitPoller
from buildbot.plugins import schedulers, util
from buildbot.schedulers.forcesched import CollectedValidationError, StringParameter
from twisted.internet import defer
from twisted.python import log

from master.factories import trigger_scheduler
from master.fanout import shard_builder, shard_scheduler
from master.loop import trial_scheduler
from master.registry import Builder, Param, downstream, loop_trials
from master.registrycheck import parse_cron
from master.stepspec import WHAT_IF


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
    """Buildbot's ForceScheduler, refusing a value that is not text as invalid parameters, and marking a
    what-if build.

    The web form sends text, but a JSON-RPC client can send `"rev": 123`, a list or an object, and
    Buildbot's checks assume text (a pattern matched against 123 raises TypeError: an HTTP 500 and a
    traceback in the master's log). Raised before any check, this is the 400 every other bad value gets.

    A build forced with a value other than its default (`policy=heuristic` on the nightly regression
    builder) asks "what if"; its answer is not news for the mailing list, and a regression run recorded
    among the nightly ones would make the next nightly a transition (a "recovered" mail, then REGRESSION
    again). Such builds get the build property WHAT_IF ("policy=heuristic"): master/reporters.py mails
    nobody about them and their steps record their runs under `BUILDER.what-if` (master/factories.py).
    What such a build triggers is no what-if: it works on what the farm published (a policy published by a
    chain forced on zlib is the policy in force, and its regression run judges it for real).
    """

    #: (parameter name, default); a value that differs makes the build a what-if (a fan-out's `shards` only
    #: splits the same work, so it never does)
    defaults: tuple[tuple[str, str], ...] = ()

    @defer.inlineCallbacks
    def gatherPropertiesAndChanges(self, collector, **kwargs):
        properties, changeids, sourcestamps = yield super().gatherPropertiesAndChanges(collector, **kwargs)
        changed = [f"{k}={properties.getProperty(k)}" for k, default in self.defaults
                   if properties.getProperty(k) not in (None, default)]
        if changed:
            properties.setProperty(WHAT_IF, ", ".join(changed), "Force Build Form")
        return properties, changeids, sourcestamps

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


def make_schedulers(active: Sequence[Builder], llvm: tuple[str, str] | None = None) -> list:
    """Every scheduler the active builders need; each builder can also be forced on its own.

    A fan-out's shard builder has a Triggerable only: shard builds start from their parent's
    trigger, never from a force form (a shard alone would upload a part no merge waits for).
    `llvm`: (repository, branch) of the LLVM poller (llvm_poller), which builders that follow LLVM track.
    A loop's trial builder too has a Triggerable only: its builds start from the loop's build, which checked
    their properties (master/loop.py).
    """
    out: list = []
    trials = loop_trials(active)
    for b in active:
        if b.name in trials:
            out.append(schedulers.Triggerable(name=trial_scheduler(b.name), builderNames=[b.name]))
            continue
        if b.nightly:
            out.append(_nightly(b, llvm))
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
        force = TextForceScheduler(
            name=force_scheduler(b.name),
            builderNames=[b.name],
            buttonName=f"run {b.name}",
            codebases=_no_source(),
            properties=[force_parameter(p) for p in b.parameters],
        )
        force.defaults = tuple((p.name, p.default) for p in b.params if p.what_if)
        out.append(force)
    return out


#: The project of the changes the LLVM poller records (and nothing else sends).
LLVM_PROJECT = "llvm-project"


class LLVMPoller(GitPoller):
    """Buildbot's GitPoller whose failed poll is one line in the master's log.

    Buildbot logs a failed poll as a traceback of some forty lines, at every poll, for as long as the repository
    cannot be reached (a machine without that network, a mirror that is down): the log fills with them and the
    reason, git's own last words, is buried. Here it is the one line, and the next poll tries again.
    """

    @defer.inlineCallbacks
    def poll(self):
        try:
            yield super().poll()
        except (GitError, OSError) as e:  # git's exit 128 (unreachable, no such repository), another exit, no git
            log.msg(f"{self.name}: cannot poll {self.repourl} (branch {', '.join(self.branches)}): "
                    f"{git_reason(e)}; next poll in {self.pollInterval} s")


def git_reason(e: Exception) -> str:
    """What git said, without the command line Buildbot puts before it: the last line of its stderr."""
    said = str(e)
    if " failed with exit code " in said:  # "command [...] in DIR on repourl URL failed with exit code N: STDERR"
        said = said.split(" failed with exit code ", 1)[1].split(": ", 1)[-1]
    lines = [ln.strip() for ln in said.splitlines() if ln.strip()]
    return (lines[-1] if lines else type(e).__name__)[:300]


def llvm_poller(repo: str, branch: str, interval: int) -> list:
    """Buildbot's GitPoller (one line per failed poll: LLVMPoller) on the llvm-project repository the LLVM
    builders follow ([llvm] repo, branch); none when `repo` is empty or `interval` is 0 (the default names no
    repository). Its first poll only notes where the branch stands; every commit after it is a change."""
    if not (repo.strip() and interval):
        return []
    return [LLVMPoller(repourl=repo, branches=[branch], pollInterval=interval, project=LLVM_PROJECT,
                       workdir="gitpoller-llvm", name="llvm-project")]


def _nightly(b: Builder, llvm: tuple[str, str] | None):
    """The builder's Nightly scheduler. One that follows LLVM consumes the poller's changes: each nightly
    buildset carries the newest commit polled (the changes since the last night, or the same commit again),
    so its builds, and the builds they trigger, have a revision and appear in the console and grid views."""
    cron = parse_cron(b.nightly)
    if not (b.follows_llvm and llvm):
        return schedulers.Nightly(name=f"nightly-{b.name}", builderNames=[b.name], **cron)
    repo, branch = llvm
    return schedulers.Nightly(
        name=f"nightly-{b.name}", builderNames=[b.name], codebases={"": {"repository": repo, "branch": branch}},
        createAbsoluteSourceStamps=True, change_filter=util.ChangeFilter(project=LLVM_PROJECT, branch=branch),
        **cron)
