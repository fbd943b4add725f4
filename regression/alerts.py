"""Alert emails: on the transition into regression and on recovery, never on every run.

The message is composed when the run completes and stored in the history's outbox in the same
transaction; delivery is a separate step that retries (with back-off) and, when the server stays
down, leaves the message queued for the next run (or `mlgo-farm regress alerts`) to send.
"""

from __future__ import annotations

import email.policy
import logging
import re
import smtplib
import ssl
import time
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from farm.config import SMTPConfig
from regression.history import History, Run

log = logging.getLogger(__name__)

REGRESSION, RECOVERY = "regression", "recovery"


def transition(history: History, run: Run, verdict: str) -> str | None:
    """REGRESSION when this run regresses after a good (or no) run, RECOVERY after a regression, else None."""
    previous = history.previous_run(run)
    before = previous.verdict if previous else "ok"
    if verdict == "regression" and before != "regression":
        return REGRESSION
    if verdict == "ok" and before == "regression":
        return RECOVERY
    return None


def compose(kind: str, run: Run, summary: str, smtp: SMTPConfig, link: str | None) -> EmailMessage:
    """The alert email: subject names the builder, run and transition; body is the run summary."""
    msg = EmailMessage()
    what = "REGRESSION" if kind == REGRESSION else "recovered"
    msg["Subject"] = f"[mlgo-farm] {what}: {run.builder} run {run.run_id} (policy {run.policy_id})"
    msg["From"] = smtp.sender
    msg["To"] = ", ".join(smtp.recipient_list)
    msg["Date"] = formatdate(localtime=False)
    msg["Message-ID"] = make_msgid(domain="mlgo-farm")
    intro = ("The ML policy now regresses against the heuristic or the previous good run."
             if kind == REGRESSION else "The ML policy no longer regresses; this run is good again.")
    link_line = f"\nReport: {link}\n" if link and link not in summary else ""
    msg.set_content(f"{intro}\n\n{summary}{link_line}")
    return msg


def to_bytes(msg: EmailMessage) -> bytes:
    """The message as SMTP wants it on the wire (CRLF line ends), for the outbox."""
    return msg.as_bytes(policy=email.policy.SMTP)


@dataclass(frozen=True)
class Delivery:
    sent: int
    pending: int
    errors: list[str]


def _send(smtp: SMTPConfig, sender: str, to: list[str], message: bytes, timeout: float) -> None:
    context = ssl.create_default_context()
    cls = smtplib.SMTP_SSL if smtp.ssl else smtplib.SMTP
    kwargs = {"context": context} if smtp.ssl else {}
    with cls(smtp.host, smtp.port, timeout=timeout, **kwargs) as client:
        if smtp.starttls and not smtp.ssl:
            client.starttls(context=context)
        if smtp.user:
            client.login(smtp.user, smtp.password)
        # smtplib sends bytes as they are: bare LF line ends would make the whole message one line
        client.sendmail(sender, to, re.sub(rb"\r?\n", b"\r\n", message))


def deliver_pending(history: History, smtp: SMTPConfig, *, attempts: int | None = None, backoff: float = 2.0,
                    timeout: float = 20) -> Delivery:
    """Send every queued alert, trying each up to `attempts` times (SMTPConfig.retries) with back-off.

    Messages that still fail stay queued with their last error; nothing is dropped.
    """
    tries = max(1, attempts if attempts is not None else smtp.retries)
    sent, errors = 0, []
    pending = history.outbox(pending_only=True)
    for item in pending:
        for attempt in range(tries):
            try:
                _send(smtp, item.sender, item.recipients, item.message, timeout)
            except (OSError, smtplib.SMTPException) as e:
                error = f"{type(e).__name__}: {e}".strip()
                history.mark_attempt_failed(item.id, error)
                log.warning("alert %d to %s:%d failed (attempt %d/%d): %s", item.id, smtp.host, smtp.port,
                            attempt + 1, tries, error)
                if attempt + 1 < tries:
                    time.sleep(backoff * 2**attempt)  # retry back-off, not synchronisation
                    continue
                errors.append(f"alert {item.id} ({item.kind}, run {item.run_id}) not sent to "
                              f"{smtp.host}:{smtp.port}: {error}")
            else:
                history.mark_sent(item.id)
                sent += 1
            break
    return Delivery(sent, len(pending) - sent, errors)
