"""A fan-out is registry data that validate checks; the Buildbot objects are derived from it (no master runs here)."""

from __future__ import annotations

import dataclasses

import pytest
from buildbot.plugins import schedulers

from farm.config import load_settings
from farm.errors import InputError
from master import fanout
from master.buildmaster import build_config
from master.collapse import same_inputs
from master.factories import make_factory
from master.registry import REGISTRY, SHARD, SHARD_RUN, Builder, FanOut, IfSet, Param, Step, by_name
from master.registrycheck import validate
from master.verbcheck import step_argvs
from master.workerset import parse_workers

_S = IfSet(SHARD, ("--shard", "{shard}"))


def _builder(**changes) -> Builder:
    b = Builder(
        name="fan", description="d",
        steps=(Step("corpus", ("corpus", "sources", "src", "-o", "corpus", _S)),
               Step("triplets", ("triplets", "ir", "corpus", "-o", "dataset", _S)),
               Step("publish", ("dataset", "publish", "dataset"))),
        fan_out=FanOut(steps=("corpus", "triplets")),
    )
    return dataclasses.replace(b, **changes)


def test_the_triplet_builders_fan_out_with_n_as_a_parameter() -> None:
    validate(REGISTRY)
    for kind in ("ir", "mir"):
        b = by_name(REGISTRY)[f"triplets-{kind}"]
        assert b.fan_out.steps == ("corpus", f"triplets-{kind}")
        (shards,) = [p for p in b.parameters if p.name == "shards"]
        assert shards.default == "1" and shards.choices == tuple(str(n) for n in range(1, 9))
        assert b.defaults()["shards"] == "1"


@pytest.mark.parametrize("changes, message", [
    (dict(fan_out=FanOut(steps=("triplets",))), "must name the builder's first steps, in order"),
    (dict(fan_out=FanOut(steps=("corpus",))), "step 'triplets' uses {shard} but runs once"),
    (dict(fan_out=FanOut(steps=("corpus", "triplets", "publish"))), "step 'publish' must pass {shard} on"),
    (dict(fan_out=FanOut(steps=("corpus", "triplets"), default=9)), r"need 1 <= default \(9\) <= most \(8\)"),
    (dict(fan_out=FanOut(steps=("corpus", "triplets"), most=65)), "<= 64"),
    (dict(fan_out=FanOut(steps=("corpus", "triplets"), output="../x")), "must be a plain directory name"),
    (dict(fan_out=None), r"uses undeclared properties \['shard'\]"),
    (dict(params=(Param("shards", "1", choices=("1",)),)), "parameter names must be unique"),
    (dict(params=(Param("shard_run", "x", choices=("x",)),)), "not a name Buildbot reserves"),
])
def test_validate_refuses_a_fan_out_that_does_not_fit(changes, message) -> None:
    with pytest.raises(InputError, match=message):
        validate([_builder(**changes)])


def test_validate_refuses_captures_and_names_of_the_fan_outs_own() -> None:
    b = _builder()
    captured = dataclasses.replace(b.steps[1], capture=(("dataset", r"(\S+)"),))
    with pytest.raises(InputError, match="what it captures would not reach this build"):
        validate([dataclasses.replace(b, steps=(b.steps[0], captured, b.steps[2]))])
    renamed = dataclasses.replace(b.steps[2], name="merge")
    with pytest.raises(InputError, match=r"step name\(s\) \['merge'\] are the fan-out's own"):
        validate([dataclasses.replace(b, steps=(*b.steps[:2], renamed))])
    with pytest.raises(InputError, match="shard builder fan-shard clashes"):
        validate([b, Builder(name="fan-shard", description="d", steps=(Step("t", ("toolchain",)),))])


def test_steps_parse_unsplit_and_as_a_shard_and_the_derived_ones_too() -> None:
    argvs = {(name, tuple(a)) for name, a in step_argvs(by_name(REGISTRY)["triplets-ir"])}
    assert ("triplets-ir", ("triplets", "ir", "corpus", "-o", "dataset")) in argvs
    assert ("triplets-ir", ("triplets", "ir", "corpus", "-o", "dataset", "--shard", "1/2")) in argvs
    assert any(n == "corpus" and a[-2:] == ("--shard", "1/2") and a[1] == "debian" for n, a in argvs)
    run = "triplets-ir-b1-0123abcd"
    assert ("put-shard", ("dataset", "put-shard", "dataset", "--run", run)) in argvs
    assert ("merge", ("dataset", "merge", "--run", run, "--shards", "1", "-o", "dataset")) in argvs
    assert ("drop-shards", ("dataset", "drop-shards", "--run", run)) in argvs


def _config(workers: str) -> dict:
    s = load_settings()
    bb = dataclasses.replace(s.buildbot, worker_password="pw", admin_password="admin-pw", workers=workers)
    return build_config(dataclasses.replace(s, buildbot=bb))


def test_buildbot_objects_derived_from_a_fan_out() -> None:
    c = _config("w1:x86_64:2,w2:x86_64")
    builders = {b.name: b for b in c["builders"]}
    shard = builders["triplets-ir-shard"]
    assert shard.workernames == builders["triplets-ir"].workernames == ["w1", "w2"]
    assert [s.kwargs["name"] for s in shard.factory.steps] == ["corpus", "triplets-ir", "put-shard", "clean"]
    assert shard.factory.steps[-1].kwargs["alwaysRun"]
    parent = [s.kwargs["name"] for s in builders["triplets-ir"].factory.steps]
    assert parent == ["corpus", "triplets-ir", "fan-out", "merge", "publish", "drop-shards", "trigger"]
    scheds = {sc.name: sc for sc in c["schedulers"]}
    assert isinstance(scheds["shards-triplets-ir"], schedulers.Triggerable)
    assert scheds["shards-triplets-ir"].builderNames == ["triplets-ir-shard"]
    assert not any(isinstance(sc, schedulers.ForceScheduler) and sc.builderNames == ["triplets-ir-shard"]
                   for sc in c["schedulers"]), "a shard build starts only from its parent's trigger"
    lock = fanout.waiting_lock(parse_workers("w1:x86_64:2,w2:x86_64"))
    assert lock.maxCountForWorker == {"w1": 1, "w2": 0}, "every worker keeps one slot for shards"


class _Props:
    def __init__(self, **values) -> None:
        self.values = values

    def getProperty(self, name, default=None):
        return self.values.get(name, default)


def test_only_a_waiting_build_takes_the_lock_and_one_slot_workers_cannot_wait() -> None:
    b = by_name(REGISTRY)["triplets-ir"]
    lock = fanout.waiting_lock(parse_workers("w1::2"))
    render = fanout.parent_locks(b, lock, waits=True).fn
    assert render(_Props()) == [] and render(_Props(shards="1")) == []
    (access,) = render(_Props(shards="2"))
    assert access.lockid is lock and access.mode == "counting"
    assert fanout.parent_locks(b, lock, waits=False).fn(_Props(shards="2")) == []
    assert fanout.can_wait(b, parse_workers("w1::2,w2")) and not fanout.can_wait(b, parse_workers("w1,w2"))
    many = dataclasses.replace(b, fan_out=dataclasses.replace(b.fan_out, default=2))
    with pytest.raises(InputError, match=r"worker\(s\) w2 have one build slot"):
        fanout.check_capacity(many, parse_workers("w1::2,w2"))


def test_each_shard_request_has_its_own_shard_so_none_is_collapsed() -> None:
    b = by_name(REGISTRY)["triplets-ir"]
    factory = make_factory(b, REGISTRY)
    (spec,) = [s for s in factory.steps if s.kwargs.get("name") == "fan-out"]
    trigger = spec.buildStep()
    props = _Props(shards="3", corpus_source="debian", corpus_input="zlib", buildername="triplets-ir")
    trigger.getProperty = props.getProperty
    trigger.count, trigger.run_id = 3, "triplets-ir-b5-00ff00ff"
    entries = trigger.getSchedulersAndProperties()
    assert [e["sched_name"] for e in entries] == ["shards-triplets-ir"] * 3
    sets = [e["props_to_set"] for e in entries]
    assert [p[SHARD] for p in sets] == ["1/3", "2/3", "3/3"]
    assert all(p[SHARD_RUN] == "triplets-ir-b5-00ff00ff" and p["shards"] == "3" and p["corpus_input"] == "zlib"
               and "buildername" not in p for p in sets)
    as_buildsets = [{k: (v, "Trigger") for k, v in p.items()} for p in sets]
    assert not any(same_inputs(a, b) for i, a in enumerate(as_buildsets) for b in as_buildsets[i + 1:])
