"""Alert emails through a real SMTP server on loopback (aiosmtpd), from real comparison runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.cli import main
from farm.config import SMTPConfig, load_settings
from regression import alerts, benchmarks, compare
from regression.compare import RunRequest, run_comparison
from regression.history import History
from tests.conftest import DATA
from tests.servers import MailBox, free_port

BENCH = benchmarks.local_benchmark(DATA / "csrc", ("20000",))


def _run(run_id: str, policy: str):
    return run_comparison(RunRequest(builder="nightly", run_id=run_id, benchmarks=(BENCH,), policy=policy,
                                     repeats=0, jobs=2), deliver_backoff=0.05)


def test_alerts_on_transitions_only(smtp_env: MailBox) -> None:
    assert _run("n1", "heuristic").verdict == "ok"
    assert smtp_env.messages == []  # good from the start: nothing to say

    bad = _run("n2", "never")
    assert bad.verdict == "regression" and bad.alert == alerts.REGRESSION
    [mail] = smtp_env.messages
    assert mail["Subject"] == "[mlgo-farm] REGRESSION: nightly run n2 (policy never)"
    assert mail["To"] == "llvm-mlgo@example.org, oncall@example.org"
    body = mail.get_payload(decode=True).decode()
    hist = compare.open_history()
    rows = {(m.subject, m.metric, m.policy): m.value for m in hist.measurements(bad.run)}
    h, p = rows[("csrc/run", "instructions", "heuristic")], rows[("csrc/run", "instructions", "policy")]
    table_line = next(ln for ln in body.splitlines() if ln.startswith("csrc/run") and "instructions" in ln)
    assert table_line.split()[:6] == ["csrc/run", "instructions", f"{h:,.0f}", f"{p:,.0f}",
                                      f"{(p - h) / h * 100:+.2f}%", "regressed"]
    assert f"Report: {bad.report_url}" in body
    assert bad.report_url.endswith("regression/nightly/n2/index.html")

    again = _run("n3", "never")
    assert again.verdict == "regression" and again.alert is None
    assert len(smtp_env.messages) == 1  # still regressing: no second mail

    good = _run("n4", "heuristic")
    assert good.verdict == "ok" and good.alert == alerts.RECOVERY
    assert len(smtp_env.messages) == 2
    rec = smtp_env.messages[1]
    assert rec["Subject"] == "[mlgo-farm] recovered: nightly run n4 (policy heuristic)"
    assert f"Report: {good.report_url}" in rec.get_payload(decode=True).decode()
    assert [m.kind for m in hist.outbox()] == ["regression", "recovery"]
    assert all(m.sent for m in hist.outbox())


def test_server_down_is_retried_and_nothing_is_lost(smtp_env: MailBox, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(free_port()))  # nothing listens there
    result = _run("d1", "never")
    assert result.verdict == "regression" and result.alert == alerts.REGRESSION
    assert result.delivery.sent == 0 and result.delivery.pending == 1
    hist = compare.open_history()
    [queued] = hist.outbox(pending_only=True)
    assert queued.attempts == load_settings().smtp.retries == 2
    assert "ConnectionRefusedError" in queued.last_error
    run = hist.run("d1", "nightly")
    assert run.status == "complete" and run.verdict == "regression" and hist.measurements(run)

    monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(smtp_env.port))  # the server is back
    assert main(["regress", "alerts", "--flush"]) == 0
    assert "sent 1, still pending 0" in capsys.readouterr().out
    [mail] = smtp_env.messages
    assert mail["Subject"] == "[mlgo-farm] REGRESSION: nightly run d1 (policy never)"
    assert hist.outbox(pending_only=True) == []


def test_queued_alert_goes_out_with_the_next_run(smtp_env: MailBox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(free_port()))
    _run("q1", "never")
    assert smtp_env.messages == []
    monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(smtp_env.port))
    nxt = _run("q2", "never")  # still regressing: no new alert, but the queued one is delivered
    assert nxt.alert is None
    assert [m["Subject"] for m in smtp_env.messages] == ["[mlgo-farm] REGRESSION: nightly run q1 (policy never)"]


def test_transition_rules(tmp_path: Path) -> None:
    h = History(tmp_path / "h.sqlite")
    seen = []
    for i, verdict in enumerate(["regression", "regression", "ok", "ok", "regression", "ok"]):
        run = h.start_run(f"r{i}", "b", llvm_version=None, llvm_commit=None, policy_id="p", vocab_version=None)
        seen.append(alerts.transition(h, run, verdict))
        h.complete_run(run, verdict, None)
    assert seen == ["regression", None, "recovery", None, "regression", "recovery"]


def test_recipient_parsing() -> None:
    smtp = SMTPConfig(recipients=" a@x.org,, b@y.org ", sender="farm@z.org")
    assert smtp.recipient_list == ["a@x.org", "b@y.org"]
    assert SMTPConfig().recipient_list == []


def test_starttls_refused_by_plain_server_is_an_attempt_error(smtp_env: MailBox, tmp_path: Path) -> None:
    h = History(tmp_path / "h.sqlite")
    run = h.start_run("t1", "b", llvm_version=None, llvm_commit=None, policy_id="p", vocab_version=None)
    h.complete_run(run, "regression", None, ("regression", "farm@x", ["a@x"], b"Subject: s\n\nbody\n"))
    smtp = SMTPConfig(host=smtp_env.host, port=smtp_env.port, starttls=True, retries=1)
    d = alerts.deliver_pending(h, smtp, backoff=0)
    assert (d.sent, d.pending) == (0, 1) and "STARTTLS" in d.errors[0]
    assert smtp_env.messages == []
    d = alerts.deliver_pending(h, SMTPConfig(host=smtp_env.host, port=smtp_env.port), backoff=0)
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
        h.complete_run(run, "regression", None, ("regression", "farm@x", ["a@x"], b"Subject: tls\n\nbody\n"))
        plain = alerts.deliver_pending(h, SMTPConfig(host="127.0.0.1", port=port, retries=1), backoff=0, timeout=3)
        assert plain.pending == 1 and got == []  # a plain-text client gets nowhere
        smtp = SMTPConfig(host="127.0.0.1", port=port, ssl=True, user="farm", password="s3cret", retries=1)
        monkeypatch.delenv("SSL_CERT_FILE")
        untrusted = alerts.deliver_pending(h, smtp, backoff=0, timeout=3)
        assert "CERTIFICATE_VERIFY_FAILED" in untrusted.errors[0] and got == []  # the certificate is checked
        monkeypatch.setenv("SSL_CERT_FILE", str(crt))
        d = alerts.deliver_pending(h, smtp, backoff=0)
        assert (d.sent, d.pending) == (1, 0)
        assert [(bytes(u), bytes(p)) for u, p in logins] == [(b"farm", b"s3cret")]
        [(rcpt, content)] = got
        assert rcpt == ["a@x"] and b"Subject: tls" in content
    finally:
        controller.stop()
