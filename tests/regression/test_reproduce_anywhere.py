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
from regression import alerts
from regression.compare import RunRequest, run_comparison
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
                                           jobs=2), deliver_backoff=0.05)
        assert result.verdict == "regression" and result.alert == alerts.REGRESSION
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
