"""The alerts' outbox (regression/alerts/outbox.py) on SQLite and on a real PostgreSQL (tests/pgserver.py): a run's
mail queued in the transaction that completes it, and each mail claimed by one deliverer at a time."""

from __future__ import annotations

import pytest

from farm.errors import FarmError
from regression.alerts.outbox import Mail, Outbox
from regression.history import History
from tests.regression.conftest import queuing
from tests.regression.test_history import _start


def test_completion_and_alert_share_one_transaction(history_at: str) -> None:
    h = History(history_at)
    run = _start(h, "r1")
    with pytest.raises(FarmError, match=r"^history database .*message"):
        h.complete_run(run, "regression", "file:///x", record=queuing(run, None))  # NULL message
    assert h.run("r1", "b1").status == "running" and Outbox(h).messages() == []  # rolled back together
    h.complete_run(run, "regression", "file:///x", record=queuing(run, b"Subject: hi\n\nbody", ("a@x", "b@x")))
    other = History(history_at)  # another connection sees both at once
    assert other.run("r1", "b1").verdict == "regression"
    [msg] = Outbox(other).messages(pending_only=True)
    assert (msg.kind, msg.recipients, msg.message, msg.attempts) == ("regression", ["a@x", "b@x"],
                                                                     b"Subject: hi\n\nbody", 0)
    Outbox(other).mark_attempt_failed(msg.id, "ConnectionRefusedError: refused")
    Outbox(other).mark_sent(msg.id)
    [msg] = Outbox(h).messages()
    assert msg.sent is not None and msg.attempts == 2 and msg.last_error is None
    assert Outbox(h).messages(pending_only=True) == []


def test_a_queued_mail_is_claimed_by_one_deliverer_at_a_time(history_at: str) -> None:
    """Deliverers that meet (two builders finishing together, the beat's delivery) each claim before sending."""
    h = Outbox(History(history_at))
    h.queue(Mail("r1", "b1", "regression", "farm@example.org", ["team@example.org"], b"Subject: s\r\n\r\nbody\r\n"))
    [m] = h.messages()
    assert h.claim(m.id, 600) and not h.claim(m.id, 600)  # the second deliverer leaves it to the first
    assert h.claim(m.id, -1)  # a claim older than the lease (here: any) is a dead deliverer's: taken over
    h.release(m.id)  # its attempts failed: the next delivery tries it again
    assert h.claim(m.id, 600)
    h.mark_sent(m.id)
    assert not h.claim(m.id, -1) and h.messages(pending_only=True) == []  # sent: never again
