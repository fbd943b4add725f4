"""A bisect one step at a time, as the `regression-bisect` builds drive it (`regress bisect ID --next | --rerun SPEC |
--finish`), with real re-runs: every answer follows from the alert and the re-runs the history recorded, so another
process (another build, another worker) can take the next step. What the coordinator passes is checked by the verb too:
a spec outside the fixed set, an input that did not change, a commit where LLVM has none are refused (exit 2)."""

from __future__ import annotations

import json

import pytest

from farm.cli import main
from regression import compare
from regression.alerts.records import AlertStore
from regression.bisectrun import run_bisect
from tests.regression.alerts.test_delivery import _run
from tests.regression.conftest import delivered

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _answer(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["regress", "bisect", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_next_rerun_finish_one_step_at_a_time(smtp_env, capsys) -> None:
    assert _run("s1", "heuristic").verdict == "ok"
    assert _run("s2", "never").verdict == "regression"
    history = compare.open_history()
    store = AlertStore(history)
    [alert] = store.alerts()
    n = str(alert.id)

    code, said = _answer(capsys, "latest", "--next")
    assert code == 0 and said == {"alert": alert.id, "done": False, "trial": "control", "runs_on": "any",
                                  "reruns": 0, "commits": 0, "most": 5, "sentence": "next re-run: control (on any "
                                  "worker)", "exit_code": 0}
    assert main(["regress", "bisect", n, "--finish"]) == 2
    assert capsys.readouterr().err.strip() == (f"mlgo-farm: error: alert #{n}: the bisect is not done: re-run control "
                                               f"next (regress bisect {n} --rerun control)")
    # what no coordinator may ask: a spec outside the set, an input that did not change, a commit LLVM lacks
    for bad in (["--rerun", "/bin/sh"], ["--rerun", f"llvm={COMMIT[:12]}"], ["--next", "--finish"]):
        with pytest.raises(SystemExit) as usage:  # argparse's usage error: exit 2, nothing run
            main(["regress", "bisect", n, *bad])
        assert usage.value.code == 2
    assert "bisect trial '/bin/sh': one of control, policy, vocab, bench, llvm or llvm=COMMIT (40 hex)" in \
        capsys.readouterr().err
    for spec, error in (("vocab", f"alert #{n}: vocab did not change between the good and the bad run"),
                        (f"llvm={COMMIT}", f"alert #{n}: LLVM is not named by two commits: no commit to re-run")):
        assert main(["regress", "bisect", n, "--rerun", spec]) == 2
        assert error in capsys.readouterr().err, spec

    code, made = _answer(capsys, n, "--rerun", "control")
    assert code == 0 and made["verdict"] == "regression" and made["run_id"] == f"s2.bisect{n}.1-control", made
    code, said = _answer(capsys, n, "--next")
    assert (said["trial"], said["reruns"]) == ("policy", 1)
    code, made = _answer(capsys, n, "--rerun", "policy")
    assert code == 0 and made["verdict"] == "ok" and made["run_id"] == f"s2.bisect{n}.2-policy"
    code, said = _answer(capsys, n, "--next")
    assert said["done"] is True and said["trial"] is None and said["reruns"] == 2
    assert said["sentence"].startswith("done: culprit policy heuristic -> never")
    assert store.get(alert.id).bisect is None and len(delivered(smtp_env)) == 1  # decided only by --finish

    code, done = _answer(capsys, n, "--finish")
    assert code == 0 and done["culprit"] == "policy" and done["reruns"] == 2, done
    assert done["evidence"] == [f"s2.bisect{n}.1-control", f"s2.bisect{n}.2-policy"]
    stored = store.get(alert.id).bisect
    assert stored["culprit"] == "policy" and stored["seconds"] >= 0 and len(delivered(smtp_env)) == 2

    # the bisect all at once, again: it resumes from the record, so nothing is re-run and the answer is the same
    before = len(history.runs("nightly", bisect=True))
    assert run_bisect(alert.id, history).culprit == "policy"
    assert len(history.runs("nightly", bisect=True)) == before == 4


def test_a_rerun_that_cannot_be_made_is_recorded_as_failed_and_the_bisect_says_why(smtp_env, capsys) -> None:
    """The good night's LLVM is not on this host: the LLVM swap fails before any comparison, is recorded as a failed
    bisect run all the same, and the next answer is `done` (cannot decide), not the same trial again."""
    assert _run("g1", "heuristic").verdict == "ok"
    history = compare.open_history()
    with history.transaction() as db:  # the good night ran another LLVM
        db.execute("UPDATE runs SET llvm_commit='0123456789abcdef', llvm_package=NULL WHERE run_id='g1'")
    assert _run("b1", "never").verdict == "regression"
    [alert] = AlertStore(history).alerts()
    n = str(alert.id)
    for spec in ("control", "policy"):
        assert _answer(capsys, n, "--rerun", spec)[0] == 0
    code, said = _answer(capsys, n, "--next")
    assert said["trial"] == "llvm" and said["runs_on"] == "any"  # not a commit: the LLVM of a worker that has it
    code, made = _answer(capsys, n, "--rerun", "llvm")
    assert code == 1 and made["error"] == "no toolchain of LLVM 0123456789abcdef on this host"
    failed = history.run(made["run_id"], "nightly")
    assert failed.status == "failed" and failed.config["bisect"]["spec"] == "llvm"
    code, said = _answer(capsys, n, "--next")
    assert said["done"] is True and "the re-run with llvm swapped back failed" in said["sentence"]
