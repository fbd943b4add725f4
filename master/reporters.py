"""Mail notifications derived from each builder's `notify` modes and `[smtp]` configuration.

A regression builder's step fails when the run regresses, and the farm mails that itself (one
alert per transition, with the numbers: regression/alerts.py). Buildbot's notice for the same
build would be a second mail without them, so builds whose step failed with an exit code the
step declares as `mails_itself` (FarmStep sets the build property MAILED_BY_FARM) are left out;
any other failure of those builders (a crash, nothing measured) is still mailed by Buildbot.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from buildbot.plugins import reporters

from farm.config import SMTPConfig
from master.factories import MAILED_BY_FARM
from master.registry import Builder


class FarmStatusGenerator(reporters.BuildStatusGenerator):
    """Buildbot's BuildStatusGenerator, silent for builds whose failure the farm mailed about itself."""

    def is_message_needed_by_props(self, build) -> bool:
        if (build.get("properties") or {}).get(MAILED_BY_FARM):
            return False
        return super().is_message_needed_by_props(build)


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
    groups = notify_groups(active)
    if not to or not groups:
        return []
    generators = [FarmStatusGenerator(mode=modes, builders=names) for modes, names in groups.items()]
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
