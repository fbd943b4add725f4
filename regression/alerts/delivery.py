"""Delivery of the alerts' outbox (regression/alerts/outbox.py): claim each due mail, send it, retry it later.

A run never talks to the mail server: it only queues its mail. Celery beat's `deliver_alerts` (registered in
regression/tasks.py, scheduled by pipeline/ every `DELIVER_EVERY` seconds) makes one pass here (`deliver_due`), and
so does `mlgo-farm regress alerts --flush`: the alerts whose hold for their group mates has passed (`[alerts]
group_wait`), and those a down mail server kept. Each mail is claimed first, so passes that meet (a slow one and the
next) send it once. A pass takes no new mail after `DELIVER_EVERY` seconds, and one mail takes at most `MAIL_MOST`
(RFC 5321's time-outs), so the beat's time limit is their sum.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import smtplib
import ssl
import time
from dataclasses import dataclass
from typing import Any

from farm.config import Settings, SMTPConfig
from regression.alerts.outbox import Outbox
from regression.history import History

log = logging.getLogger(__name__)

#: Seconds between two deliveries of the alerts a run's end left queued (held for their group, or not sent).
DELIVER_EVERY = 60.0


@dataclass(frozen=True)
class Delivery:
    sent: int
    pending: int
    errors: list[str]


#: How long the farm waits for each of a mail server's replies, RFC 5321 section 4.5.3.2's minimums: the greeting
#: (and EHLO, STARTTLS, AUTH, QUIT) 5 min, MAIL 5 min, RCPT 5 min, DATA's 354 2 min, sending the message (a data block)
#: 3 min, the reply to its end 10 min. The last is long on purpose: a client that gives up sooner while a slow server
#: is still accepting the message sends it again (RFC 1047); a 20 s time-out made each alert arrive three times.
GREETING, MAIL, RCPT, DATA_INIT, DATA_BLOCK, DATA_END = 300.0, 300.0, 300.0, 120.0, 180.0, 600.0
#: At most this long for one mail, whatever its replies' own times (many recipients, a server that answers every
#: command just in time), so a deliverer's claim (CLAIM_LEASE) always outlives its delivery.
MAIL_MOST = 1800.0
#: Seconds a deliverer's claim on a queued mail holds (Outbox.claim): twice the longest delivery of one mail; a claim
#: older than that is a dead deliverer's, and another may take the mail.
CLAIM_LEASE = 2 * MAIL_MOST
_REPLY = {"mail": MAIL, "rcpt": RCPT, "data": DATA_INIT}


class Unconfirmed(OSError):
    """The message went out whole, and the server never answered its end: it may have it, so it is not sent again."""


class _Timed:
    """smtplib's client with RFC 5321's time-out for each reply instead of one for all (`_REPLY`, GREETING), all
    within MAIL_MOST; `delivered_data` tells whether the whole message went out (then it is never sent again)."""

    def __init__(self, deadline: float, cap: float, *args, **kwargs) -> None:
        self.deadline, self.cap, self.delivered_data = deadline, cap, False
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]  # connects: the greeting within its timeout

    def _within(self, seconds: float) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no delivery within {MAIL_MOST:.0f} s")
        self.sock.settimeout(min(seconds, left, self.cap))  # type: ignore[attr-defined]

    def putcmd(self, cmd: str, args: str = "") -> None:
        self._within(_REPLY.get(cmd.lower(), GREETING))
        super().putcmd(cmd, args)  # type: ignore[misc]

    def data(self, msg: bytes) -> tuple[int, bytes]:
        self.putcmd("data")
        code, reply = self.getreply()  # type: ignore[attr-defined]
        if code != 354:
            raise smtplib.SMTPDataError(code, reply)
        body = re.sub(rb"(?m)^\.", b"..", msg)  # RFC 5321 4.5.2: a line's leading dot doubled
        self._within(DATA_BLOCK)
        self.send(body + (b"" if body.endswith(b"\r\n") else b"\r\n") + b".\r\n")  # type: ignore[attr-defined]
        self.delivered_data = True
        self._within(DATA_END)
        return self.getreply()  # type: ignore[attr-defined]


class _SMTP(_Timed, smtplib.SMTP):
    pass


class _SMTPS(_Timed, smtplib.SMTP_SSL):
    pass


def _send(smtp: SMTPConfig, sender: str, to: list[str], message: bytes, cap: float | None = None) -> None:
    """One attempt at one mail (`cap`: no reply waited for longer); Unconfirmed when the message went out and no
    answer to its end came."""
    context = ssl.create_default_context()
    cls = _SMTPS if smtp.ssl else _SMTP
    kwargs = {"context": context} if smtp.ssl else {}
    deadline, client = time.monotonic() + MAIL_MOST, None
    try:
        client = cls(deadline, cap or math.inf, smtp.host, smtp.port, timeout=min(GREETING, cap or GREETING),
                     **kwargs)
        if smtp.starttls and not smtp.ssl:
            client.starttls(context=context)
        if smtp.user:
            client.login(smtp.user, smtp.password)
        # smtplib sends bytes as they are: bare LF line ends would make the whole message one line
        client.sendmail(sender, to, re.sub(rb"\r?\n", b"\r\n", message))
    except OSError as e:  # smtplib's errors too
        if client is not None and client.delivered_data and not isinstance(e, smtplib.SMTPResponseException):
            raise Unconfirmed(f"no answer to the end of the message ({type(e).__name__}: {e}); the server may have "
                              "it, so it is not sent again") from None
        raise
    finally:
        if client is not None:
            with contextlib.suppress(OSError):
                if client.sock is not None:
                    client.putcmd("quit")  # its answer is not waited for: nothing depends on it
            client.close()


def deliver_pending(history: History, smtp: SMTPConfig, *, attempts: int | None = None, backoff: float = 2.0,
                    held: bool = False, budget: float | None = None, timeout: float | None = None) -> Delivery:
    """Send every queued alert that is due (`held`: those still held for their group mates too), trying each up to
    `attempts` times (SMTPConfig.retries) with back-off; `budget`: take no new mail after that many seconds (the
    beat's pass, `deliver_due`, ends and the next takes the rest); `timeout`: wait no reply longer than that
    (RFC 5321's times otherwise: GREETING ... DATA_END).

    Messages that still fail stay queued with their last error; nothing is dropped. Each mail is sent once: claimed
    before it is sent (Outbox.claim: deliverers that meet skip it), marked sent before the next attempt could send
    it again, and a message the server took whole without answering its end (Unconfirmed) is marked sent with that
    said, never sent again. A claim older than CLAIM_LEASE (a deliverer that died) is taken over.
    """
    tries = max(1, attempts if attempts is not None else smtp.retries)
    sent, errors = 0, []
    stop = None if budget is None else time.monotonic() + budget
    outbox = Outbox(history)
    pending = outbox.messages(pending_only=True, due_only=not held)
    for item in pending:
        if stop is not None and time.monotonic() > stop:
            break
        if not outbox.claim(item.id, CLAIM_LEASE):
            continue  # sent meanwhile, or another deliverer is sending it now
        for attempt in range(tries):
            try:
                _send(smtp, item.sender, item.recipients, item.message, timeout)
            except Unconfirmed as e:
                outbox.mark_sent(item.id, str(e))
                log.warning("alert %d to %s:%d: %s", item.id, smtp.host, smtp.port, e)
                sent += 1
            except (OSError, smtplib.SMTPException) as e:
                error = f"{type(e).__name__}: {e}".strip()
                outbox.mark_attempt_failed(item.id, error)
                log.warning("alert %d to %s:%d failed (attempt %d/%d): %s", item.id, smtp.host, smtp.port,
                            attempt + 1, tries, error)
                if attempt + 1 < tries:
                    time.sleep(backoff * 2**attempt)  # retry back-off, not synchronisation
                    continue
                errors.append(f"alert {item.id} ({item.kind}, run {item.run_id}) not sent to "
                              f"{smtp.host}:{smtp.port}: {error}")
                outbox.release(item.id)
            else:
                outbox.mark_sent(item.id)
                sent += 1
            break
    return Delivery(sent, len(pending) - sent, errors)


def deliver_due(settings: Settings) -> dict[str, Any]:
    """Celery beat's pass: send the queued alerts that are due, one attempt each (the next pass tries again);
    nothing when this host has no history yet (an SQLite file is not created for it), nor while another pass of this
    host is still at it (a slow mail server: the beat's passes would otherwise pile up in the workers' slots, each
    waiting on it)."""
    from farm.locks import file_lock
    from regression.compare import history_path

    history = History.existing(history_path(settings))
    if history is None:
        return {"sent": 0, "pending": 0, "errors": []}
    with file_lock(settings.var_dir / "regression" / "deliver-alerts.lock", wait=False) as mine:
        if not mine:
            return {"sent": 0, "pending": None, "errors": [], "skipped": "another delivery of this host is running"}
        d = deliver_pending(history, settings.smtp, attempts=1, budget=DELIVER_EVERY)
    for error in d.errors:
        log.warning("%s", error)
    return {"sent": d.sent, "pending": d.pending, "errors": d.errors}
