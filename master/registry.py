"""The farm's builders, declared as data: the one source for factories, schedulers and notifiers.

A builder is a list of `mlgo-farm` CLI verbs (steps) run in its build directory on a worker
that carries all of its tags, plus when it runs (`nightly` cron, `after` other builders,
`on_change` of a project, and always by force) and whom it tells (`notify` modes of Buildbot's
mail notifier). Step arguments may name build properties as `{name}`; a property is a
parameter of the builder (with a default, shown in the force form) or captured by an earlier
step of an upstream builder and passed along when that builder triggers this one.

Whoever may force a build chooses only among what is declared here: every parameter is a fixed
set of choices or text that one pattern must match (and that can never start with `-`). Paths
and executables are never parameters; a toolchain or a corpus directory reaches a builder only
from the upstream build that produced it on the same worker, by trigger.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from farm.errors import InputError
from farm.kinds import KINDS
from master.stepspec import Arg as Arg
from master.stepspec import IfSet, Param, Step, placeholders
from master.stepspec import render_args as render_args
from policyhost import advisors
from regression.benchmarks import BENCHMARKS
from workers.debsrc import RECIPES

NOTIFY_MODES = ("change", "failing", "passing", "problem", "warnings", "exception", "cancelled")
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_PROP = re.compile(r"^[a-z_][a-z0-9_]*$")
#: A fan-out's properties: each shard build's `I/N` and the run's id (set by its trigger), and N (a parameter).
SHARD, SHARD_RUN, SHARDS = "shard", "shard_run", "shards"
#: Names Buildbot or the farm sets itself: reserved by the force form, or bookkeeping set by trigger.
RESERVED_PROPS = frozenset({"owner", "builderNames", "builderid", "username", "reason", "priority", "scheduler",
                            "upstream_worker", "workername", "buildername", "buildnumber", SHARD, SHARD_RUN})
#: The most shard builds one fan-out may start.
MAX_SHARDS = 64


@dataclass(frozen=True)
class FanOut:
    """Where one machine is too slow: the builder's first `steps` run once per shard, each shard a build of
    `{builder}-shard` on a worker the builder's tags choose (`shard` = `I/N`, which the steps pass on as
    `--shard`); this build waits for them, merges their parts from the object store into `output`
    (`dataset merge`, the bytes one unsharded run makes) and runs its remaining steps on that. N is the
    builder's `shards` parameter; with N = 1 the steps run here, unsplit, and nothing is uploaded.
    """

    #: Names of the builder's leading steps that run per shard; each uses `{shard}` (IfSet("shard", ...)).
    steps: tuple[str, ...]
    #: The directory the last of them writes: a shard's part in a shard build, the merged dataset here.
    output: str = "dataset"
    default: int = 1
    #: The largest N the force form offers.
    most: int = 8
    #: Name of the step that starts the shard builds and waits for them.
    TRIGGER: ClassVar[str] = "fan-out"

    @property
    def param(self) -> Param:
        return Param(SHARDS, str(self.default), f"shard builds, 1..{self.most} (1: one build, unsplit)",
                     choices=tuple(str(n) for n in range(1, self.most + 1)))

    def upload(self) -> Step:
        """The last step of a shard build: its part to `datasets/shards/{run}/{i}-of-{N}/`."""
        return Step("put-shard", ("dataset", "put-shard", self.output, "--run", f"{{{SHARD_RUN}}}"), timeout=1800)

    def merge(self) -> Step:
        return Step("merge", ("dataset", "merge", "--run", f"{{{SHARD_RUN}}}", "--shards", f"{{{SHARDS}}}",
                              "-o", self.output), timeout=1800)

    def drop(self) -> Step:
        """Always last: the run's parts leave the store, whether the merge was published or refused."""
        return Step("drop-shards", ("dataset", "drop-shards", "--run", f"{{{SHARD_RUN}}}"), timeout=600)

    def derived(self) -> tuple[Step, ...]:
        return (self.upload(), self.merge(), self.drop())


@dataclass(frozen=True)
class Builder:
    name: str
    description: str
    steps: tuple[Step, ...]
    #: Worker tags a worker must all carry to run this builder (empty: any worker).
    tags: tuple[str, ...] = ()
    params: tuple[Param, ...] = ()
    #: Cron fields "minute hour day_of_month month day_of_week" (cron numbering: 0 = Sunday).
    nightly: str | None = None
    #: Run when any of these builders succeeds (they trigger it, passing their captured properties).
    after: tuple[str, ...] = ()
    #: Run on changes to this project (sent with `buildbot sendchange --project P`).
    on_change: str | None = None
    #: Mail notifier modes (Buildbot's BuildStatusGenerator); empty: never mail.
    notify: tuple[str, ...] = ("failing", "exception")
    #: Properties passed to the builders triggered after this one: name -> value template.
    exports: Mapping[str, str] = field(default_factory=dict)
    #: When triggered, run on the worker that ran the upstream build (it holds the upstream's files).
    same_worker: bool = False
    #: Split the first steps over shard builds (see FanOut); None: this build runs every step.
    fan_out: FanOut | None = None

    @property
    def parameters(self) -> tuple[Param, ...]:
        """Its force-form fields: the declared parameters, and a fan-out's `shards`."""
        return (*self.params, *((self.fan_out.param,) if self.fan_out else ()))

    @property
    def schedule_kinds(self) -> tuple[str, ...]:
        kinds = [k for k, on in (("nightly", self.nightly), ("triggered", self.after), ("on-change", self.on_change))
                 if on]
        return tuple(kinds) or ("force-only",)

    def defaults(self) -> dict[str, str]:
        """Property values a step sees when nothing sets them: the parameters' defaults, and Buildbot's own
        `buildername` (so a step names its builder without typing the name again)."""
        return {"buildername": self.name, **{p.name: p.default for p in self.parameters}}


_PUBLISHED = (("dataset", r"published dataset (\S+) to "),)
_LLVM_BUILT = (("llvm_bin", r"LLVM at \S+: (\S+)$"), ("llvm_build", r"LLVM at \S+: (\S+)/bin$"))
_RETRAINED = (("vocab_version", r"^(?:ir|mir) (\S+) \((?:already )?published\)$"),)
_REPORT = (("report", r"^report: (\S+)"),)
#: Set only by llvm-tot's trigger (its toolchain on the same worker); never a parameter.
_LLVM_BIN = IfSet("llvm_bin", ("--llvm-bin", "{llvm_bin}"))


#: Set on shard builds only (FanOut): the steps then compile and run only that shard's modules.
_SHARD = IfSet(SHARD, ("--shard", f"{{{SHARD}}}"))


def _dataset_pipeline(kind: str) -> tuple[Step, ...]:
    return (
        Step("corpus", ("corpus", "{corpus_source}", "{corpus_input}", "-o", "corpus", _LLVM_BIN, _SHARD),
             timeout=3600),
        Step(f"triplets-{kind}", ("triplets", kind, "corpus", "-o", "dataset", _LLVM_BIN, _SHARD), timeout=3600),
        Step("publish", ("dataset", "publish", "dataset"), timeout=600, capture=_PUBLISHED),
    )


#: Debian source packages the farm knows how to compile (workers/debsrc.py's recipes).
DEBIAN_PACKAGES = tuple(RECIPES)
#: Benchmarks `regress run --bench` builds from Debian sources (regression/benchmarks.py).
BENCHES = tuple(BENCHMARKS)


def builtin_policies(advisor: str) -> tuple[str, ...]:
    """The built-in policies that answer `advisor` (inline or regalloc), as policyhost/advisors.py declares them."""
    return tuple(advisors.get(advisor).builtin_policies)


#: LLVM's own code, the nightly corpus: Debian's source of it, which these workers can download (`corpus debian`
#: configures its llvm/, runs tablegen and compiles every TU; no full build). With git access to upstream,
#: `corpus_source=llvm corpus_input=llvm-project` is the same at tip of tree.
NIGHTLY_CORPUS = "llvm-toolchain-19"
#: What `corpus_input` may name: the Debian packages with a recipe, and llvm-project (git, for `corpus llvm`).
CORPUS_INPUTS = (*DEBIAN_PACKAGES, "llvm-project")
_CORPUS = (
    # `build` (llvm-tot's bitcode build, a directory on the worker) is set by trigger only. The default
    # source stays `debian` so that forcing only corpus_input (zlib, as `make demo` does) keeps its meaning.
    Param("corpus_source", "debian", "debian: a Debian source package (llvm-toolchain-19 is LLVM's own code); "
          "llvm: LLVM configured and tablegen'd from corpus_input (llvm-project: git, tip of tree; or "
          "llvm-toolchain-19); llvm-tot triggers with its own build", choices=("debian", "llvm")),
    Param("corpus_input", NIGHTLY_CORPUS, "Debian source package with a recipe, or llvm-project (git, with "
          "corpus_source=llvm)", choices=CORPUS_INPUTS),
)
_BENCH = Param("bench", "zlib", "benchmark built from a Debian source package", choices=BENCHES)
#: A git branch, tag or commit: letters, digits, '.', '_', '/', '-' (not first), no '..'.
GIT_REV = r"(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._/-]{0,127}"


def _dataset(kind: str) -> Param:
    return Param("dataset", "", "dataset id to train on (empty or latest: the latest published)",
                 regex=rf"(?:latest|{kind}-[0-9a-f]{{16}})?")


REGISTRY: tuple[Builder, ...] = (
    Builder(
        name="llvm-tot",
        description="build LLVM at tip of tree with embedded bitcode (the corpus and toolchain of the night)",
        steps=(Step("llvm-build", ("llvm-build", "--src", "llvm-project", "--build", "llvm-build", "--rev", "{rev}"),
                    timeout=4 * 3600, capture=_LLVM_BUILT),),
        tags=("big",),
        params=(Param("rev", "main", "llvm-project git revision (main: tip of tree)", regex=GIT_REV),),
        nightly="0 1 * * *",
        # the triplet builders then use this toolchain and its embedded bitcode as corpus
        exports={"llvm_bin": "{llvm_bin}", "corpus_source": "build", "corpus_input": "{llvm_build}"},
    ),
    *(
        Builder(
            name=f"triplets-{kind}",
            description=description,
            steps=_dataset_pipeline(kind),
            tags=tags,
            params=_CORPUS,
            nightly=cron,
            after=("llvm-tot",),
            same_worker=True,
            exports={"dataset": "{dataset}"},
            fan_out=FanOut(steps=("corpus", f"triplets-{kind}")),
        )
        for kind, description, tags, cron in (
            ("ir", "IR2Vec triplets from a real corpus, published as a dataset", (), "0 4 * * *"),
            ("mir", "MIR2Vec triplets (x86-64 post-register-allocation MIR), published as a dataset",
             ("x86_64",), "30 4 * * *"),
        )
    ),
    *(
        Builder(
            name=f"vocab-retrain-{kind}",
            description=f"retrain, validate and publish the {kind.upper()} vocabulary (Celery chain)",
            steps=(Step("retrain", ("vocab", "retrain", "--kind", kind, IfSet("dataset", ("--dataset", "{dataset}")),
                                    "--wait"), timeout=3600, capture=_RETRAINED),),
            params=(_dataset(kind),),
            after=(f"triplets-{kind}",),
        )
        for kind in KINDS
    ),
    Builder(
        name="regression-inliner-size",
        description="MLGO inliner for size (-Oz) against the heuristic on real code (.text sizes)",
        steps=(Step("regress", ("regress", "run", "--builder", "{buildername}", "--bench", "{bench}",
                                "--policy", "{policy}", "--advisor", "inline", "--opt=-Oz", "--no-callgrind",
                                "--fail-on-regression"),
                    timeout=3 * 3600, capture=_REPORT),),
        params=(_BENCH, Param("policy", "heuristic", "built-in inliner policy", choices=builtin_policies("inline"))),
        nightly="0 5 * * *",
        notify=("problem", "exception"),
    ),
    Builder(
        name="regression-regalloc-speed",
        description="MLGO regalloc eviction advisor for speed against the heuristic (callgrind instructions)",
        steps=(Step("regress", ("regress", "run", "--builder", "{buildername}", "--bench", "{bench}",
                                "--policy", "{policy}", "--advisor", "regalloc", "--opt=-O2",
                                "--fail-on-regression"), timeout=3 * 3600,
                    capture=_REPORT),),
        tags=("x86_64",),
        params=(_BENCH, Param("policy", "spill", "built-in eviction policy", choices=builtin_policies("regalloc"))),
        nightly="30 5 * * *",
        notify=("problem", "exception"),
    ),
    Builder(
        name="farm-selftest",
        description="check the worker's toolchain whenever the farm's own code changes",
        steps=(Step("toolchain", ("toolchain",), timeout=300),),
        on_change="mlgo-farm",
        notify=("failing",),
    ),
)


def captured(builder: Builder) -> tuple[str, ...]:
    return tuple(prop for s in builder.steps for prop, _ in s.capture)


def downstream(registry: Iterable[Builder], name: str) -> list[str]:
    """Builders triggered when `name` succeeds."""
    return [b.name for b in registry if name in b.after]


def by_name(registry: Iterable[Builder]) -> dict[str, Builder]:
    return {b.name: b for b in registry}


def parse_cron(spec: str) -> dict[str, int | str]:
    """Cron fields as keyword arguments of Buildbot's Nightly scheduler (which counts Monday as 0)."""
    fields = spec.split()
    if len(fields) != 5:
        raise InputError(f"nightly schedule {spec!r}: need 5 cron fields")
    keys = ("minute", "hour", "dayOfMonth", "month", "dayOfWeek")
    limits = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
    out: dict[str, int | str] = {}
    for key, f, (lo, hi) in zip(keys, fields, limits, strict=True):
        if f == "*":
            out[key] = "*"
            continue
        if not f.isdigit() or not lo <= int(f) <= hi:
            raise InputError(f"nightly schedule {spec!r}: field {key} must be '*' or {lo}..{hi}")
        out[key] = int(f)
    if isinstance(out["dayOfWeek"], int):
        out["dayOfWeek"] = (out["dayOfWeek"] - 1) % 7  # cron Sunday 0/7 -> Buildbot 6
    return out


def validate(registry: Iterable[Builder], verbs: Mapping[str, object] | None = None) -> None:
    """Raise InputError on the first inconsistency: names, references, cycles, modes, properties."""
    builders = list(registry)
    seen: set[str] = set()
    for b in builders:
        if not _NAME.match(b.name):
            raise InputError(f"builder name {b.name!r}: use lower-case letters, digits and '-'")
        if b.name in seen:
            raise InputError(f"builder {b.name!r} is declared twice")
        seen.add(b.name)
        if not b.steps:
            raise InputError(f"builder {b.name!r} has no steps")
        step_names = [s.name for s in b.steps]
        if len(set(step_names)) != len(step_names):
            raise InputError(f"builder {b.name!r}: step names must be unique")
        bad = set(b.notify) - set(NOTIFY_MODES)
        if bad:
            raise InputError(f"builder {b.name!r}: unknown notify mode(s) {', '.join(sorted(bad))}")
        if b.nightly:
            parse_cron(b.nightly)
        if b.fan_out:
            _check_fan_out(b, {x.name for x in builders})
        if len({p.name for p in b.parameters}) != len(b.parameters):
            raise InputError(f"builder {b.name!r}: parameter names must be unique")
        for p in b.parameters:
            _check_param(b.name, p)
        if verbs is not None:
            for s in b.steps:
                if not s.args or not isinstance(s.args[0], str) or s.args[0] not in verbs:
                    raise InputError(f"builder {b.name!r} step {s.name!r}: {s.args[:1]} is not an mlgo-farm verb")
    names = by_name(builders)
    for b in builders:
        for up in b.after:
            if up not in names:
                raise InputError(f"builder {b.name!r} runs after unknown builder {up!r}")
        known = set(b.defaults()) | {p for up in b.after for p in names[up].exports}
        fanned = set(b.fan_out.steps) if b.fan_out else set()
        for s in b.steps:
            missing = placeholders(s.args) - known - ({SHARD} if s.name in fanned else set())
            if missing:
                raise InputError(f"builder {b.name!r} step {s.name!r} uses undeclared properties {sorted(missing)}")
            for prop, pattern in s.capture:
                if re.compile(pattern).groups != 1:
                    raise InputError(f"builder {b.name!r} step {s.name!r}: capture of {prop!r} needs one regex group")
        missing = placeholders(b.exports.values()) - set(b.defaults()) - set(captured(b))
        if missing:
            raise InputError(f"builder {b.name!r} exports undeclared properties {sorted(missing)}")
    _check_acyclic(names)


def _check_fan_out(b: Builder, builder_names: set[str]) -> None:
    """The fan-out names leading steps that pass the shard on, and nothing else does; N has a sane range."""
    f, where = b.fan_out, f"builder {b.name!r} fan-out"
    assert f is not None
    if not f.steps or tuple(s.name for s in b.steps[:len(f.steps)]) != f.steps:
        raise InputError(f"{where}: steps {list(f.steps)} must name the builder's first steps, in order")
    for s in b.steps:
        if (SHARD in placeholders(s.args)) != (s.name in f.steps):
            raise InputError(f"{where}: step {s.name!r} " + ("must pass {shard} on (IfSet)" if s.name in f.steps
                                                             else "uses {shard} but runs once, not per shard"))
        if s.name in f.steps and s.capture:
            raise InputError(f"{where}: step {s.name!r} runs in shard builds; what it captures would not reach "
                             f"this build")
    if not 1 <= f.default <= f.most <= MAX_SHARDS:
        raise InputError(f"{where}: need 1 <= default ({f.default}) <= most ({f.most}) <= {MAX_SHARDS}")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", f.output):
        raise InputError(f"{where}: output {f.output!r} must be a plain directory name")
    clash = {f.TRIGGER, *(s.name for s in f.derived())} & {s.name for s in b.steps}
    if clash:
        raise InputError(f"{where}: step name(s) {sorted(clash)} are the fan-out's own")
    if f"{b.name}-shard" in builder_names:
        raise InputError(f"{where}: its shard builder {b.name}-shard clashes with a declared builder")


def _check_param(builder: str, p: Param) -> None:
    where = f"builder {builder!r} parameter {p.name!r}"
    if not _PROP.match(p.name) or p.name in RESERVED_PROPS:
        raise InputError(f"{where}: use lower-case letters, digits and '_', and not a name Buildbot reserves")
    if bool(p.choices) == bool(p.regex):
        raise InputError(f"{where}: give exactly one of choices or regex (every parameter is constrained)")
    if p.choices:
        if len(set(p.choices)) != len(p.choices) or any(not c or c.startswith("-") for c in p.choices):
            raise InputError(f"{where}: choices must be unique, not empty and not start with '-'")
    else:
        try:
            re.compile(p.pattern)
        except re.error as e:
            raise InputError(f"{where}: bad regex: {e}") from None
    if not p.accepts(p.default):
        raise InputError(f"{where}: default {p.default!r} is not an accepted value")


def _check_acyclic(names: Mapping[str, Builder]) -> None:
    state: dict[str, int] = {}

    def visit(n: str, path: tuple[str, ...]) -> None:
        if state.get(n) == 2:
            return
        if state.get(n) == 1:
            raise InputError(f"builders trigger each other in a cycle: {' -> '.join((*path, n))}")
        state[n] = 1
        for d in downstream(names.values(), n):
            visit(d, (*path, n))
        state[n] = 2

    for n in names:
        visit(n, ())
