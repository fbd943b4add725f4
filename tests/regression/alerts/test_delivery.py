"""Alert emails through a real SMTP server on loopback (aiosmtpd), from real comparison runs: queued by the run,
delivered by Celery beat's task (regression/tasks.py deliver_alerts, regression/alerts/delivery.py; called here as the
beat calls it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.cli import main
from farm.config import SMTPConfig, load_settings
from regression import benchmarks, compare, report
from regression.alerts import delivery, lifecycle
from regression.alerts.outbox import Mail, Outbox, put
from regression.alerts.records import RECOVERY, REGRESSION
from regression.compare import RunRequest, run_comparison
from regression.history import History
from regression.tasks import deliver_alerts
from tests.conftest import DATA
from tests.regression.conftest import queuing
from tests.servers import MailBox, free_port, silent_server, smtp_server

BENCH = benchmarks.local_benchmark(DATA / "csrc", ("20000",))


BUILD_URL = "http://127.0.0.1:8010/#/builders/7/builds/42"


def _run(run_id: str, policy: str):
    return run_comparison(RunRequest(builder="nightly", run_id=run_id, benchmarks=(BENCH,), policy=policy,
                                     repeats=0, jobs=2, build_url=BUILD_URL))


def _subject(mail) -> str:
    """The Subject header unfolded (long subjects are folded over two lines on the wire)."""
    return " ".join(str(mail["Subject"]).split())


def test_alerts_on_transitions_only(smtp_env: MailBox) -> None:
    assert _run("n1", "heuristic").verdict == "ok"
    assert deliver_alerts()["sent"] == 0 and smtp_env.messages == []  # good from the start: nothing to say

    bad = _run("n2", "never")
    assert bad.verdict == "regression" and bad.alert == REGRESSION
    assert smtp_env.messages == [] and deliver_alerts()["sent"] == 1  # queued by the run, sent by the beat
    [mail] = smtp_env.messages
    hist = compare.open_history()
    rows = report.table_rows(hist.verdicts(bad.run))
    line = report.headline(rows, "regression", hist.skipped(bad.run), say_verdict=False)
    assert _subject(mail) == f"[mlgo-farm] REGRESSION: nightly: {line} (run n2, policy never)"
    assert bad.headline == f"{line} REGRESSION" and line.startswith("csrc/run Ir +")
    assert mail["To"] == "llvm-mlgo@example.org, oncall@example.org"
    body = mail.get_payload(decode=True).decode().replace("\r\n", "\n")
    values = {(m.subject, m.metric, m.policy): m.value for m in hist.measurements(bad.run)}
    h, p = values[("csrc/run", "instructions", "heuristic")], values[("csrc/run", "instructions", "policy")]
    table_line = next(ln for ln in body.splitlines() if ln.startswith("csrc/run") and "instructions" in ln)
    assert table_line.split()[:6] == ["csrc/run", "instructions", f"{h:,.0f}", f"{p:,.0f}",
                                      f"{(p - h) / h * 100:+.2f}%", "regressed"]
    # the regressed list: with units, the gating benchmark first, every regressed module named
    listed = body.split("Regressed (", 1)[1].split("\n\n", 1)[0].splitlines()
    assert listed[2].split() == ["csrc/run", "workload", "(gating)", "instructions", "heuristic", f"{h:,.0f}", "Ir",
                                 f"{p:,.0f}", "Ir", f"{(p - h) / h * 100:+.2f}%"]
    regressed_modules = {c.subject for c in hist.verdicts(bad.run) if c.kind == "module" and c.verdict == "regressed"}
    assert regressed_modules and all(any(ln.split()[0] == m and "bytes" in ln for ln in listed)
                                     for m in regressed_modules)
    web = load_settings().buildbot.dashboard("store/regression/nightly/n2/index.html")
    assert bad.web_url == web and web.startswith("http://127.0.0.1:8010/plugins/wsgi_dashboards/farm/")
    assert f"Report:             {web}" in body and "file://" not in body
    assert f"Build:              {BUILD_URL}" in body
    assert "LLVM:               " + bad.run.llvm_version in body and (bad.run.llvm_package or "") in body
    assert "Previous good run:  n1 (" in body and "/store/regression/nightly/n1/index.html" in body
    repro = body.split("Reproduce the comparison locally (with the same LLVM):\n  ", 1)[1].splitlines()[0]
    # the benchmark's sources by the dashboard's URL of their published tarball, with its sha256: no farm host path
    sources = load_settings().buildbot.dashboard("store/regression/sources/")
    assert str(DATA) not in repro and "--bench-dir" not in repro
    argv = repro.split()
    url, sha = argv[argv.index("--bench-url") + 1], argv[argv.index("--bench-sha256") + 1]
    assert url.startswith(sources) and url.endswith("/csrc.tar.gz") and f"/{sha}/" in url and len(sha) == 64
    assert repro == (f"mlgo-farm regress run --bench-url {url} --bench-sha256 {sha} --bench-arg=20000 --policy never "
                     "--advisor inline --opt=-Oz --repeats 0 --reproduce")
    assert main_parses(repro)
    assert bad.report_url.endswith("regression/nightly/n2/index.html")  # the history keeps the store's link

    again = _run("n3", "never")
    assert again.verdict == "regression" and again.alert is None
    assert deliver_alerts()["sent"] == 0 and len(smtp_env.messages) == 1  # still regressing: no second mail

    good = _run("n4", "heuristic")
    assert good.verdict == "ok" and good.alert == RECOVERY
    assert deliver_alerts()["sent"] == 1 and len(smtp_env.messages) == 2
    rec = smtp_env.messages[1]
    assert _subject(rec).startswith("[mlgo-farm] recovered: nightly: ")
    assert _subject(rec).endswith("(run n4, policy heuristic)")
    rec_body = rec.get_payload(decode=True).decode()
    assert f"Report:             {good.web_url}" in rec_body and "Last regressed run: n3 (" in rec_body
    assert [m.kind for m in Outbox(hist).messages()] == ["regression", "recovery"]
    assert all(m.sent for m in Outbox(hist).messages())


def main_parses(command: str) -> bool:
    """The reproducing command is one the real CLI parser accepts."""
    import shlex

    from farm.cli import build_parser

    args = build_parser().parse_args(shlex.split(command)[1:])
    return args.func.__name__ == "_run"


def test_server_down_is_retried_and_nothing_is_lost(smtp_env: MailBox, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(free_port()))  # nothing listens there
    result = _run("d1", "never")
    assert result.verdict == "regression" and result.alert == REGRESSION and result.queued
    said = deliver_alerts()
    assert (said["sent"], said["pending"]) == (0, 1) and "ConnectionRefusedError" in said["errors"][0]
    hist = compare.open_history()
    [queued] = Outbox(hist).messages(pending_only=True)
    assert queued.attempts == 1 and "ConnectionRefusedError" in queued.last_error  # one attempt per beat
    run = hist.run("d1", "nightly")
    assert run.status == "complete" and run.verdict == "regression" and hist.measurements(run)

    monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(smtp_env.port))  # the server is back
    assert main(["regress", "alerts", "--flush"]) == 0
    assert "sent 1, still pending 0" in capsys.readouterr().out
    [mail] = smtp_env.messages
    assert _subject(mail).startswith("[mlgo-farm] REGRESSION: nightly: ") and "(run d1, policy never)" in _subject(mail)
    assert Outbox(hist).messages(pending_only=True) == []


def test_a_run_never_waits_on_the_mail_server_the_beat_delivers_its_alert(smtp_env: MailBox,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A mail server that accepts and never greets held every run for its time-outs (and a run delivered other
    builders' queued mails too: 403 s). A run only queues; it does not even connect."""
    with silent_server() as silent:
        monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(silent.port))
        result = _run("q1", "never")
        assert result.alert == REGRESSION and result.queued
        assert silent.connections() == 0
    [queued] = Outbox(compare.open_history()).messages(pending_only=True)
    assert (queued.run_id, queued.attempts) == ("q1", 0)
    monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(smtp_env.port))
    assert deliver_alerts()["sent"] == 1
    nxt = _run("q2", "never")  # still regressing: no new alert
    assert nxt.alert is None and deliver_alerts()["sent"] == 0
    assert [_subject(m).endswith("(run q1, policy never)") for m in smtp_env.messages] == [True]


def _queued(subject: str) -> History:
    h = compare.open_history()
    Outbox(h).queue(Mail("r1", "nightly", "regression", "farm@example.org", ["team@example.org"], _mail(subject)))
    return h


@pytest.mark.slow
def test_a_server_slower_than_20_s_to_acknowledge_gets_each_alert_once(monkeypatch, capsys) -> None:
    """It acknowledges a message 25 s after it has it: a client that gave up after 20 s sent it again (three
    times). RFC 5321 gives the end of the data 10 minutes (delivery.DATA_END)."""
    with smtp_server(answer_after=25) as slow:
        monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(slow.port))
        monkeypatch.setenv("MLGO_FARM_SMTP_RETRIES", "3")
        h = _queued("slow")
        assert main(["regress", "alerts", "--flush"]) == 0
        assert "sent 1, still pending 0" in capsys.readouterr().out
        assert [str(m["Subject"]) for m in slow.messages] == ["slow"]
    [m] = Outbox(h).messages()
    assert m.sent is not None and m.attempts == 1 and m.last_error is None


def test_a_message_the_server_takes_and_never_acknowledges_is_not_sent_again() -> None:
    """The whole message went out and no answer to its end came (within `timeout` here, 10 minutes otherwise): the
    server may have it, so it is marked sent, with that said, and no retry sends it again."""
    with smtp_server(never_answer=True) as mute:
        h = _queued("mute")
        smtp = SMTPConfig(host=mute.host, port=mute.port, retries=3)
        d = delivery.deliver_pending(h, smtp, backoff=0, timeout=5)
        assert (d.sent, d.pending, d.errors) == (1, 0, [])
        assert [str(m["Subject"]) for m in mute.messages] == ["mute"]
    [m] = Outbox(h).messages()
    assert m.sent is not None and "the server may have it" in m.last_error
    assert Outbox(h).messages(pending_only=True) == []


def test_transition_rules(tmp_path: Path) -> None:
    h = History(tmp_path / "h.sqlite")
    seen = []
    for i, verdict in enumerate(["regression", "regression", "ok", "ok", "regression", "ok"]):
        run = h.start_run(f"r{i}", "b", llvm_version=None, llvm_commit=None, policy_id="p", vocab_version=None)
        seen.append(lifecycle.transition(h, run, verdict))
        h.complete_run(run, verdict, None)
    assert seen == ["regression", None, "recovery", None, "regression", "recovery"]


def test_recipient_parsing() -> None:
    smtp = SMTPConfig(recipients=" a@x.org,, b@y.org ", sender="farm@z.org")
    assert smtp.recipient_list == ["a@x.org", "b@y.org"]
    assert SMTPConfig().recipient_list == []


def test_starttls_refused_by_plain_server_is_an_attempt_error(smtp_env: MailBox, tmp_path: Path) -> None:
    h = History(tmp_path / "h.sqlite")
    run = h.start_run("t1", "b", llvm_version=None, llvm_commit=None, policy_id="p", vocab_version=None)
    h.complete_run(run, "regression", None, record=queuing(run, b"Subject: s\n\nbody\n"))
    smtp = SMTPConfig(host=smtp_env.host, port=smtp_env.port, starttls=True, retries=1)
    d = delivery.deliver_pending(h, smtp, backoff=0)
    assert (d.sent, d.pending) == (0, 1) and "STARTTLS" in d.errors[0]
    assert smtp_env.messages == []
    d = delivery.deliver_pending(h, SMTPConfig(host=smtp_env.host, port=smtp_env.port), backoff=0)
    assert (d.sent, d.pending) == (1, 0) and smtp_env.messages[0]["Subject"] == "s"


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (its own CA) and its key, made with `cryptography`."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mlgo-farm test SMTP")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    crt, pem = tmp_path / "smtp.crt", tmp_path / "smtp.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    return crt, pem


@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")
def test_tls_and_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real SMTPS server (implicit TLS) on loopback that requires a login; the client verifies its certificate.

    (STARTTLS is not exercised against a real server: aiosmtpd 1.4's STARTTLS hangs on Python 3.11.)
    """
    import ssl

    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult

    crt, key = _self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(crt))  # trusted the standard way, as a site's CA bundle would be
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(crt, key)
    got, logins = [], []

    class Handler:
        async def handle_DATA(self, server, session, envelope):
            got.append((envelope.rcpt_tos, envelope.content))
            return "250 OK"

    def authenticator(server, session, envelope, mechanism, data):
        logins.append((data.login, data.password))
        return AuthResult(success=(data.login, data.password) == (b"farm", b"s3cret"))

    port = free_port()
    # auth_require_tls=False: aiosmtpd only sees STARTTLS sessions as TLS, but this whole connection is TLS
    controller = Controller(Handler(), hostname="127.0.0.1", port=port, authenticator=authenticator,
                            auth_required=True, auth_require_tls=False, ssl_context=server_ctx)
    controller.start()
    try:
        h = History(tmp_path / "h.sqlite")
        run = h.start_run("t1", "b", llvm_version=None, llvm_commit=None, policy_id="p", vocab_version=None)
        h.complete_run(run, "regression", None, record=queuing(run, b"Subject: tls\n\nbody\n"))
        plain = delivery.deliver_pending(h, SMTPConfig(host="127.0.0.1", port=port, retries=1), backoff=0, timeout=3)
        assert plain.pending == 1 and got == []  # a plain-text client gets nowhere
        smtp = SMTPConfig(host="127.0.0.1", port=port, ssl=True, user="farm", password="s3cret", retries=1)
        monkeypatch.delenv("SSL_CERT_FILE")
        untrusted = delivery.deliver_pending(h, smtp, backoff=0, timeout=3)
        assert "CERTIFICATE_VERIFY_FAILED" in untrusted.errors[0] and got == []  # the certificate is checked
        monkeypatch.setenv("SSL_CERT_FILE", str(crt))
        d = delivery.deliver_pending(h, smtp, backoff=0)
        assert (d.sent, d.pending) == (1, 0)
        assert [(bytes(u), bytes(p)) for u, p in logins] == [(b"farm", b"s3cret")]
        [(rcpt, content)] = got
        assert rcpt == ["a@x"] and b"Subject: tls" in content
    finally:
        controller.stop()


def _mail(subject: str) -> bytes:
    from email.message import EmailMessage

    msg = EmailMessage()
    msg["Subject"], msg["From"], msg["To"] = subject, "farm@example.org", "team@example.org"
    msg.set_content("body")
    return bytes(msg)


def test_deliveries_that_meet_send_each_mail_once(tmp_path: Path, smtp_env: MailBox) -> None:
    import threading

    h = History(tmp_path / "h.sqlite")
    for i in range(6):
        Outbox(h).queue(Mail(f"r{i}", "nightly", "regression", "farm@example.org", ["team@example.org"],
                             _mail(f"mail {i}")))
    smtp = load_settings().smtp
    deliverers = [threading.Thread(target=delivery.deliver_pending, args=(h, smtp)) for _ in range(3)]
    for t in deliverers:
        t.start()
    for t in deliverers:
        t.join(120)
    assert sorted(str(m["Subject"]) for m in smtp_env.messages) == [f"mail {i}" for i in range(6)]
    assert Outbox(h).messages(pending_only=True) == []


def test_the_beat_delivers_queued_mails_once_their_hold_has_passed(smtp_env: MailBox) -> None:
    """`deliver_alerts` (Celery beat, every minute): a mail held for its group goes out once its hold has passed,
    without another run's end; one still held stays; a host with no history gets none made."""
    import time

    from regression.tasks import deliver_alerts

    where = compare.history_path(load_settings())
    assert deliver_alerts() == {"sent": 0, "pending": 0, "errors": []} and not Path(where).exists()
    h = compare.open_history()
    with h.transaction() as db:
        put(db, Mail("r1", "nightly", "regression", "farm@example.org", ["team@example.org"], _mail("held, due"),
                     None, time.time() - 1))
        put(db, Mail("r2", "nightly", "regression", "farm@example.org", ["team@example.org"], _mail("held still"),
                     None, time.time() + 3600))
    assert deliver_alerts() == {"sent": 1, "pending": 0, "errors": []}
    assert [str(m["Subject"]) for m in smtp_env.messages] == ["held, due"]
    assert [m.run_id for m in Outbox(h).messages(pending_only=True)] == ["r2"]


def test_a_beat_pass_leaves_the_mails_to_a_pass_of_this_host_still_at_them(smtp_env: MailBox) -> None:
    """Passes that each wait on a slow server would pile up, one a minute, in the Celery workers' slots."""
    from farm.locks import file_lock

    h = _queued("once")
    with file_lock(load_settings().var_dir / "regression" / "deliver-alerts.lock"):  # a pass at it
        said = deliver_alerts()
    assert said["sent"] == 0 and said["skipped"] and smtp_env.messages == []
    assert deliver_alerts()["sent"] == 1 and [str(m["Subject"]) for m in smtp_env.messages] == ["once"]
    assert Outbox(h).messages(pending_only=True) == []
