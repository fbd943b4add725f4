"""A bisect on a real Buildbot master and worker (the farm's own master.cfg and registry): a good night, then a night
where only the policy changed for the worse, open one alert (made as tests/regression/test_bisect_runs.py makes it);
a forced `regression-bisect` build asks `regress bisect N --next`, triggers one `regression-bisect-rerun` build per
re-run (the control, then the policy swapped back: exactly two, each a build of its own) and finishes; the alert
names the policy. The builds are counted through Buildbot's REST API."""

from __future__ import annotations

import time

import pytest

from regression import bisect, compare
from regression.alerts.records import AlertStore
from tests.master.test_master_live import live  # noqa: F401  (the live master fixture: master.cfg + worker local)
from tests.regression.alerts.test_delivery import _run
from tests.regression.conftest import delivered


def test_forced_bisect_triggers_one_build_per_rerun_and_names_the_policy(live, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
                                                                          toolchain) -> None:
    start, mailbox = live
    # two build slots: the coordinator waits in one (the fan-out's waiting lock), its re-runs take the other
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WORKERS", "local:big+x86_64:2")
    assert _run("n1", "heuristic").verdict == "ok"
    assert _run("n2", "never").verdict == "regression"
    history = compare.open_history()
    [alert] = AlertStore(history).alerts()
    assert alert.inputs == {"policy": ["heuristic", "never"]}

    api = start()
    t0 = time.time()
    api.force("regression-bisect", {"alert": str(alert.id)})  # a real bisect, no what-if: it mails its follow-up
    api.wait_idle(timeout=600, poll=0.5)
    took = time.time() - t0

    builds = api.builds_after(0)
    by_builder: dict[str, list] = {}
    for b in builds:
        by_builder.setdefault(b.builder, []).append(b)
    assert sorted(by_builder) == ["regression-bisect", "regression-bisect-rerun"], [(b.builder, b.steps)
                                                                                     for b in builds]
    [coordinator] = by_builder["regression-bisect"]
    reruns = by_builder["regression-bisect-rerun"]
    assert coordinator.result == "success", coordinator.steps
    assert len(reruns) == 2 and all(r.result == "success" for r in reruns), [(r.number, r.steps) for r in reruns]
    print(f"live policy bisect: {len(reruns)} re-run builds in {took:.1f} s")  # for the closing note (pytest -s)

    # the same count from the builder's own builds endpoint
    rerun_id = api.builders()["regression-bisect-rerun"]
    assert len(api.get(f"builders/{rerun_id}/builds")["builds"]) == 2
    # the coordinator's steps as its loop laid them out: ask, trigger, ask, trigger, ask, finish
    names = [n for n, _ in coordinator.steps if not n.startswith(("worker_preparation", "locks"))]
    assert names[0] == "next" and names[-1] == "finish" and [n for n in names if n.startswith("trial-")] == [
        "trial-1", "trial-2"], coordinator.steps
    # each re-run build got its trial as a checked property: the control, then the policy swapped back
    trials = []
    for r in reruns:
        (props,) = api.get(f"builds/{r.buildid}/properties")["properties"]
        trials.append((props["alert"][0], props["trial"][0]))
    assert trials == [(str(alert.id), "control"), (str(alert.id), "policy")]
    log = api.raw(f"builds/{coordinator.buildid}/steps/next/logs/loop/raw")
    assert "trial 1, at most 5 + ceil(log2 0 commits) = 5 trials" in log, log

    stored = AlertStore(history).get(alert.id).bisect
    assert stored["culprit"] == "policy" and [s["swap"] for s in stored["steps"]] == [None, "policy"], stored
    assert [s["verdict"] for s in stored["steps"]] == ["regression", "ok"]
    # the re-runs are bisect runs: no new alert, not in the trend
    assert len(AlertStore(history).alerts()) == 1 and [r.run_id for r in history.runs("nightly")] == ["n1", "n2"]
    # and the follow-up mail, in the alert mail's thread
    follow = [m for m in delivered(mailbox) if "Bisect of alert" in str(m.get_payload(decode=True) or b"", "utf-8")]
    assert len(follow) == 1 and follow[0]["In-Reply-To"], [m["Subject"] for m in mailbox.messages]


@pytest.mark.slow
def test_an_llvm_culprit_is_narrowed_to_its_commit_by_llvm_builds_on_the_big_worker(
        live, monkeypatch: pytest.MonkeyPatch, tmp_path, toolchain) -> None:  # noqa: F811
    """The same with a stand-in llvm-project (`[llvm] repo`; tests/regression/test_bisect_llvm.py) whose clang stops
    inlining from commit k = 5 of n = 8: the control and the LLVM swap, then one `regression-bisect-llvm` build per
    commit tried (its toolchain made by the farm's LLVM build), at most ceil(log2 8) = 3 of them."""
    from regression.bisectllvm import farm_cache
    from regression.compare import RunRequest, run_comparison
    from tests.regression.alerts.test_delivery import BENCH
    from tests.regression.test_bisect_llvm import _llvm_project

    start, _ = live
    n, k = 8, 5
    commits = _llvm_project(tmp_path / "llvm-project", n, k)
    monkeypatch.setenv("MLGO_FARM_LLVM_REPO", str(tmp_path / "llvm-project"))
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WORKERS", "local:big+x86_64:2")
    from farm.config import load_settings

    cache = farm_cache(load_settings(), toolchain)  # the nights' toolchains, by commit, where the worker finds them

    def night(run_id: str, commit: str):
        return run_comparison(RunRequest(builder="nightly", run_id=run_id, benchmarks=(BENCH,), policy="heuristic",
                                         repeats=0, jobs=2), toolchain=cache.get(commit))

    assert night("l1", commits[0]).verdict == "ok" and night("l2", commits[n]).verdict == "regression"
    history = compare.open_history()
    [alert] = AlertStore(history).alerts()
    assert alert.inputs == {"llvm": [commits[0], commits[n]]}

    api = start()
    t0 = time.time()
    api.force("regression-bisect", {"alert": "latest"})
    api.wait_idle(timeout=900, poll=0.5)
    took = time.time() - t0
    builds = api.builds_after(0)
    llvm = [b for b in builds if b.builder == "regression-bisect-llvm"]
    [coordinator] = [b for b in builds if b.builder == "regression-bisect"]
    assert coordinator.result == "success" and all(b.result == "success" for b in llvm), [
        (b.builder, b.result, b.steps) for b in builds]
    assert not [b for b in builds if b.builder == "regression-bisect-rerun"]  # every trial's LLVM is a commit
    stored = AlertStore(history).get(alert.id).bisect
    assert stored["culprit"] == "llvm" and stored["commit"] == commits[k], stored["sentence"]
    # control + LLVM swapped back, then the commit search: at most ceil(log2 n) builds of commits
    searched = len(llvm) - 2
    print(f"live llvm bisect n={n} k={k}: {len(llvm)} re-run builds ({searched} commits) in {took:.1f} s")
    assert 1 <= searched <= bisect.max_builds(n) - 1 and len(stored["commit_steps"]) == searched
    trials = []
    for b in llvm:
        (props,) = api.get(f"builds/{b.buildid}/properties")["properties"]
        trials.append(props["trial"][0])
    assert trials[:2] == ["control", "llvm"] and all(t.startswith("llvm=") for t in trials[2:])
    assert [t.removeprefix("llvm=") for t in trials[2:]] == [c for c, _ in stored["commit_steps"]]
    for commit in trials[2:]:  # each built on the worker by the farm's LLVM build (CMake, Ninja), kept by commit
        assert (cache.root / commit.removeprefix("llvm=") / "CMakeCache.txt").is_file()
    log = api.raw(f"builds/{coordinator.buildid}/steps/next_3/logs/loop/raw")
    assert f"at most 5 + ceil(log2 {n} commits) = 8 trials" in log, log
