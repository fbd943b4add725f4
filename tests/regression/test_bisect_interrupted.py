"""A bisect whose re-run is stopped (regression/bisectrun.py, regression/unfinished.py): a SIGTERM'd re-run was
recorded as a failed trial, so the bisect said "cannot decide" and mailed it; a re-run stopped after its verdict but
before its report was published left evidence links that answered 404."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from farm.cli import main
from farm.config import load_settings
from farm.errors import Terminated
from farm.objectstore import store_from_settings
from regression import bisectmail, bisectrun, compare, report, unfinished
from regression.alerts.outbox import Outbox
from regression.alerts.records import AlertStore
from regression.history import History
from tests.regression.alerts.test_delivery import _run
from tests.regression.alerts.test_records import _alerted
from tests.servers import wait_until

MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))


def _record(h: History, alert, n: int, verdict: str | None = None):
    """The n-th re-run of `alert`'s next trial, as `rerun` records it; completed with `verdict`, else left running."""
    nxt = bisectrun.next_of(alert.id, h)
    trial, case = nxt.trial, nxt.case
    run = h.start_run(bisectrun.rerun_id(trial, case.bad, alert, n), case.bad.builder, llvm_version="22.1.8",
                      llvm_commit=trial.inputs["llvm"], policy_id=trial.inputs["policy"],
                      vocab_version=trial.inputs.get("vocab"),
                      config={"bisect": bisectrun.bisect_config(trial, case.good, case.bad, alert)})
    if verdict is not None:
        h.complete_run(run, verdict, None)
    return run


def test_a_rerun_left_running_or_stopped_is_no_trial_and_is_asked_for_again(history_at: str) -> None:
    h = History(history_at)
    _alerted(h, "nightly")
    [alert] = AlertStore(h).alerts()
    _record(h, alert, 1)  # its process died (SIGKILL, a machine's crash): left `running`
    h.fail_run(_record(h, alert, 2), unfinished.stopped(Terminated()))  # SIGTERM: recorded as interrupted
    nxt = bisectrun.next_of(alert.id, h)
    assert nxt.finding is None and nxt.trial is not None and nxt.trial.spec == "control"
    assert nxt.case.steps == () and nxt.case.recorded == 2  # the next re-run is the third, under a number of its own
    # a re-run that failed on its own (a build that breaks) is still a trial: the bisect then cannot decide
    h.fail_run(_record(h, alert, 3), "the policy build failed")
    done = bisectrun.next_of(alert.id, h)
    assert done.trial is None and "the control re-run failed: the policy build failed" in done.finding.sentence()


def test_evidence_links_only_to_reports_that_were_published(monkeypatch) -> None:
    monkeypatch.setenv("MLGO_FARM_SMTP_RECIPIENTS", "oncall@example.org")
    settings = load_settings()
    h = compare.open_history()
    _alerted(h, "nightly")
    [alert] = AlertStore(h).alerts()
    control = _record(h, alert, 1, "regression")
    swapped = _record(h, alert, 2, "ok")  # stopped after its verdict was recorded, before its report was published
    store_from_settings(settings).put(f"{report.report_prefix('nightly', control.run_id)}/index.html", b"<html/>",
                                      "text/html")
    assert bisectrun.finish(alert.id, h, settings).culprit == "policy"
    stored = AlertStore(h).get(alert.id).bisect
    assert stored["evidence"] == [control.run_id, swapped.run_id]
    assert stored["links"] == {control.run_id: bisectmail.evidence_url(settings, "nightly", control.run_id)}
    [follow] = [m for m in Outbox(h).messages() if m.kind == "bisect"]
    body = follow.message.decode()
    assert f"/{control.run_id}/index.html" in body and f"/{swapped.run_id}/index.html" not in body


def test_a_sigtermed_rerun_is_no_trial_and_the_resumed_bisect_makes_it_again(smtp_env) -> None:
    assert _run("n1", "heuristic").verdict == "ok"
    assert _run("n2", "never").verdict == "regression"
    h = compare.open_history()
    [alert] = AlertStore(h).alerts()
    proc = subprocess.Popen([MLGO_FARM, "regress", "bisect", str(alert.id), "--rerun", "control"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: h.bisect_runs(alert.id), 300, "the re-run to start")  # measuring: seconds from a verdict
        proc.send_signal(signal.SIGTERM)  # a build's stop, a worker's restart
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, err
    [stopped] = h.bisect_runs(alert.id)
    assert stopped.status == "failed" and stopped.error.startswith("interrupted (Terminated)")
    assert main(["regress", "bisect", str(alert.id), "--next", "--json"]) == 0
    assert [m.kind for m in Outbox(h).messages()] == ["regression"]  # nothing decided, nothing mailed
    found = bisectrun.run_bisect(alert.id, h)  # resumed: the control made again, then the policy swapped back
    assert found.culprit == "policy" and stopped.run_id not in found.evidence and len(found.evidence) == 2
    assert [m.kind for m in Outbox(h).messages()] == ["regression", "bisect"]


def test_next_says_the_stopped_trial_again(smtp_env, capsys) -> None:
    """`--next` of a bisect whose only re-run was stopped: that trial again, not "done: cannot decide"."""
    h = compare.open_history()
    _alerted(h, "nightly")
    [alert] = AlertStore(h).alerts()
    h.fail_run(_record(h, alert, 1), unfinished.stopped(Terminated()))
    assert main(["regress", "bisect", str(alert.id), "--next", "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["done"] is False and said["trial"] == "control" and said["reruns"] == 0
