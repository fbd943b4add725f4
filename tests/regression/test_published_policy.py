"""The nightly judgement of published policies: `store:latest` against the heuristic and the previous version."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from farm.errors import EXIT_NOT_IDENTICAL
from farm.objectstore import store_from_settings
from farm.toolchain import Toolchain
from policyhost import publish as pstore
from regression import report
from regression.alerts.records import REGRESSION
from regression.cli import not_identical
from regression.compare import RunRequest, open_history, run_comparison
from regression.rules import PREVIOUS_BASELINE, REGRESSED
from tests.policyhost.callgraph import write_sources
from tests.policyhost.conftest import signed_policy_manifest, write_onnx_policy
from tests.servers import MailBox

MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))


@pytest.fixture(scope="module")
def callgraph_corpus(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> Path:
    """A real corpus with many call sites of every kind (so inlining decisions change .text)."""
    from workers.corpus import from_sources

    root = tmp_path_factory.mktemp("cg")
    return from_sources(write_sources(root / "src"), root / "callgraph", toolchain, jobs=2, level="Oz").path


def publish_model(path: Path, feature: str, when: float) -> str:
    """Publish a real ONNX model as a policy version (a stand-in for the validated warm start); its version."""
    manifest = signed_policy_manifest(path.read_bytes(), [feature])
    return pstore.publish(store_from_settings(), path.read_bytes(), manifest, when=when)["version"]


def _run(corpus: Path, run_id: str, policy: str = "store:latest", builder: str = "regression-inliner-size"):
    """A night's run, then Celery beat's delivery of what it queued."""
    from regression.tasks import deliver_alerts

    result = run_comparison(RunRequest(builder=builder, run_id=run_id, corpus=corpus, policy=policy, repeats=0,
                                       callgrind=False, publish=False, jobs=2))
    deliver_alerts()
    return result


def test_a_worse_new_version_regresses_against_heuristic_and_previous_and_alerts(
        callgraph_corpus: Path, smtp_env: MailBox, tmp_path: Path) -> None:
    # version 1 answers LLVM's own default decision: exactly the heuristic's code
    same = publish_model(write_onnx_policy(tmp_path / "same.onnx", "inlining_default", "Greater", 0),
                         "inlining_default", when=1.9e9)
    first = _run(callgraph_corpus, "n1")
    assert first.verdict == "ok" and first.run.policy_id == same and smtp_env.messages == []
    assert first.run.config["policy"] == "store:latest" and first.run.config["policy_version"] == same
    assert first.run.llvm_label not in ("", "-") and (first.run.llvm_commit or first.run.llvm_package)

    # version 2 inlines nothing (no callee has fewer than 0 blocks): static helpers stay, bigger at -Oz
    worse = publish_model(write_onnx_policy(tmp_path / "none.onnx", "callee_basic_block_count", "Less", 0),
                          "callee_basic_block_count", when=2e9)
    second = _run(callgraph_corpus, "n2")
    assert second.run.policy_id == worse and second.verdict == "regression" and second.alert == REGRESSION
    against_previous = [c for c in second.comparisons if c.baseline == PREVIOUS_BASELINE and c.gating]
    assert against_previous and all(c.verdict == REGRESSED for c in against_previous)
    [mail] = smtp_env.messages
    subject = " ".join(str(mail["Subject"]).split())  # a long header is folded
    line = report.headline(report.table_rows(second.comparisons), "regression", second.skipped, say_verdict=False)
    assert subject == f"[mlgo-farm] REGRESSION: regression-inliner-size: {line} (run n2, policy {worse})"
    body = mail.get_payload(decode=True).decode()
    # the reproducing command names the version that regressed, not `latest` (which moves on), by its URL and sha256
    command = body.split("-- the run")[0]
    assert f"/store/policies/inline/{worse}/model.onnx --policy-sha256 " in command and "--advisor inline" in command
    assert "store:latest" not in command and "/latest/" not in command

    history = open_history()
    rows = history.measurements(second.run)
    assert rows and history.runs("regression-inliner-size")[-1].policy_id == worse
    import sqlite3

    with sqlite3.connect(history.path) as db:
        got = db.execute("SELECT DISTINCT llvm_commit, llvm_package, policy_id FROM measurements WHERE run_id='n2'"
                         ).fetchall()
    assert len(got) == 1 and (got[0][0] or got[0][1]) and got[0][2] == worse


def _winning_policy(corpus: Path, toolchain: Toolchain, out: Path) -> Path:
    """A policy trained as the farm trains (exploration, weighted cloning) on `corpus`: it wins there."""
    from policytrain.explore import explore
    from policytrain.improve import bc_dataset, fit_bc
    from policytrain.onnx_export import to_onnx
    from policytrain.params import BcParams, Budget
    from policytrain.units import corpus_units

    found = [explore(u, None, toolchain, Budget(4, 2)) for u in corpus_units(corpus)]
    assert any(r.flips for r in found), "exploration found nothing smaller: nothing to learn"
    params = BcParams(epochs=60)
    out.write_bytes(to_onnx(fit_bc(*bc_dataset(found, params), params)))
    return out


def test_the_nightly_is_green_while_the_policy_wins_and_red_with_one_alert_when_it_loses(
        callgraph_corpus: Path, toolchain: Toolchain, smtp_env: MailBox, tmp_path: Path) -> None:
    from policyhost.release import model_inputs

    model = _winning_policy(callgraph_corpus, toolchain, tmp_path / "win.onnx")
    pstore.publish(store_from_settings(), model.read_bytes(),
                   signed_policy_manifest(model.read_bytes(), model_inputs(model)), when=1.9e9)
    won = _run(callgraph_corpus, "w1")
    totals = [c for c in won.comparisons if c.gating and c.metric == "text_size" and c.baseline == "heuristic"]
    assert won.verdict == "ok" and totals and all(c.value < c.base_value for c in totals), totals
    assert smtp_env.messages == []
    # then LLVM, or a vocabulary, erodes the win: the policy that inlines nothing stands for it
    publish_model(write_onnx_policy(tmp_path / "none.onnx", "callee_basic_block_count", "Less", 0),
                  "callee_basic_block_count", when=2e9)
    lost = _run(callgraph_corpus, "w2")
    assert lost.verdict == "regression" and lost.alert == REGRESSION
    assert len(smtp_env.messages) == 1 and "REGRESSION" in str(smtp_env.messages[0]["Subject"])
    again = _run(callgraph_corpus, "w3")  # still losing: no second mail
    assert again.verdict == "regression" and len(smtp_env.messages) == 1


def test_control_run_is_exactly_the_heuristic(callgraph_corpus: Path, tmp_path: Path) -> None:
    control = subprocess.run([MLGO_FARM, "regress", "run", "--builder", "regression-inliner-control", "--corpus",
                              str(callgraph_corpus), "--policy", "heuristic", "--repeats", "0", "--no-callgrind",
                              "--no-publish", "--expect-identical", "--fail-on-regression"],
                             capture_output=True, text=True, timeout=600)
    assert control.returncode == 0, control.stdout + control.stderr
    assert "text_size" in control.stdout and "control failed" not in control.stdout
    publish_model(write_onnx_policy(tmp_path / "all.onnx", "callee_basic_block_count", "Greater", 0),
                  "callee_basic_block_count", when=2e9)
    broken = subprocess.run([MLGO_FARM, "regress", "run", "--builder", "ctl2", "--corpus", str(callgraph_corpus),
                             "--policy", "store:latest", "--repeats", "0", "--no-callgrind", "--no-publish",
                             "--expect-identical"], capture_output=True, text=True, timeout=600)
    assert broken.returncode == EXIT_NOT_IDENTICAL, broken.stdout + broken.stderr
    assert "control failed: the policy build is not the heuristic build (" in broken.stdout
    assert not_identical([]) == "no .text size was compared"


def test_an_older_history_database_gains_the_package_column(tmp_path: Path) -> None:
    import sqlite3

    from regression.history import History
    from tests.regression.legacy import SCHEMA

    db_path = tmp_path / "old.sqlite"
    old = SCHEMA.replace(", llvm_package TEXT", "")
    assert old != SCHEMA
    with sqlite3.connect(db_path) as db:
        db.executescript(old)
        db.execute("INSERT INTO runs (run_id, builder, started, status, llvm_version, policy_id) "
                   "VALUES ('r0', 'b', 0, 'complete', '22.1.8', 'heuristic')")
    history = History(db_path)
    assert history.run("r0", "b").llvm_package is None and history.run("r0", "b").llvm_label == "22.1.8"
    run = history.start_run("r1", "b", llvm_version="22.1.8", llvm_commit=None, policy_id="p", vocab_version=None,
                            llvm_package="clang-22 1:22.1.8-1~deb12u1")
    assert run.llvm_label == "clang-22 1:22.1.8-1~deb12u1"
