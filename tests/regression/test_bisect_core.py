"""The pure logic of a bisect (regression/bisect.py) against a fake verdict oracle: which re-runs, what they mean,
and the commit search's bound. The real re-runs are in test_bisect_runs.py."""

from __future__ import annotations

import dataclasses

import pytest

from regression import bisect
from regression.bisect import OK, REGRESSION, Step, Trial

GOOD = {"llvm": "c1", "policy": "p1", "vocab": "v1"}


def _oracle(culprits: set[str], bad: dict, good: dict = GOOD, fail: str | None = None, control: str = REGRESSION):
    """A verdict that regresses while any of `culprits` has its bad value; records the trials it was asked."""
    asked: list[Trial] = []

    def rerun(trial: Trial) -> Step:
        asked.append(trial)
        if fail is not None and trial.swap == fail:
            return Step(trial, run_id=f"r{len(asked)}", error="clang crashed")
        if trial.swap is None:
            return Step(trial, run_id=f"r{len(asked)}", verdict=control)
        bad_now = any(trial.inputs[k] == bad[k] != good[k] for k in culprits)
        return Step(trial, run_id=f"r{len(asked)}", verdict=REGRESSION if bad_now else OK)

    return rerun, asked


def test_only_the_policy_changed_names_it_in_two_reruns() -> None:
    bad = {**GOOD, "policy": "p2"}
    rerun, asked = _oracle({"policy"}, bad)
    out = bisect.bisect_inputs(GOOD, bad, rerun)
    assert out.culprit == "policy" and out.why is None
    assert len(asked) == 2 and [t.swap for t in asked] == [None, "policy"]
    assert asked[1].inputs == GOOD  # the policy back to p1, everything else as in the bad run (here: the same)
    assert out.sentence() == "culprit policy p1 -> p2 (evidence runs r1, r2)"
    assert out.as_json()["evidence"] == ["r1", "r2"] and out.as_json()["culprit"] == "policy"


def test_of_three_changed_inputs_the_one_that_flips_is_named() -> None:
    bad = {"llvm": "c2", "policy": "p2", "vocab": "v2"}
    rerun, asked = _oracle({"vocab"}, bad)
    out = bisect.bisect_inputs(GOOD, bad, rerun)
    assert out.culprit == "vocab" and len(asked) == 4
    # each swap puts back one input only; LLVM (a toolchain to build) is tried last
    assert [t.swap for t in asked] == [None, "policy", "vocab", "llvm"]
    assert asked[2].inputs == {"llvm": "c2", "policy": "p2", "vocab": "v1"}


def test_cannot_decide_when_the_control_does_not_regress_again() -> None:
    bad = {**GOOD, "policy": "p2"}
    rerun, asked = _oracle({"policy"}, bad, control=OK)
    out = bisect.bisect_inputs(GOOD, bad, rerun)
    assert out.culprit is None and out.why.startswith("flaky: the bad run's own inputs did not regress again")
    assert len(asked) == 1  # no swap is worth making
    assert out.sentence().startswith("cannot decide: flaky")


def test_cannot_decide_when_both_or_neither_swap_flips() -> None:
    bad = {**GOOD, "policy": "p2", "vocab": "v2"}
    # the control regresses but every swap is good: both flip (flaky re-runs, or inputs that interact)
    both = bisect.bisect_inputs(GOOD, bad, _oracle(set(), bad)[0])
    assert both.culprit is None and "any of policy, vocab" in both.why
    # each of the two regresses on its own: swapping one back still regresses, neither flips
    rerun, _ = _oracle({"policy", "vocab"}, bad)
    neither = bisect.bisect_inputs(GOOD, bad, rerun)
    assert neither.culprit is None and neither.why.startswith("no single input flips the verdict")


def test_a_failed_rerun_is_named_not_guessed_around() -> None:
    bad = {**GOOD, "policy": "p2", "vocab": "v2"}
    out = bisect.bisect_inputs(GOOD, bad, _oracle({"policy"}, bad, fail="vocab")[0])
    assert out.culprit is None and out.why == "the re-run with vocab swapped back failed: clang crashed"


def test_nothing_changed_means_nothing_to_rerun() -> None:
    assert bisect.plan(GOOD, GOOD) == []
    assert bisect.bisect_inputs(GOOD, GOOD, lambda t: pytest.fail("no re-run")).why.startswith("no input changed")


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 64, 100])
def test_first_bad_commit_within_ceil_log2_n_plus_1_builds(n: int) -> None:
    commits = [f"c{i}" for i in range(n)]
    for k in range(n):
        built: list[str] = []

        def verdict(c: str, k: int = k, built: list[str] = built) -> str:
            built.append(c)
            return REGRESSION if int(c[1:]) >= k else OK

        found, tried, why = bisect.first_bad_commit(commits, verdict)
        assert (found, why) == (f"c{k}", None)
        assert len(built) <= bisect.max_builds(n) and [c for c, _ in tried] == built
        assert commits[-1] not in built  # the bad run's own commit is not rebuilt


def test_a_failed_commit_build_stops_the_search_and_says_so() -> None:
    found, tried, why = bisect.first_bad_commit([f"c{i}" for i in range(8)], lambda c: None)
    assert found is None and why == "the build or run at commit c3 failed" and tried == [("c3", None)]


def test_next_trial_resumes_from_the_reruns_made_so_far() -> None:
    """What a coordinator asks between builds: each answer follows from the steps recorded, nothing else."""
    bad = {"llvm": "c2", "policy": "p2", "vocab": "v1"}
    rerun, _ = _oracle({"policy"}, bad)
    steps: list[Step] = []
    specs = []
    while isinstance(nxt := bisect.next_trial(GOOD, bad, steps), Trial):
        specs.append(nxt.spec)
        steps.append(rerun(nxt))
        # asked again with the same steps (a coordinator that lost its memory), the answer is the same
        assert bisect.next_trial(GOOD, bad, list(steps)) == bisect.next_trial(GOOD, bad, tuple(steps))
    assert specs == ["control", "policy", "llvm"] and nxt.culprit == "policy"
    # a trial made twice counts by its last re-run; the order of the record does not matter to the plan
    flaky = Step(Trial("policy", {**bad, "policy": "p1"}), run_id="old", verdict=REGRESSION)
    assert bisect.next_trial(GOOD, bad, [flaky, *steps]).culprit == "policy"
    assert bisect.next_trial(GOOD, bad, [*steps, flaky]).why.startswith("no single input flips")


def test_the_commit_search_resumes_from_recorded_commit_verdicts() -> None:
    """LLVM named: the commit search is `first_bad_commit` replayed over the commits tried, one more each time."""
    commits = [f"{i:040x}" for i in range(1, 9)]  # commits 1..8 after the good run's commit 0; bad from commit 5
    good, bad = {"llvm": f"{0:040x}", "policy": "p"}, {"llvm": commits[-1], "policy": "p"}
    k = 4

    def verdict_of(trial: Trial) -> Step:
        llvm = trial.inputs["llvm"]
        regress = llvm == commits[-1] or (llvm in commits and commits.index(llvm) >= k)
        return Step(trial, run_id=trial.spec, verdict=REGRESSION if regress else OK)

    steps: list[Step] = []
    while isinstance(nxt := bisect.next_trial(good, bad, steps, lambda: commits), Trial):
        assert len(steps) < bisect.most_reruns(len(commits))
        assert nxt.spec == (f"llvm={nxt.commit}" if nxt.commit else nxt.swap or "control")
        steps.append(verdict_of(nxt))
    assert nxt.culprit == "llvm" and nxt.commit == commits[k]
    assert [s.trial.spec for s in steps[:2]] == ["control", "llvm"]
    tried = [s.trial.commit for s in steps[2:]]
    assert [c for c, _ in nxt.commit_steps] == tried and len(tried) <= bisect.max_builds(len(commits)) - 1
    assert nxt.extra == {"commits": 8, "commit_builds_bound": 4}
    # without a range (no clone of llvm-project) the bisect stops at the input: LLVM
    assert bisect.next_trial(good, bad, steps[:2], lambda: None).commit is None
    # a commit whose re-run failed stops the search and says so
    broken = [*steps[:2], dataclasses.replace(steps[2], verdict=None, error="ninja failed")]
    out = bisect.next_trial(good, bad, broken, lambda: commits)
    assert out.commit is None
    assert out.extra["commit_why"] == f"the build or run at commit {steps[2].trial.commit} failed"


def test_most_reruns_is_the_inputs_and_control_then_log2_of_the_commits() -> None:
    assert bisect.most_reruns() == len(bisect.ORDER) + 1 == 5
    assert [bisect.most_reruns(n) for n in (1, 2, 8, 9, 1000)] == [5, 6, 8, 9, 15]


def test_a_rerun_that_never_answers_what_was_asked_cannot_loop_forever() -> None:
    bad = {**GOOD, "policy": "p2"}
    with pytest.raises(RuntimeError, match="bisect made 5 re-runs, at most 5, and still asks for control"):
        bisect.bisect_inputs(GOOD, bad, lambda t: Step(Trial("vocab", dict(bad)), verdict=OK))
