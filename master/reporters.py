"""Mail notifications derived from each builder's `notify` modes and `[smtp]` configuration."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from buildbot.plugins import reporters

from farm.config import SMTPConfig
from master.registry import Builder


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
    generators = [reporters.BuildStatusGenerator(mode=modes, builders=names) for modes, names in groups.items()]
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
