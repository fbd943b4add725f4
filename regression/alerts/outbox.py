"""The alerts' outbox: the mails waiting in the history database for their delivery (regression/alerts/delivery.py).

A run's alert mail is put here in the transaction that completes the run (`put` on the database layer's Tx,
regression/alerts/lifecycle.py), so a run's verdict, its alert and its mail are recorded together or not at all, and
a run never waits on the mail server: a down or slow one only leaves the mail queued. A mail that no run's
completion carries (a bisect's follow-up, regression/bisectmail.py) is queued on its own (`Outbox.queue`).
Delivery claims a mail before it sends it (`Outbox.claim`, schema revision 0005), so deliverers that meet send
each mail once.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from farm import jsonio
from farm.errors import StoreError
from regression.database import Tx
from regression.history import History


@dataclass(frozen=True)
class Mail:
    """A mail to queue: the run and builder it tells of, its kind (an alert's transition, or `bisect`), the
    envelope, and the message as SMTP wants it on the wire."""

    run_id: str
    builder: str
    kind: str
    sender: str
    recipients: list[str]
    message: bytes
    #: the alert it tells of (regression/alerts/records.py) and until when it is held for the alert's group mates
    alert_id: int | None = None
    hold_until: float | None = None


@dataclass(frozen=True, kw_only=True)
class OutboxMessage(Mail):
    """A queued mail as the outbox keeps it: its number and how its delivery went so far."""

    id: int
    attempts: int
    last_error: str | None
    sent: float | None


def put(db: Tx, mail: Mail) -> None:
    """Queue `mail` in the transaction `db` (the one that completes its run)."""
    db.execute("INSERT INTO outbox (run_id, builder, kind, sender, recipients, message, created, alert_id,"
               " hold_until) VALUES (:run_id, :builder, :kind, :sender, :recipients, :message, :created,"
               " :alert_id, :hold_until)",
               {"run_id": mail.run_id, "builder": mail.builder, "kind": mail.kind, "sender": mail.sender,
                "recipients": json.dumps(mail.recipients), "message": mail.message, "created": time.time(),
                "alert_id": mail.alert_id, "hold_until": mail.hold_until})


def queued_of_group(db: Tx, group_id: int | None) -> int | None:
    """The number of the first mail of an alert group still waiting (held for its mates, or not delivered yet), in
    the transaction `db`; None when every mail of the group went out."""
    row = db.execute("SELECT id FROM outbox WHERE sent IS NULL AND alert_id IN (SELECT id FROM alerts WHERE"
                     " group_id=:group) ORDER BY id LIMIT 1", {"group": group_id}).fetchone()
    return None if row is None else int(row["id"])


def rewrite(db: Tx, message_id: int, message: bytes) -> None:
    """Replace a waiting mail's message (a group's summary that now tells of one more alert)."""
    db.execute("UPDATE outbox SET message=:message WHERE id=:id", {"message": message, "id": message_id})


class Outbox:
    """The outbox of one history database."""

    def __init__(self, history: History) -> None:
        self.history = history

    def messages(self, pending_only: bool = False, due_only: bool = False) -> list[OutboxMessage]:
        """The queued mails; `pending_only`: not sent yet; `due_only`: and no longer held (`hold_until` passed)."""
        sql = ("SELECT id, run_id, builder, kind, sender, recipients, message, attempts, last_error, sent, alert_id,"
               " hold_until FROM outbox WHERE 1=1")
        if pending_only or due_only:
            sql += " AND sent IS NULL"
        if due_only:
            sql += " AND (hold_until IS NULL OR hold_until <= :now)"
        with self.history.transaction(write=False) as db:
            rows = db.execute(sql + " ORDER BY id", {"now": time.time()}).fetchall()
        return [OutboxMessage(id=r["id"], run_id=r["run_id"], builder=r["builder"], kind=r["kind"],
                              sender=r["sender"],
                              recipients=jsonio.loads(r["recipients"] or "[]",
                                                      f"history: outbox mail {r['id']} recipients", StoreError),
                              message=bytes(r["message"]), attempts=r["attempts"], last_error=r["last_error"],
                              sent=r["sent"], alert_id=r["alert_id"], hold_until=r["hold_until"]) for r in rows]

    def queue(self, mail: Mail) -> None:
        """Queue a mail that no run's completion carries (a bisect's follow-up, regression/bisectmail.py)."""
        with self.history.transaction() as db:
            put(db, mail)

    def claim(self, message_id: int, lease: float) -> bool:
        """Take a queued mail to send it: False when it is sent already, or another deliverer took it less than
        `lease` seconds ago (schema revision 0005: two deliverers at once send each mail once)."""
        now = time.time()
        with self.history.transaction() as db:
            rows = db.execute("UPDATE outbox SET claimed=:now WHERE id=:id AND sent IS NULL"
                              " AND (claimed IS NULL OR claimed < :stale) RETURNING id",
                              {"now": now, "id": message_id, "stale": now - lease})
        return bool(rows)

    def release(self, message_id: int) -> None:
        """Give a claimed mail back (its attempts failed): the next delivery tries it again."""
        with self.history.transaction() as db:
            db.execute("UPDATE outbox SET claimed=NULL WHERE id=:id", {"id": message_id})

    def mark_sent(self, message_id: int, note: str | None = None) -> None:
        """`note`: what is known of a delivery the server did not confirm (kept as the mail's last error)."""
        with self.history.transaction() as db:
            db.execute("UPDATE outbox SET sent=:now, attempts=attempts+1, last_error=:note, claimed=NULL WHERE id=:id",
                       {"now": time.time(), "id": message_id, "note": note})

    def mark_attempt_failed(self, message_id: int, error: str) -> None:
        with self.history.transaction() as db:
            db.execute("UPDATE outbox SET attempts=attempts+1, last_error=:error WHERE id=:id",
                       {"error": error, "id": message_id})
