"""The registry is valid data, and what Buildbot gets is derived from it and nothing else."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from buildbot.config.errors import ConfigErrors
from buildbot.plugins import schedulers, steps

from farm.config import load_settings
from farm.errors import EXIT_REGRESSION, InputError
from master.buildmaster import build_config
from master.factories import FARM_COMMAND, MAILED_BY_FARM, FarmStep, _extract, make_factory
from master.registry import (
    DEBIAN_PACKAGES,
    GIT_REV,
    REGISTRY,
    Builder,
    IfSet,
    Param,
    Step,
    by_name,
    downstream,
    loop_trials,
)
from master.registrycheck import parse_cron, validate
from master.reporters import FarmStatusGenerator, WatchdogGenerator, notify_groups
from master.schedulers import PatternParameter
from master.stepspec import Link, StepOutput, Summary, check_output_spec, render_args
from master.verbcheck import check_registry, step_argvs
from master.watchdog import WATCHDOG, Watchdog
from master.workerset import parse_workers, workers_for
from policyhost import advisors
from regression.benchmarks import BENCHMARKS
from workers.debrecipes import RECIPES

REQUIRED = ("llvm-tot", "triplets-ir", "triplets-mir", "vocab-retrain-ir", "vocab-retrain-mir",
            "regression-inliner-size", "regression-regalloc-speed")


def test_registry_declares_the_farm_and_is_valid():
    validate(REGISTRY)
    names = [b.name for b in REGISTRY]
    assert len(names) == len(set(names))
    assert set(REQUIRED) <= set(names)
    reg = by_name(REGISTRY)
    assert reg["llvm-tot"].tags == ("big",)
    assert "llvm-tot" in reg["triplets-ir"].after and reg["triplets-ir"].nightly
    assert reg["vocab-retrain-ir"].after == ("triplets-ir",) and not reg["vocab-retrain-ir"].nightly
    assert {b.name for b in REGISTRY if "nightly" in b.schedule_kinds} >= {
        "llvm-tot", "triplets-ir", "triplets-mir", "regression-inliner-size", "regression-regalloc-speed"}


def test_every_step_is_a_command_line_the_real_cli_accepts():
    assert check_registry() == []


def test_dataset_id_flows_from_publish_to_retrain():
    reg = by_name(REGISTRY)
    argvs = dict(step_argvs(reg["vocab-retrain-ir"]))
    assert argvs["retrain"][:4] == ["vocab", "retrain", "--kind", "ir"]
    with_id = [a for name, a in step_argvs(reg["vocab-retrain-ir"]) if "--dataset" in a]
    assert with_id and with_id[0][with_id[0].index("--dataset") + 1] == "0123456789abcdef"
    assert reg["triplets-ir"].exports == {"dataset": "{dataset}"}
    publish = [s for s in reg["triplets-ir"].steps if s.args[:2] == ("dataset", "publish")]
    assert publish and dict(publish[0].capture).keys() == {"dataset", "got_revision"}


def _answer(**fields) -> str:
    """A verb's stdout under --json (farm/answer.py): one object on one line."""
    return json.dumps({**fields, "exit_code": 0}) + "\n"


def test_captures_read_the_fields_the_verbs_answer():
    reg = by_name(REGISTRY)
    publish = next(s for s in reg["triplets-ir"].steps if s.capture and s.name == "publish")
    out = _answer(dataset="ir-3f2a9c0d11b2e4f5", kind="ir", url="file:///x/store/datasets/ir/ir-3f2a9c0d11b2e4f5/")
    assert _extract(publish.capture)(0, out, "") == {"dataset": "ir-3f2a9c0d11b2e4f5"}
    assert _extract(publish.capture)(1, out, "") == {}
    retrain = reg["vocab-retrain-ir"].steps[0]
    assert _extract(retrain.capture)(0, _answer(kind="ir", version="20261122T0503-ab12", created=True), "") == {
        "vocab_version": "20261122T0503-ab12"}
    llvm = reg["llvm-tot"].steps[0]
    got = _extract(llvm.capture)(0, "[1/2] x\n" + _answer(rev="main", bin_dir="/w/llvm-tot/build/llvm-build/bin",
                                                            build_dir="/w/llvm-tot/build/llvm-build"), "")
    assert got == {"llvm_bin": "/w/llvm-tot/build/llvm-build/bin", "llvm_build": "/w/llvm-tot/build/llvm-build"}


def test_render_args_substitutes_and_drops_unset_groups():
    args = ("vocab", "retrain", IfSet("dataset", ("--dataset", "{dataset}")), "--tag={kind}")
    assert render_args(args, {"kind": "ir"}.get) == ["vocab", "retrain", "--tag=ir"]
    assert render_args(args, {"kind": "ir", "dataset": "abc"}.get) == [
        "vocab", "retrain", "--dataset", "abc", "--tag=ir"]
    with pytest.raises(InputError, match="'kind' is not set"):
        render_args(args, {}.get)


@pytest.mark.parametrize("props", [
    {"corpus_source": "--help", "corpus_input": "zlib"},          # would be an option of `corpus`
    {"corpus_source": "debian", "corpus_input": "-o/etc"},
    {"corpus_source": "build", "corpus_input": "zlib", "llvm_bin": "-x"},  # as a trigger could pass it
])
def test_render_args_never_turns_a_property_into_an_option(props):
    corpus = by_name(REGISTRY)["triplets-ir"].steps[0]
    with pytest.raises(InputError, match="may not start with '-'"):
        render_args(corpus.args, props.get)


def test_the_mir_dataset_reads_every_x86_level_and_the_ir_dataset_the_code_as_compiled():
    """Most MIR entities are instructions of the wider x86 levels (workers/march.py); IR is target-independent."""
    reg = by_name(REGISTRY)
    mir = next(s for s in reg["triplets-mir"].steps if s.name == "triplets-mir")
    ir = next(s for s in reg["triplets-ir"].steps if s.name == "triplets-ir")
    nightly = render_args(mir.args, reg["triplets-mir"].defaults().get)
    assert nightly[nightly.index("--march") + 1] == "x86-64,x86-64-v2,x86-64-v3,x86-64-v4"
    assert "--march" not in ir.args


def test_the_demo_forces_the_mir_dataset_at_one_x86_level_and_nothing_else_chooses_one():
    """`make demo` reads MIR at one level (`-p march=x86-64`, deploy/demo.sh); the nightly's default stays all four,
    and the parameter takes the levels workers/march.py knows and nothing else (no option, no list of its own)."""
    b = by_name(REGISTRY)["triplets-mir"]
    mir = next(s for s in b.steps if s.name == "triplets-mir")
    march = next(p for p in b.parameters if p.name == "march")
    assert march.accepts("x86-64") and march.accepts("x86-64-v3") and march.accepts(march.default)
    assert not any(march.accepts(v) for v in ("x86-64,x86-64-v2", "--help", "native", "x86-64 -o/etc", ""))
    demo = render_args(mir.args, {**b.defaults(), "march": "x86-64"}.get)
    assert demo[demo.index("--march") + 1] == "x86-64"
    assert "march" not in {p.name for p in by_name(REGISTRY)["triplets-ir"].parameters}


def test_render_args_allows_a_dash_inside_an_argument():
    assert render_args(("--opt={level}", "{x}"), {"level": "-Oz", "x": "a-b"}.get) == ["--opt=-Oz", "a-b"]


def _b(name: str, **kw) -> Builder:
    return Builder(name=name, description="t", steps=kw.pop("steps", (Step("s", ("toolchain",)),)), **kw)


@pytest.mark.parametrize("registry, message", [
    ((_b("a"), _b("a")), "declared twice"),
    ((_b("a", after=("zz",)),), "unknown builder 'zz'"),
    ((_b("a", after=("b",)), _b("b", after=("a",))), "cycle"),
    ((_b("a", steps=(Step("s", ("corpus", "{nope}")),)),), "undeclared properties"),
    ((_b("a", notify=("sometimes",)),), "unknown notify mode"),
    ((_b("a", nightly="0 25 * * *"),), "hour"),
    ((_b("a", steps=(Step("s", ("toolchain",), capture=(("x", "no field"),)),)),), "are lower-case names"),
    ((_b("Bad Name"),), "builder name"),
    ((_b("a", exports={"x": "{y}"}),), "exports undeclared"),
    ((_b("a", params=(Param("p", "x"),)),), "exactly one of choices or regex"),
    ((_b("a", params=(Param("p", "x", choices=("x",), regex="x"),)),), "exactly one of choices or regex"),
    ((_b("a", params=(Param("p", "y", choices=("x",)),)),), "default 'y' is not an accepted value"),
    ((_b("a", params=(Param("p", "x", choices=("x", "--help")),)),), "not start with '-'"),
    ((_b("a", params=(Param("p", "x", choices=("x", "x")),)),), "choices must be unique"),
    ((_b("a", params=(Param("p", "x", regex="("),)),), "bad regex"),
    ((_b("a", params=(Param("p", "-x", regex=".*"),)),), "default '-x' is not an accepted value"),
    ((_b("a", params=(Param("owner", "x", choices=("x",)),)),), "reserves"),
    ((_b("a", params=(Param("p", "x", choices=("x",)), Param("p", "x", choices=("x",)))),), "unique"),
])
def test_validate_rejects_inconsistent_registries(registry, message):
    with pytest.raises(InputError, match=message):
        validate(registry)


def test_cron_day_of_week_is_converted_to_buildbot_numbering():
    assert parse_cron("15 3 * * 0") == {"minute": 15, "hour": 3, "dayOfMonth": "*", "month": "*", "dayOfWeek": 6}
    assert parse_cron("0 1 * * 1")["dayOfWeek"] == 0
    with pytest.raises(InputError):
        parse_cron("0 1 * *")


def test_worker_specs():
    ws = parse_workers("big1:big+x86_64:2, small:x86_64,any")
    assert [(w.name, sorted(w.tags), w.max_builds) for w in ws] == [
        ("big1", ["big", "x86_64"], 2), ("small", ["x86_64"], 1), ("any", [], 1)]
    assert workers_for(("big",), ws) == ["big1"]
    assert workers_for((), ws) == ["big1", "small", "any"]
    for bad in ("a,a", "a:b:0", "a:b:c:d", ""):
        with pytest.raises(InputError):
            parse_workers(bad)


def _settings(**buildbot):
    s = load_settings()
    bb = dataclasses.replace(s.buildbot, worker_password="pw", admin_password="admin-pw", **buildbot)
    return dataclasses.replace(s, buildbot=bb)


def test_master_config_is_derived_from_the_registry():
    s = _settings(workers="w1:big+x86_64,w2:x86_64")
    s = dataclasses.replace(s, smtp=dataclasses.replace(s.smtp, recipients="ops@example.org"))
    c = build_config(s)
    # each fan-out builder is followed by its shard builder (master/fanout.py)
    assert [b.name for b in c["builders"]] == [n for b in REGISTRY
                                               for n in (b.name, *([f"{b.name}-shard"] if b.fan_out else []))]
    assert {b.name: b.workernames for b in c["builders"]}["llvm-tot"] == ["w1"]
    scheds = {sc.name: sc for sc in c["schedulers"]}
    trials = loop_trials(REGISTRY)
    for b in REGISTRY:
        if b.name in trials:  # started by its loop's build only (master/loop.py): a Triggerable, no force form
            assert f"force-{b.name}" not in scheds and scheds[f"trial-{b.name}"].builderNames == [b.name]
            continue
        force = scheds[f"force-{b.name}"]
        assert isinstance(force, schedulers.ForceScheduler) and force.builderNames == [b.name]
        nightly = scheds.get(f"nightly-{b.name}")
        if b.nightly:
            cron = parse_cron(b.nightly)
            assert isinstance(nightly, schedulers.Nightly)
            kw = nightly._config_kwargs
            assert (kw["minute"], kw["hour"], kw["dayOfWeek"]) == (cron["minute"], cron["hour"], cron["dayOfWeek"])
        else:
            assert nightly is None
        after = downstream(REGISTRY, b.name)
        trig = scheds.get(f"after-{b.name}")
        assert (sorted(trig.builderNames) if trig else []) == sorted(after)
        if after:
            last = make_factory(b, REGISTRY).steps[-1]
            assert last.step_class is steps.Trigger
            assert last.kwargs["schedulerNames"] == [f"after-{b.name}"]
    assert isinstance(scheds["change-farm-selftest"], schedulers.SingleBranchScheduler)
    assert c["change_source"], "an on-change builder needs the PB change source"
    assert c["protocols"]["pb"]["port"].endswith("interface=127.0.0.1")
    mail, watchdog = c["services"]
    assert isinstance(watchdog, Watchdog) and watchdog._config_kwargs == {"deadline": 300}
    groups = notify_groups(REGISTRY)
    *gens, alarm = mail._config_kwargs["generators"]
    assert sorted(sorted(g.builders) for g in gens) == sorted(sorted(v) for v in groups.values())
    assert sorted(tuple(sorted(g.mode)) for g in gens) == sorted(groups)
    assert isinstance(alarm, WatchdogGenerator) and set(alarm.builders) >= {b.name for b in REGISTRY}
    assert mail._config_kwargs["extraRecipients"] == ["ops@example.org"]


def test_builders_without_a_matching_worker_are_left_out():
    c = build_config(_settings(workers="small:x86_64"))
    names = {b.name for b in c["builders"]}
    assert "llvm-tot" not in names and "triplets-ir" in names
    scheds = {sc.name for sc in c["schedulers"]}
    assert "after-llvm-tot" not in scheds and "nightly-llvm-tot" not in scheds
    assert "nightly-triplets-ir" in scheds


def test_no_mail_notifier_without_recipients():
    assert [type(s) for s in build_config(_settings())["services"]] == [Watchdog]


def test_steps_run_the_farm_cli_without_logging_the_environment():
    b = by_name(REGISTRY)["triplets-ir"]
    f = make_factory(b, REGISTRY)
    shell = [s for s in f.steps if not issubclass(s.step_class, steps.Trigger)]
    derived = {s.name for s in b.fan_out.derived()}
    assert [s.kwargs["name"] for s in shell if s.kwargs["name"] not in derived] == [s.name for s in b.steps]
    assert all(s.kwargs["logEnviron"] is False for s in shell)
    # every step stops the build when it fails, except the clean-up of a fan-out's store folder, which always runs
    assert [s.kwargs["name"] for s in shell if not s.kwargs["haltOnFailure"]] == ["drop-shards"]
    assert FARM_COMMAND[0] == "mlgo-farm"


def test_force_forms_offer_only_declared_choices_and_checked_text():
    c = build_config(_settings())
    forms = {sc.builderNames[0]: {p.name: p for p in sc._config_kwargs["properties"]}
             for sc in c["schedulers"] if isinstance(sc, schedulers.ForceScheduler)}
    for b in REGISTRY:
        if b.name in loop_trials(REGISTRY):
            assert b.name not in forms  # its properties come from its loop's build, checked there
            continue
        assert set(forms[b.name]) == {p.name for p in b.parameters}
        for p in b.parameters:
            field = forms[b.name][p.name]
            assert field.default == p.default
            if p.choices:
                assert field.type == "list" and field.strict and field.choices == list(p.choices)
            else:
                assert isinstance(field, PatternParameter) and field.regex.pattern == p.pattern
                assert field.getSpec()["regex"] == p.pattern  # shown over REST, where clients check it
    assert all("llvm_bin" not in f for f in forms.values())
    ir = forms["triplets-ir"]
    assert ir["corpus_source"].choices == ["debian", "llvm"]  # `build` (a directory) only by trigger from llvm-tot
    assert tuple(ir["corpus_input"].choices) == (*DEBIAN_PACKAGES, "llvm-project")
    assert tuple(RECIPES) == DEBIAN_PACKAGES
    assert (ir["corpus_source"].default, ir["corpus_input"].default) == ("debian", "llvm-toolchain-19")  # LLVM's code
    assert tuple(forms["regression-inliner-size"]["bench"].choices) == tuple(BENCHMARKS)
    # the nightly judges the published policy; the built-in ones stay forceable
    assert tuple(forms["regression-inliner-size"]["policy"].choices) == ("store:latest",
                                                                          *advisors.get("inline").builtin_policies)
    assert tuple(forms["regression-regalloc-speed"]["policy"].choices) == ("store:latest", "spill")


@pytest.mark.parametrize("value, ok", [
    ("main", True), ("release/19.x", True), ("llvmorg-19.1.7", True), ("0123abcd", True),
    ("-x", False), ("--upload-pack=/tmp/x", False), ("main..evil", False), ("main\n", False), ("", False),
    ("a b", False), ("x" * 129, False),
])
def test_git_revisions_are_checked_text(value, ok):
    rev = Param("rev", "main", regex=GIT_REV)
    assert rev.accepts(value) is ok
    assert by_name(REGISTRY)["llvm-tot"].params[0].accepts(value) is ok


def test_dataset_parameter_takes_only_store_ids_of_its_kind():
    (p,) = by_name(REGISTRY)["vocab-retrain-mir"].params
    assert [p.accepts(v) for v in ("", "latest", "mir-0123456789abcdef")] == [True] * 3
    assert not any(p.accepts(v) for v in ("ir-0123456789abcdef", "/tmp/dataset", "../x", "--help", "latest\n"))


# --- what a finished step says and links --------------------------------------------------------------

def _said(builder: str, step: str, out: str) -> tuple[str | None, list[tuple[str, str]]]:
    spec = next(s for s in by_name(REGISTRY)[builder].steps if s.name == step)
    got = StepOutput(spec).feed(out)
    return got.summary(), got.links()


_VOCAB = dict(kind="ir", version="20261123-llvm22.1.8-ir-d75-46d617adc845", created=True, state="latest", awaiting=[])
_POLICY = dict(advisor="inline", version="20261123-llvm22.1.8-inline-ir2vec-0a1b2c3d4e5f", created=True,
               state="latest", size_check=None)


@pytest.mark.parametrize("builder, step, out, summary, links", [
    ("triplets-ir", "corpus",
     "  a line a child process printed\n" + _answer(corpus="corpus", modules=287, skipped=1, digest="0123456789abcdef",
                                                     revision="1:1.2.13", skipped_modules=[{"module": "contrib/x.c"}]),
     "287 modules, 1 skipped", []),
    ("triplets-ir", "triplets-ir",
     _answer(dataset="ir-0123456789abcdef", kind="ir", modules_used=284, modules=287, raw=301234, unique=1183,
             skipped=3, partial_modules=[{"module": "d.c"}]), "1,183 unique triplets (3 skipped)", []),
    ("triplets-ir", "triplets-ir", _answer(shard="2/4", output="dataset", modules=71, raw=75012, max_relation=5),
     "shard 2/4: 71 modules, 75,012 triplets", []),
    ("triplets-ir", "publish",
     _answer(dataset="ir-0123456789abcdef", kind="ir", url="file:///v/store/datasets/ir/ir-0123456789abcdef/"),
     "published ir-0123456789abcdef", [("dataset", "datasets/ir/ir-0123456789abcdef/")]),
    ("triplets-mir", "publish",
     _answer(dataset="mir-0123456789abcdef", kind="mir", url="s3://farm/pre/datasets/mir/mir-0123456789abcdef/"),
     "published mir-0123456789abcdef", [("dataset", "datasets/mir/mir-0123456789abcdef/")]),
    ("policy-retrain-inline", "retrain", _answer(**_POLICY),
     "published 20261123-llvm22.1.8-inline-ir2vec-0a1b2c3d4e5f",
     [("policy", "policies/inline/20261123-llvm22.1.8-inline-ir2vec-0a1b2c3d4e5f/"), ("policies", "policies/")]),
    ("vocab-retrain-ir", "retrain", _answer(**_VOCAB),
     "published 20261123-llvm22.1.8-ir-d75-46d617adc845",
     [("vocabulary", "vocab/ir/20261123-llvm22.1.8-ir-d75-46d617adc845/")]),
    ("vocab-retrain-ir", "retrain", _answer(**{**_VOCAB, "state": "candidate", "awaiting": ["policy_size"]}),
     "published 20261123-llvm22.1.8-ir-d75-46d617adc845, awaiting policy_size",
     [("vocabulary", "vocab/ir/20261123-llvm22.1.8-ir-d75-46d617adc845/")]),
    ("policy-retrain-inline", "retrain",
     _answer(**{**_POLICY, "created": False, "state": "candidate", "latest": "P", "size_check": {
         "ok": False, "detail": "zlib .text +0.40% (76,345 vs 76,057 bytes) against policy P"}}),
     "already published 20261123-llvm22.1.8-inline-ir2vec-0a1b2c3d4e5f, size check FAILED",
     [("policy", "policies/inline/20261123-llvm22.1.8-inline-ir2vec-0a1b2c3d4e5f/"), ("policies", "policies/")]),
    ("vocab-retrain-mir", "retrain",
     _answer(**{**_VOCAB, "kind": "mir", "version": "20261123-llvm22.1.8-mir-d100-0a1b", "created": False}),
     "already published 20261123-llvm22.1.8-mir-d100-0a1b",
     [("vocabulary", "vocab/mir/20261123-llvm22.1.8-mir-d100-0a1b/")]),
    ("regression-inliner-size", "regress",
     _answer(run_id="20261123T050001Z-3c4d", builder="regression-inliner-size", verdict="regression",
             headline="zlib text +1.39% REGRESSION", report="/w/report"),
     "zlib text +1.39% REGRESSION",
     [("report", "store/regression/regression-inliner-size/20261123T050001Z-3c4d/index.html"),
      ("history", "regression/regression-inliner-size/")]),
    # a link whose field the answer lacks is left out
    ("regression-regalloc-speed", "regress", _answer(headline="zlib text -0.20% ok"), "zlib text -0.20% ok", []),
    ("llvm-tot", "llvm-build",
     "[1/2] x\n" + _answer(rev="main", bin_dir="/w/llvm-build/bin", build_dir="/w/llvm-build"),
     "LLVM at main: /w/llvm-build/bin", []),
    ("triplets-ir", "corpus", "nothing the pattern knows\n", None, []),
    # a failure's answer (farm/answer.py) fills nothing: the step keeps its name
    ("triplets-ir", "publish", _answer(error="store unreachable", error_kind="store", kind="ir", dataset="x"),
     None, []),
])
def test_steps_summarise_and_link_what_their_verbs_print(builder, step, out, summary, links):
    assert _said(builder, step, out) == (summary, links)


def test_regression_steps_pass_the_build_url_and_mail_regressions_themselves():
    for name in ("regression-inliner-size", "regression-inliner-control", "regression-regalloc-speed"):
        (step,) = by_name(REGISTRY)[name].steps
        assert render_args(step.args, {**by_name(REGISTRY)[name].defaults(), "build_url": "http://m/#/b/1"}.get
                           )[-2:] == ["--build-url", "http://m/#/b/1"]
        assert "--build-url" not in render_args(step.args, by_name(REGISTRY)[name].defaults().get)
        assert step.mails_itself == (EXIT_REGRESSION,)
    assert all(not s.mails_itself for b in REGISTRY if not b.name.startswith("regression-") for s in b.steps)


@pytest.mark.parametrize("step, message", [
    (Step("s", ("toolchain",), summary=(Summary("{M} things"),)), r"names \['M'\]"),
    (Step("s", ("toolchain",), summary=(Summary("{n"),)), "expected '}'"),
    (Step("s", ("toolchain",), summary=(Summary("no field"),)), "names no field"),
    (Step("s", ("toolchain",), links=(Link("x", "vocab/{Kind}/"),)), r"names \['Kind'\]"),
    (Step("s", ("toolchain",), links=(Link("x", "/etc/{k}"),)), "a path under the dashboard"),
    (Step("s", ("toolchain",), links=(Link("x", "https://elsewhere/{k}"),)), "under the dashboard"),
])
def test_summary_and_link_declarations_are_checked_at_configuration_time(step, message):
    assert re.search(message, check_output_spec(step))
    with pytest.raises(InputError, match=message):
        validate((_b("a", steps=(step,)),))
    with pytest.raises(ConfigErrors, match=message):  # as Buildbot's own step classes refuse bad arguments
        FarmStep(step, command=["mlgo-farm", "toolchain"])


def test_buildbot_mail_skips_builds_the_farm_mailed_about_and_links_use_the_web_url():
    s = _settings(web_url="https://farm.example/ci")
    s = dataclasses.replace(s, smtp=dataclasses.replace(s.smtp, recipients="ops@example.org"))
    c = build_config(s)
    assert c["buildbotURL"] == "https://farm.example/ci/"
    mail, _ = c["services"]
    *gens, alarm = mail._config_kwargs["generators"]
    assert all(isinstance(g, FarmStatusGenerator) for g in gens)
    (gen,) = [g for g in gens if "regression-inliner-size" in g.builders]
    build = {"builder": {"name": "regression-inliner-size", "tags": []}, "results": 2, "prev_build": {"results": 0},
             "properties": {"scheduler": ["nightly-regression-inliner-size", "Scheduler"]}}
    assert gen.is_message_needed_by_props(build) and gen.is_message_needed_by_results(build)  # a crash: mailed
    alerted = {**build, "properties": {**build["properties"], MAILED_BY_FARM: [EXIT_REGRESSION, "FarmStep"]}}
    assert not gen.is_message_needed_by_props(alerted)  # a regression: the farm's alert only
    # the watchdog's mail goes out for the builds it ended (a RETRY too), and only for those
    retried = {**build, "results": 5, "properties": {**build["properties"], WATCHDOG: ["no step", "watchdog"]}}
    assert alarm.is_message_needed_by_props(retried) and alarm.is_message_needed_by_results(retried)
    assert not alarm.is_message_needed_by_props(build)
    failed = {**retried, "results": 2}  # failed by the watchdog after its retries: its mail only, not a second
    assert alarm.is_message_needed_by_props(failed) and not gen.is_message_needed_by_props(failed)
