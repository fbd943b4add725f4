"""Mail notifications derived from each builder's `notify` modes and `[smtp]` configuration.

A regression builder's step fails when the run regresses, and the farm mails that itself (one
alert per transition, with the numbers: regression/alerts/mailtext.py). Buildbot's notice for the same
build would be a second mail without them, so builds whose step failed with an exit code the
step declares as `mails_itself` (FarmStep sets the build property MAILED_BY_FARM) are left out;
any other failure of those builders (a crash, nothing measured) is still mailed by Buildbot.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from buildbot.data import resultspec
from buildbot.plugins import reporters
from buildbot.process.results import FAILURE
from buildbot.reporters import utils
from twisted.internet import defer

from farm.config import SMTPConfig
from master.factories import MAILED_BY_FARM
from master.fanout import shard_builder
from master.mails import FarmMessageFormatter, cause
from master.registry import Builder
from master.stepspec import WHAT_IF
from master.watchdog import WATCHDOG


class FarmStatusGenerator(reporters.BuildStatusGenerator):
    """Buildbot's BuildStatusGenerator with the farm's message (master/mails.py: cause, revision, what to do),
    silent for what-if builds and for builds whose failure the farm mailed about itself.

    "Previous build" means the builder's previous build that was not a what-if (a forced `policy=heuristic`
    between two nightly failures is no recovery), and mode "problem" also mails a failure whose cause differs
    from the previous failure's (a size check that held a policy back after a crash is news), and the first
    build's failure.
    """

    def __init__(self, mode, builders) -> None:
        super().__init__(mode=mode, builders=builders, message_formatter=FarmMessageFormatter())

    @defer.inlineCallbacks
    def generate(self, master, reporter, key, build):
        yield utils.getDetailsForBuild(master, build, want_properties=True, want_steps=True)
        if not self.is_message_needed_by_props(build):
            return None
        build["prev_build"] = yield _previous_build(master, build)
        if not self.is_message_needed_by_results(build):
            return None
        report = yield self.build_message(self.formatter, master, reporter, build)
        return report

    def is_message_needed_by_props(self, build) -> bool:
        if _watchdog_line(build):  # the watchdog's own mail says it (WatchdogGenerator)
            return False
        if (build.get("properties") or {}).get(MAILED_BY_FARM) or what_if(build):
            return False
        return super().is_message_needed_by_props(build)

    def is_message_needed_by_results(self, build) -> bool:
        if super().is_message_needed_by_results(build):
            return True
        prev = build.get("prev_build")
        return "problem" in self.mode and build["results"] == FAILURE and (
            prev is None or (prev["results"] == FAILURE and cause(prev) != cause(build)))


#: How far back a mail looks for a build that was not a what-if.
_LOOK_BACK = 20


@defer.inlineCallbacks
def _previous_build(master, build):
    """The builder's newest finished build before `build` that was not a what-if, with its steps; or None."""
    older = yield master.data.get(
        ("builders", build["builderid"], "builds"),
        filters=[resultspec.Filter("number", "lt", [build["number"]]), resultspec.Filter("complete", "eq", [True])],
        order=["-number"], limit=_LOOK_BACK)
    for b in older:
        b = dict(b, properties=(yield master.data.get(("builds", b["buildid"], "properties"))))
        if what_if(b):
            continue
        b["steps"] = list((yield master.data.get(("builds", b["buildid"], "steps"))))
        return b
    return None


class WatchdogGenerator(reporters.BuildStatusGenerator):
    """A mail for every build the watchdog (master/watchdog.py) ended, whatever its result (a RETRY too), with
    the watchdog's one line as its body; builds it did not touch are left to the other generators."""

    def __init__(self, builders: list[str]) -> None:
        super().__init__(mode="all", builders=builders, message_formatter=reporters.MessageFormatterFunction(
            lambda ctx: _watchdog_line(ctx["build"]) + "\n", "plain", want_properties=True))
        self.subject = "mlgo-farm watchdog: %(builder)s build ended before its first step"

    def is_message_needed_by_props(self, build) -> bool:
        return bool(_watchdog_line(build)) and not what_if(build)

    def is_message_needed_by_results(self, build) -> bool:
        return True


def what_if(build) -> str:
    """The build's what-if (master/schedulers.py: the values a force changed, or passed on by a trigger); ""."""
    return ((build.get("properties") or {}).get(WHAT_IF) or [""])[0] or ""


def _watchdog_line(build) -> str:
    value = (build.get("properties") or {}).get(WATCHDOG)
    return value[0] if value else ""


def notify_groups(active: Sequence[Builder]) -> dict[tuple[str, ...], list[str]]:
    """Builder names grouped by their notify modes (builders that never mail are left out)."""
    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for b in active:
        if b.notify:
            groups[tuple(sorted(b.notify))].append(b.name)
    return dict(groups)


def make_reporters(active: Sequence[Builder], smtp: SMTPConfig) -> list:
    """One MailNotifier with a status generator per distinct mode set; none without recipients."""
    to = smtp.recipient_list
    if not to or not active:
        return []
    generators = [FarmStatusGenerator(modes, names) for modes, names in notify_groups(active).items()]
    names = {b.name for b in active} | {shard_builder(b.name) for b in active if b.fan_out}
    generators.append(WatchdogGenerator(sorted(names)))
    return [reporters.MailNotifier(
        fromaddr=smtp.sender,
        relayhost=smtp.host,
        smtpPort=smtp.port,
        useTls=smtp.starttls,
        useSmtps=smtp.ssl,
        smtpUser=smtp.user or None,
        smtpPassword=smtp.password or None,
        sendToInterestedUsers=False,
        extraRecipients=to,
        generators=generators,
    )]
