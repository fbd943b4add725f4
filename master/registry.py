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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from farm.errors import InputError
from farm.kinds import KINDS
from policyhost import advisors
from regression.benchmarks import BENCHMARKS
from workers.debsrc import RECIPES

NOTIFY_MODES = ("change", "failing", "passing", "problem", "warnings", "exception", "cancelled")
_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_PROP = re.compile(r"^[a-z_][a-z0-9_]*$")
#: Names Buildbot or the farm sets itself: reserved by the force form, or bookkeeping set by trigger.
RESERVED_PROPS = frozenset({"owner", "builderNames", "builderid", "username", "reason", "priority", "scheduler",
                            "upstream_worker", "workername", "buildername", "buildnumber"})


@dataclass(frozen=True)
class IfSet:
    """Arguments included only when build property `prop` is set and not empty."""

    prop: str
    args: tuple[str, ...]


Arg = str | IfSet


@dataclass(frozen=True)
class Step:
    """One `mlgo-farm` invocation: `args` starts with the verb."""

    name: str
    args: tuple[Arg, ...]
    #: Seconds without output before Buildbot kills the step.
    timeout: int = 3600
    #: Properties set from the step's output: (property, regex with one group); the last match wins.
    capture: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Param:
    """A build property with a default, settable in the force form, always constrained.

    Exactly one of `choices` (the form offers these and nothing else: a ChoiceStringParameter)
    or `regex` (free text the whole of which must match; a StringParameter with Buildbot's
    `regex=`). Either way a value never starts with `-`, so it cannot turn into an option of
    the verb it is passed to.
    """

    name: str
    default: str
    help: str = ""
    choices: tuple[str, ...] = ()
    regex: str = ""

    @property
    def pattern(self) -> str:
        """The pattern Buildbot checks with `re.match`: anchored at both ends, no leading '-'."""
        return rf"(?!-)(?:{self.regex})\Z"

    def accepts(self, value: str) -> bool:
        if self.choices:
            return value in self.choices
        return re.match(self.pattern, value) is not None


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

    @property
    def schedule_kinds(self) -> tuple[str, ...]:
        kinds = [k for k, on in (("nightly", self.nightly), ("triggered", self.after), ("on-change", self.on_change))
                 if on]
        return tuple(kinds) or ("force-only",)

    def defaults(self) -> dict[str, str]:
        """Property values a step sees when nothing sets them: the parameters' defaults, and Buildbot's own
        `buildername` (so a step names its builder without typing the name again)."""
        return {"buildername": self.name, **{p.name: p.default for p in self.params}}


_PUBLISHED = (("dataset", r"published dataset (\S+) to "),)
_LLVM_BUILT = (("llvm_bin", r"LLVM at \S+: (\S+)$"), ("llvm_build", r"LLVM at \S+: (\S+)/bin$"))
_RETRAINED = (("vocab_version", r"^(?:ir|mir) (\S+) \((?:already )?published\)$"),)
_REPORT = (("report", r"^report: (\S+)"),)
#: Set only by llvm-tot's trigger (its toolchain on the same worker); never a parameter.
_LLVM_BIN = IfSet("llvm_bin", ("--llvm-bin", "{llvm_bin}"))


def _dataset_pipeline(kind: str) -> tuple[Step, ...]:
    return (
        Step("corpus", ("corpus", "{corpus_source}", "{corpus_input}", "-o", "corpus", _LLVM_BIN), timeout=3600),
        Step(f"triplets-{kind}", ("triplets", kind, "corpus", "-o", "dataset", _LLVM_BIN), timeout=3600),
        Step("publish", ("dataset", "publish", "dataset"), timeout=600, capture=_PUBLISHED),
    )


#: Debian source packages the farm knows how to compile (workers/debsrc.py's recipes).
DEBIAN_PACKAGES = tuple(RECIPES)
#: Benchmarks `regress run --bench` builds from Debian sources (regression/benchmarks.py).
BENCHES = tuple(BENCHMARKS)


def builtin_policies(advisor: str) -> tuple[str, ...]:
    """The built-in policies that answer `advisor` (inline or regalloc), as policyhost/advisors.py declares them."""
    return tuple(advisors.get(advisor).builtin_policies)


_CORPUS = (
    # `build` (llvm-tot's bitcode build, a directory on the worker) is set by trigger only.
    Param("corpus_source", "debian", "corpus from a Debian source package (llvm-tot triggers with its own build)",
          choices=("debian",)),
    Param("corpus_input", "zlib", "Debian source package (one the farm has a recipe for)", choices=DEBIAN_PACKAGES),
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


def render_args(args: Iterable[Arg], lookup: Callable[[str], object]) -> list[str]:
    """Substitute `{prop}` placeholders; drop `IfSet` groups whose property is unset or empty.

    An argument that would begin with a property's value may not begin with '-': whatever set
    the property (force form, trigger, nightly default), its value stays a value and never
    becomes an option of the verb (`corpus_source=--help` is refused here, not parsed).
    """
    out: list[str] = []

    def value(m: re.Match) -> str:
        name = m.group(1)
        v = lookup(name)
        if v is None or v == "":
            raise InputError(f"build property {name!r} is not set")
        v = str(v)
        if m.start() == 0 and v.startswith("-"):
            raise InputError(f"build property {name}={v!r}: a value may not start with '-'")
        return v

    for a in args:
        if isinstance(a, IfSet):
            if lookup(a.prop) not in (None, ""):
                out.extend(render_args(a.args, lookup))
        else:
            out.append(_PLACEHOLDER.sub(value, a))
    return out


def placeholders(args: Iterable[Arg]) -> set[str]:
    """Property names the arguments use."""
    names: set[str] = set()
    for a in args:
        if isinstance(a, IfSet):
            names |= {a.prop} | placeholders(a.args)
        else:
            names |= set(_PLACEHOLDER.findall(a))
    return names


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
        if len({p.name for p in b.params}) != len(b.params):
            raise InputError(f"builder {b.name!r}: parameter names must be unique")
        for p in b.params:
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
        for s in b.steps:
            missing = placeholders(s.args) - known
            if missing:
                raise InputError(f"builder {b.name!r} step {s.name!r} uses undeclared properties {sorted(missing)}")
            for prop, pattern in s.capture:
                if re.compile(pattern).groups != 1:
                    raise InputError(f"builder {b.name!r} step {s.name!r}: capture of {prop!r} needs one regex group")
        missing = placeholders(b.exports.values()) - set(b.defaults()) - set(captured(b))
        if missing:
            raise InputError(f"builder {b.name!r} exports undeclared properties {sorted(missing)}")
    _check_acyclic(names)


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
