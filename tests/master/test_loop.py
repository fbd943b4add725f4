"""A registry Loop (master/registry.py, master/loop.py): the bisect coordinator and its trial builders are valid
data, a loop that would pass a trial build an unchecked property is refused when the master loads its registry, and
what the coordinator's ask step answers is checked before any trial build starts (a bad trial spec, an unknown kind
of worker, a repeated trial, too many trials). The real builds are in test_bisect_live.py."""

from __future__ import annotations

import dataclasses

import pytest

from farm.errors import InputError
from master.factories import AskStep, make_factory
from master.loop import bound, decide
from master.registry import REGISTRY, Builder, Loop, Param, Step, by_name, loop_trials
from master.registrycheck import validate
from master.stepspec import Summary
from master.workerset import parse_workers
from regression import bisect

REG = by_name(REGISTRY)
BISECT = REG["regression-bisect"]
LOOP = BISECT.loop
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_the_bisect_coordinator_drives_one_rerun_build_per_trial() -> None:
    assert LOOP is not None and dict(LOOP.trials) == {"any": "regression-bisect-rerun",
                                                      "llvm": "regression-bisect-llvm"}
    assert loop_trials(REGISTRY) == {"regression-bisect-rerun": "regression-bisect",
                                     "regression-bisect-llvm": "regression-bisect"}
    assert REG["regression-bisect-llvm"].tags == REG["llvm-tot"].tags == ("big",)  # the workers that build LLVM
    assert REG["regression-bisect-rerun"].tags == REG["regression-inliner-size"].tags == ()
    assert LOOP.most == len(bisect.ORDER) + 1
    for name in LOOP.builders:
        (step,) = REG[name].steps
        assert step.args == ("regress", "bisect", "{alert}", "--rerun", "{trial}")


@pytest.mark.parametrize("spec, ok", [
    ("control", True), ("policy", True), ("vocab", True), ("bench", True), ("llvm", True), (f"llvm={COMMIT}", True),
    ("", False), ("latest", False), ("llvm=", False), (f"llvm={COMMIT[:-1]}", False), (f"llvm={COMMIT.upper()}", False),
    (f"llvm={COMMIT}0", False), ("llvm=main", False), ("/bin/sh", False), ("--help", False), ("policy\n", False),
    ("policy vocab", False), ("llvm=../../x", False),
])
def test_a_trial_spec_is_one_of_the_fixed_set(spec: str, ok: bool) -> None:
    for name in LOOP.builders:
        trial = next(p for p in REG[name].params if p.name == "trial")
        assert trial.accepts(spec) is ok, (name, spec)
    try:
        bisect.check_spec(spec)
        assert ok
    except ValueError:
        assert not ok


def _registry(**changes) -> tuple[Builder, ...]:
    """The farm's registry with the coordinator's or its re-run builder's fields changed."""
    loop_changes = {k[5:]: v for k, v in changes.items() if k.startswith("loop_")}
    rerun_changes = {k[6:]: v for k, v in changes.items() if k.startswith("rerun_")}
    out = []
    for b in REGISTRY:
        if b is BISECT and loop_changes:
            b = dataclasses.replace(b, loop=dataclasses.replace(LOOP, **loop_changes))
        if b.name == "regression-bisect-rerun" and rerun_changes:
            b = dataclasses.replace(b, **rerun_changes)
        out.append(b)
    return tuple(out)


UNCHECKED = Param("trial", "control", regex=r".*")


@pytest.mark.parametrize("changes, message", [
    ({"loop_passes": ("alert", "trial", "llvm_bin")}, "each passed field must be one of its (constrained) parameters"),
    ({"loop_passes": ("alert",)}, "each passed field must be one of its (constrained) parameters"),
    ({"loop_trials": (("any", "regression-bisect-rerun"), ("llvm", "no-such-builder"))}, "is not declared"),
    ({"loop_trials": (("any", "regression-bisect-rerun"), ("llvm", "regression-inliner-size"))},
     "must be started by the loop only"),
    ({"loop_ask": "finish"}, "must be the builder's steps, each once"),
    ({"loop_most": 0}, "need 1 <= most"),
    ({"rerun_params": (Param("alert", "1", regex=r"[1-9][0-9]{0,8}"), Param("trial", "control"))},
     "give exactly one of choices or regex"),
    ({"rerun_params": (Param("alert", "1", regex=r"[1-9][0-9]{0,8}"), Param("trial", "policy", regex=r"policy"),
                       Param("bin", "x", regex="x"))}, "each passed field must be one of its"),
    ({"rerun_nightly": "0 3 * * *"}, "must be started by the loop only"),
])
def test_a_loop_that_would_pass_an_unchecked_property_is_refused(changes: dict, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate(_registry(**changes))


def test_a_pattern_that_accepts_anything_still_never_starts_an_option() -> None:
    # even a too-wide pattern, if someone declared it, could not pass an option through (Param.pattern)
    assert UNCHECKED.accepts("policy") and not UNCHECKED.accepts("--upload-pack=/bin/sh")


def _answer(trial: str | None = "control", runs_on: str | None = "any", alert=7, **more) -> dict:
    return {"alert": alert, "done": trial is None, "trial": trial, "runs_on": runs_on, "commits": 0, **more}


ACTIVE = {"regression-bisect-rerun", "regression-bisect-llvm"}


def test_an_answer_becomes_a_trial_build_with_checked_properties() -> None:
    d = decide(LOOP, _answer(), REG, ACTIVE, 0, None)
    assert (d.action, d.builder, dict(d.properties)) == ("trial", "regression-bisect-rerun",
                                                         {"alert": "7", "trial": "control"})
    assert d.said == "trial 1, at most 5 + ceil(log2 0 commits) = 5 trials: regression-bisect-rerun with alert=7 " \
                     "trial=control"
    d = decide(LOOP, _answer(f"llvm={COMMIT}", "llvm", commits=100), REG, ACTIVE, 6, {"alert": "7", "trial": "llvm"})
    assert (d.action, d.builder) == ("trial", "regression-bisect-llvm")
    assert "at most 5 + ceil(log2 100 commits) = 12 trials" in d.said
    assert decide(LOOP, _answer(None, None), REG, ACTIVE, 2, None).action == "finish"


@pytest.mark.parametrize("answer, made, last, why", [
    (_answer("/bin/sh"), 0, None, "trial='/bin/sh' is not a value regression-bisect-rerun accepts"),
    (_answer("--help"), 0, None, "trial='--help' is not a value"),
    (_answer("control", alert="latest"), 0, None, "alert='latest' is not a value"),
    (_answer("control", alert=True), 0, None, "alert=True is not a value"),
    (_answer("control", alert=["7"]), 0, None, "alert=['7'] is not a value"),
    (_answer("policy", "gpu"), 0, None, "names no known kind of trial (runs_on='gpu'"),
    (_answer("policy", "regression-bisect-rerun"), 0, None, "names no known kind of trial"),
    (_answer("policy"), 1, {"alert": "7", "trial": "policy"}, "asked for the same trial again"),
    (_answer("policy"), 5, {"alert": "7", "trial": "control"}, "5 trials made, at most 5 + ceil(log2 0 commits)"),
    (_answer(f"llvm={COMMIT}", "llvm", commits=2 ** 200), 45, None, "45 trials made, at most 5 + ceil(log2"),
])
def test_an_answer_that_asks_for_what_is_not_declared_fails_the_build(answer, made, last, why) -> None:
    d = decide(LOOP, answer, REG, ACTIVE, made, last)
    assert d.action == "fail" and why in d.said, d.said


def test_a_trial_no_worker_of_this_master_runs_fails_saying_so() -> None:
    d = decide(LOOP, _answer(f"llvm={COMMIT}", "llvm"), REG, {"regression-bisect-rerun"}, 0, None)
    assert d.action == "fail" and d.said == "no worker of this master runs regression-bisect-llvm (a trial that runs " \
                                            "on llvm workers)"


def test_the_bound_believes_no_answer_beyond_2_to_the_40_commits() -> None:
    assert bound(LOOP, {"commits": 2 ** 200})[0] == 5 + 40
    assert bound(LOOP, {"commits": "many"})[0] == bound(LOOP, {"commits": -3})[0] == 5
    assert bound(LOOP, {"commits": 8})[0] == bisect.most_reruns(8) == 8


def test_the_coordinator_loops_where_a_worker_can_wait_and_runs_alone_where_none_can() -> None:
    looping = make_factory(BISECT, REGISTRY, can_wait=True).steps
    assert [(s.step_class, s.kwargs["name"]) for s in looping] == [(AskStep, "next")]
    alone = make_factory(BISECT, REGISTRY, can_wait=False).steps
    assert [s.kwargs["name"] for s in alone] == ["bisect"]
    assert parse_workers("local:big+x86_64:2")[0].max_builds == 2


def test_a_loop_whose_ask_step_reads_no_answer_is_refused() -> None:
    quiet = dataclasses.replace(BISECT, steps=tuple(
        dataclasses.replace(s, capture=(), summary=()) if s.name == "next" else s for s in BISECT.steps))
    with pytest.raises(InputError, match="must read its verb's answer"):
        validate(tuple(quiet if b is BISECT else b for b in REGISTRY))
    assert Step("next", ("regress",), summary=(Summary("{sentence}"),)).answers
    assert isinstance(LOOP, Loop)


def test_naming_the_alert_to_bisect_is_no_what_if() -> None:
    """A bisect forced for alert 7 is as real as one for `latest`: it mails its follow-up (schedulers' what-if marks
    only parameters that change what a build does)."""
    from master.buildmaster import build_config
    from master.schedulers import TextForceScheduler
    from tests.master.test_registry import _settings

    forces = {sc.builderNames[0]: sc for sc in build_config(_settings())["schedulers"]
              if isinstance(sc, TextForceScheduler)}
    assert forces["regression-bisect"].defaults == ()
    assert dict(forces["regression-inliner-size"].defaults) == {"bench": "gperf", "policy": "store:latest"}
