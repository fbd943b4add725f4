"""The alert's "Reproduce" command works from anywhere the master's URL reaches: it names the published policy and
vocabulary by their dashboard download URLs with their sha256, and `regress run` fetches and checks them. Run here
against the dashboard served over HTTP, in a directory whose farm has no store at all."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from farm.objectstore import store_from_settings
from policyhost import publish as pstore
from regression import benchmarks
from regression.alerts.records import REGRESSION
from regression.compare import RunRequest, run_comparison
from regression.tasks import deliver_alerts
from tests.master.served import dashboard
from tests.policyhost.conftest import publish_vocab, signed_policy_manifest, write_onnx_policy
from tests.regression.test_published_policy import callgraph_corpus  # noqa: F401  (fixture)
from tests.servers import MailBox

MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))
HEADING = "Reproduce the comparison locally (with the same LLVM):\n  "


def _elsewhere(tmp_path: Path) -> dict[str, str]:
    """Another machine's farm: its own empty config and var/, a store URL that names nothing, no SMTP."""
    home = tmp_path / "elsewhere"
    (home / "var").mkdir(parents=True)
    (home / "mlgo-farm.toml").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLGO_FARM_")}
    env.update(MLGO_FARM_CONFIG=str(home / "mlgo-farm.toml"), MLGO_FARM_PATHS_VAR_DIR=str(home / "var"),
               MLGO_FARM_STORE_URL=f"file://{home / 'no-store'}", MLGO_FARM_CACHE_ENABLED="false")
    return env


def test_the_mailed_reproduce_command_runs_where_the_store_is_not(
        callgraph_corpus: Path, ir2vec_vocab: Path, smtp_env: MailBox, tmp_path: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    vocab = publish_vocab(ir2vec_vocab.read_bytes())
    model = write_onnx_policy(tmp_path / "none.onnx", "callee_basic_block_count", "Less", 0)  # inlines nothing
    manifest = signed_policy_manifest(model.read_bytes(), ["callee_basic_block_count"], vocab_version=vocab)
    version = pstore.publish(store_from_settings(), model.read_bytes(), manifest, when=2e9)["version"]

    with dashboard(monkeypatch) as base:
        result = run_comparison(RunRequest(builder="nightly", run_id="n1", corpus=callgraph_corpus,
                                           policy="store:latest", repeats=0, callgrind=False, publish=False,
                                           jobs=2))
        assert result.verdict == "regression" and result.alert == REGRESSION
        deliver_alerts()  # Celery beat's delivery
        [mail] = smtp_env.messages
        body = mail.get_payload(decode=True).decode().replace("\r\n", "\n")
        command = body.split(HEADING, 1)[1].splitlines()[0]
        argv = shlex.split(command)
        assert "store:" not in command
        policy_url = f"{base}store/policies/inline/{version}/model.onnx"
        assert argv[argv.index("--policy") + 1] == policy_url
        assert argv[argv.index("--vocab") + 1] == f"{base}store/vocab/ir/{vocab}/vocab.json"
        assert len(argv[argv.index("--policy-sha256") + 1]) == 64 == len(argv[argv.index("--vocab-sha256") + 1])

        env = _elsewhere(tmp_path)
        work = tmp_path / "elsewhere" / "work"
        work.mkdir()
        got = subprocess.run([MLGO_FARM, *argv[1:], "--run-id", "again"], cwd=work, env=env, capture_output=True,
                             text=True, timeout=900)
        assert got.returncode == 0, got.stdout + got.stderr
        assert "verdict: " in got.stdout and "REGRESSION" in got.stdout
        assert not (tmp_path / "elsewhere" / "no-store").exists()  # nothing was read from (or written to) a store

        # a wrong sha256 is refused before anything is measured, and nothing is kept
        bad = [*argv[1:]]
        bad[bad.index("--policy-sha256") + 1] = "0" * 64
        refused = subprocess.run([MLGO_FARM, *bad], cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert refused.returncode != 0 and "checksum mismatch" in refused.stderr, refused.stderr
        assert "\n" not in refused.stderr.strip()


def _reader_env(tmp_path: Path, mailbox: MailBox) -> dict[str, str]:
    """A reader's machine: no farm settings but SMTP recipients (the team's address) and its own TMPDIR; var_dir
    left at its default, `./var`, relative to where the command runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLGO_FARM_")}
    (tmp_path / "reader-tmp").mkdir()
    (tmp_path / "no-config.toml").write_text("")
    env.update(MLGO_FARM_CONFIG=str(tmp_path / "no-config.toml"), MLGO_FARM_CACHE_ENABLED="false",
               MLGO_FARM_SMTP_HOST=mailbox.host, MLGO_FARM_SMTP_PORT=str(mailbox.port),
               MLGO_FARM_SMTP_RECIPIENTS="llvm-mlgo@example.org", TMPDIR=str(tmp_path / "reader-tmp"))
    return env


def test_a_local_benchmark_is_reproduced_by_url_writing_only_its_report(
        smtp_env: MailBox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from tests.conftest import DATA

    csrc = DATA / "csrc"
    with dashboard(monkeypatch) as base:
        result = run_comparison(RunRequest(builder="nightly", run_id="n1", policy="never", repeats=0, jobs=2,
                                           benchmarks=(benchmarks.local_benchmark(csrc, ("20000",)),)))
        assert result.verdict == "regression" and result.alert == REGRESSION
        deliver_alerts()  # Celery beat's delivery
        [mail] = smtp_env.messages
        body = mail.get_payload(decode=True).decode().replace("\r\n", "\n")
        command = body.split(HEADING, 1)[1].splitlines()[0]
        argv = shlex.split(command)
        # no path of the farm host: the sources by the dashboard's URL of their tarball, with its sha256
        assert str(csrc) not in command and "--bench-dir" not in argv and str(DATA) not in command
        url, sha = argv[argv.index("--bench-url") + 1], argv[argv.index("--bench-sha256") + 1]
        assert url.startswith(f"{base}store/regression/sources/{sha}/") and argv[-1] == "--reproduce"

        env = _reader_env(tmp_path, smtp_env)
        work = tmp_path / "reader"
        work.mkdir()
        got = subprocess.run([MLGO_FARM, *argv[1:]], cwd=work, env=env, capture_output=True, text=True,
                             timeout=900)
        assert got.returncode == 0, got.stdout + got.stderr
        # nothing but its report where it ran (no ./var/), nothing left in TMPDIR, nobody mailed
        assert [p.name for p in work.iterdir()] == ["mlgo-farm-report"], list(work.rglob("*"))
        assert list((tmp_path / "reader-tmp").iterdir()) == []
        assert len(smtp_env.messages) == 1
        assert "not mailed" in got.stdout and "verdict: " in got.stdout
        said = json.loads((work / "mlgo-farm-report" / "results.json").read_text())
        assert said["verdict"] == result.verdict == "regression"

        # a wrong sha256: one line, a non-zero exit, nothing written
        bad = [*argv[1:]]
        bad[bad.index("--bench-sha256") + 1] = "0" * 64
        empty = tmp_path / "reader2"
        empty.mkdir()
        refused = subprocess.run([MLGO_FARM, *bad], cwd=empty, env=env, capture_output=True, text=True, timeout=300)
        assert refused.returncode != 0 and "checksum mismatch" in refused.stderr, refused.stderr
        assert "\n" not in refused.stderr.strip()
        assert list(empty.iterdir()) == [] and list((tmp_path / "reader-tmp").iterdir()) == []


def test_a_reproduction_mails_only_when_asked(smtp_env: MailBox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from farm.cli import main
    from farm.config import load_settings
    from tests.conftest import DATA

    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["regress", "run", "--bench-dir", str(DATA / "csrc"), "--bench-arg=20000", "--policy", "never",
                 "--repeats", "0", "--report-dir", "out", "--mail"]) == 0
    [mail] = smtp_env.messages  # asked: the alert goes to [smtp] recipients
    assert f"alert: regression mailed through {smtp_env.host}:{smtp_env.port}" in capsys.readouterr().out
    assert "REGRESSION" in str(mail["Subject"])
    assert [p.name for p in here.iterdir()] == ["out"] and (here / "out" / "index.html").is_file()
    assert not load_settings().var_dir.exists()  # the farm's own var_dir was not touched either
    # a directory that holds something else than a report is not overwritten
    (here / "mine").mkdir()
    (here / "mine" / "notes.txt").write_text("mine")
    assert main(["regress", "run", "--bench-dir", str(DATA / "csrc"), "--policy", "never", "--repeats", "0",
                 "--report-dir", "mine"]) == 2
    assert [p.name for p in (here / "mine").iterdir()] == ["notes.txt"]


def test_a_reproduction_whose_mail_server_refuses_says_its_mail_is_lost(
        smtp_env: MailBox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """No server on [smtp] port (no `stack up`, so no sink): the answer says the alert was NOT mailed and why, never
    that it was mailed or waits in an outbox that is removed with the reproduction."""
    import json

    from farm.cli import main
    from tests.conftest import DATA
    from tests.servers import free_port

    monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(free_port()))  # nothing listens there
    monkeypatch.setenv("MLGO_FARM_SMTP_RETRIES", "1")
    monkeypatch.chdir(tmp_path)
    argv = ["regress", "run", "--bench-dir", str(DATA / "csrc"), "--bench-arg=20000", "--policy", "never",
            "--repeats", "0", "--mail"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    [line] = [ln for ln in out.splitlines() if ln.startswith("alert: ")]
    assert line.startswith("alert: regression NOT mailed: alert 1 (regression, run ") and "refused" in line, line
    assert "nothing sends it later" in line and "`mlgo-farm stack up` starts the local sink" in line
    assert " mailed through" not in out and "queued in the outbox" not in out and smtp_env.messages == []
    assert main([*argv, "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["reproduction"]
    assert said["asked"] is True and said["mailed"] is False and "refused" in said["error"]
