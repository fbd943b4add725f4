"""A bisect's result told: the follow-up mail in the alert mail's thread, and the links to the re-runs' reports that
it and the alert's page give as evidence (only to reports that exist). Split from regression/bisectrun.py, which
makes the re-runs and decides."""

from __future__ import annotations

import email
import email.policy
import logging
from email.message import EmailMessage

from farm.config import Settings
from farm.errors import FarmError, first_line
from farm.objectstore import store_from_settings
from regression import report
from regression.alerts.mailtext import new_message, to_bytes
from regression.alerts.outbox import Mail, Outbox
from regression.alerts.records import REGRESSION, Alert, AlertStore
from regression.history import History

log = logging.getLogger(__name__)


def evidence_url(settings: Settings, builder: str, run_id: str) -> str:
    """A re-run's report on the dashboard (each re-run publishes its report like a night's)."""
    return settings.buildbot.dashboard(f"store/{report.report_prefix(builder, run_id)}/index.html")


def _thread(history: History, alert: Alert) -> tuple[str | None, str | None]:
    """The Message-ID and Subject of the alert's own mail (or its group's summary): the thread to answer in."""
    ids = {alert.id}
    if alert.group_id is not None:
        ids |= {a.id for a in AlertStore(history).alerts(group_id=alert.group_id)} | {alert.group_id}
    for m in Outbox(history).messages():
        if m.alert_id in ids and m.kind == REGRESSION:
            first = email.message_from_bytes(m.message, policy=email.policy.default)
            return first["Message-ID"], " ".join(str(first["Subject"]).split())
    return None, None


def compose(alert: Alert, result: dict, smtp, page: str, parent: str | None, subject: str | None) -> EmailMessage:
    """The follow-up mail: the culprit (or why none) and every re-run with its verdict, time and report."""
    msg = new_message(f"Re: {subject}" if subject else f"[mlgo-farm] bisect of alert #{alert.id} ({alert.builder})",
                      smtp)
    if parent:
        msg["In-Reply-To"] = parent
        msg["References"] = parent
    lines = [f"Bisect of alert #{alert.id} ({alert.builder}; good run {result['good_run']}, bad run "
             f"{result['bad_run']}):", "", f"  {result['sentence']}", "", f"Alert:  {page}",
             "Changed inputs: " + (", ".join(f"{k} {a or '-'} -> {b or '-'}"
                                             for k, (a, b) in result["changed"].items()) or "none"),
             f"Re-runs: {len(result['steps'])} in {result['seconds']:.0f} s (bisect runs: no alert, not in the trend)",
             ""]
    for s in result["steps"]:
        what = "control (the bad run's inputs)" if s["swap"] is None else f"{s['swap']} swapped back"
        said = s["verdict"] or f"failed: {s['error']}"
        lines.append(f"  {s['run_id'] or '-'}: {what}: {said} ({s['seconds']:.0f} s)")
        if s["run_id"] in result["links"]:
            lines.append(f"      {result['links'][s['run_id']]}")
    msg.set_content("\n".join(lines) + "\n")
    return msg


def follow_up(history: History, settings: Settings, alert: Alert, result: dict) -> None:
    """Queue the follow-up in the outbox, for Celery beat's delivery (nobody configured: logged, as alert mails are).
    """
    to = settings.smtp.recipient_list
    if not to:
        log.warning("bisect of alert #%s not mailed: no recipients configured ([smtp] recipients)", alert.id)
        return
    parent, subject = _thread(history, alert)
    msg = compose(alert, result, settings.smtp, settings.buildbot.dashboard(f"alerts/{alert.id}/"), parent, subject)
    Outbox(history).queue(Mail(alert.bad_run, alert.builder, "bisect", settings.smtp.sender, to, to_bytes(msg),
                               alert.id))


def published(settings: Settings, builder: str, run_ids: list[str]) -> dict[str, str]:
    """The evidence links of the re-runs whose report is in the store: a re-run stopped after its result was
    recorded but before its report was published has none, and a link to it would answer 404."""
    try:
        store = store_from_settings(settings)
        return {r: evidence_url(settings, builder, r) for r in run_ids
                if store.exists(f"{report.report_prefix(builder, r)}/index.html")}
    except FarmError as e:
        log.warning("bisect evidence links left out: %s", first_line(e))
        return {}
