"""The single-machine stack's mail sink (master/mailsink.py): `stack up`'s part starts it on the loopback `[smtp]`
port, the alert mail Celery beat's delivery sends lands as a private `.eml` under var/mail and on the dashboard's
`mail/` page, an oversize message is refused with 552, and a real `[smtp] host` means no sink at all."""

from __future__ import annotations

import smtplib
import stat
from email import message_from_bytes
from email.message import EmailMessage

import pytest

from farm.config import Settings, load_settings
from master import mailsink, stack
from master.dashboard.app import create_app
from master.dashboard.views_mail import NAME
from master.procs import pid_alive
from regression.alerts.mailtext import to_bytes
from regression.alerts.outbox import Mail, Outbox
from regression.alerts.records import REGRESSION
from regression.compare import open_history
from regression.tasks import deliver_alerts
from tests.servers import free_port

RECIPIENTS = "llvm-mlgo@example.org, oncall@example.org"


def _settings(monkeypatch: pytest.MonkeyPatch, host: str = "127.0.0.1") -> Settings:
    monkeypatch.setenv("MLGO_FARM_SMTP_HOST", host)
    monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(free_port()))
    monkeypatch.setenv("MLGO_FARM_SMTP_RECIPIENTS", RECIPIENTS)
    monkeypatch.setenv("MLGO_FARM_SMTP_RETRIES", "1")
    return load_settings()


def _part(s: Settings, name: str):
    return next((running, start) for n, running, start in stack._parts(s) if n == name)


@pytest.fixture
def sink(monkeypatch: pytest.MonkeyPatch):
    s = _settings(monkeypatch)
    running, start = _part(s, "mail sink")
    assert not running()  # the stack's supervisor would start it
    said = start()
    try:
        yield s, said
    finally:
        stack.mailsink_down(s)


def test_stack_starts_the_sink_and_the_beats_alert_mail_lands_as_an_eml_on_the_page(sink) -> None:
    s, said = sink
    assert said.startswith(f"mail sink: started (pid {pid_alive(mailsink.pidfile(s))}) on 127.0.0.1:{s.smtp.port}")
    assert _part(s, "mail sink")[0]() and stack._listening("127.0.0.1", s.smtp.port)

    msg = EmailMessage()
    msg["Subject"] = "[mlgo-farm] REGRESSION: nightly: <b>csrc/run</b> Ir +9.00%"
    msg["From"], msg["To"] = s.smtp.sender, RECIPIENTS
    msg.set_content("the body\n.\na line that starts with a dot\n")
    Outbox(open_history()).queue(Mail("n2", "nightly", REGRESSION, s.smtp.sender, s.smtp.recipient_list,
                                      to_bytes(msg)))
    assert deliver_alerts()["sent"] == 1  # Celery beat's delivery, to the default [smtp] host: the sink

    where = mailsink.mail_dir(s)
    [eml] = list(where.iterdir())
    assert NAME.fullmatch(eml.name), eml.name
    assert stat.S_IMODE(where.stat().st_mode) == 0o700 and stat.S_IMODE(eml.stat().st_mode) == 0o600
    kept = message_from_bytes(eml.read_bytes())
    assert kept.get_all("Delivered-To") == s.smtp.recipient_list and kept["Return-Path"] == f"<{s.smtp.sender}>"
    assert " ".join(str(kept["Subject"]).split()) == str(msg["Subject"])
    assert ".\na line that starts with a dot" in kept.get_payload(decode=True).decode().replace("\r\n", "\n")

    client = create_app(s).test_client()
    page = client.get("/mail/")
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    html = page.get_data(as_text=True)
    assert "&lt;b&gt;csrc/run&lt;/b&gt; Ir +9.00%" in html and "<b>csrc/run" not in html  # escaped
    assert "llvm-mlgo@example.org, oncall@example.org" in html and f'href="/mail/{eml.name}"' in html
    assert f"{eml.stat().st_size:,} B" in html and "No mail kept yet" not in html
    raw = client.get(f"/mail/{eml.name}")
    assert raw.status_code == 200 and raw.get_data() == eml.read_bytes()
    assert raw.headers["Content-Type"] == "text/plain; charset=utf-8" and raw.headers["Cache-Control"] == "no-store"
    for bad in ("..%2Fsecrets%2Fredis-password", "x.eml", f"{eml.name}x"):
        got = client.get(f"/mail/{bad}")
        assert got.status_code == 404 and got.get_data(as_text=True).count("\n") == 1
    assert 'href="/mail/"' in client.get("/").get_data(as_text=True)  # the front page links it

    assert stack.mailsink_down(s) == "mail sink: stopped"  # `stack down`: SIGTERM ends it
    assert not stack._listening("127.0.0.1", s.smtp.port) and pid_alive(mailsink.pidfile(s)) is None


def test_an_oversize_message_is_refused_with_552_and_one_log_line(sink) -> None:
    s, _ = sink
    big = b"Subject: big\r\n\r\n" + (b"x" * 999 + b"\r\n") * (mailsink.MAX_BYTES // 1000 + 1)
    with smtplib.SMTP("127.0.0.1", s.smtp.port, timeout=60) as client:
        client.ehlo()
        assert client.has_extn("size") and int(client.esmtp_features["size"]) == mailsink.MAX_BYTES
        # the size said first: refused before the data
        with pytest.raises(smtplib.SMTPSenderRefused) as said:
            client.sendmail("a@example.org", ["b@example.org"], big)
        assert said.value.smtp_code == 552
        client.rset()
        # the size not said: refused at the end of the data
        assert client.mail("a@example.org")[0] == 250 and client.rcpt("b@example.org")[0] == 250
        assert client.data(big)[0] == 552
        # and the sink still takes a mail of a fair size
        assert client.sendmail("a@example.org", ["b@example.org"], b"Subject: small\r\n\r\nok\r\n") == {}
    [kept] = mailsink.mail_dir(s).iterdir()  # only the small one
    assert kept.read_bytes().endswith(b"Subject: small\r\n\r\nok\r\n")
    log = (s.var_dir / "log" / "mailsink.log").read_text()
    assert log.count("refused a message over") == 2, log


def test_a_real_smtp_host_means_no_sink(monkeypatch: pytest.MonkeyPatch) -> None:
    s = _settings(monkeypatch, host="mail.example.org")
    running, start = _part(s, "mail sink")
    assert running()  # nothing for the supervisor to start
    assert start() == f"mail sink: none ([smtp] host mail.example.org:{s.smtp.port} gets the mail)"
    assert not mailsink.pidfile(s).exists() and not mailsink.mail_dir(s).exists()
    assert not stack._listening("127.0.0.1", s.smtp.port)
    assert stack.mailsink_down(s) == "mail sink: not running"
    page = create_app(s).test_client().get("/mail/").get_data(as_text=True)
    assert "no mail sink runs here" in page and "mail.example.org" in page


def test_a_server_already_on_the_port_is_used_not_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.servers import smtp_server

    with smtp_server() as box:
        monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(box.port))
        s = load_settings()
        assert stack.mailsink_up(s) == (f"mail sink: using the mail server already listening on 127.0.0.1:{box.port} "
                                        "(not managed by the stack)")
        assert not mailsink.pidfile(s).exists() and _part(s, "mail sink")[0]()

