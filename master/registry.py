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

A builder with a `Loop` drives builds of other builders one at a time, as its verb says (a bisect:
one build per re-run); what it passes them is checked against their parameters, like a force.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from farm.embeddings import KINDS
from farm.errors import EXIT_REGRESSION
from master import outputs as said
from master.stepspec import BUILD_URL, WHAT_IF, IfSet, Param, Step, Summary
from policyhost import advisors
from regression import bisect
from regression.benchmarks import BENCHMARKS
from workers.debrecipes import RECIPES
from workers.march import MARCHES

NOTIFY_MODES = ("change", "failing", "passing", "problem", "warnings", "exception", "cancelled")
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_PROP = re.compile(r"^[a-z_][a-z0-9_]*$")
#: A fan-out's properties: each shard build's `I/N` and the run's id (set by its trigger), and N (a parameter).
SHARD, SHARD_RUN, SHARDS = "shard", "shard_run", "shards"
#: Names Buildbot or the farm sets itself: reserved by the force form, or bookkeeping set by trigger.
RESERVED_PROPS = frozenset({"owner", "builderNames", "builderid", "username", "reason", "priority", "scheduler",
                            "upstream_worker", "workername", "buildername", "buildnumber", SHARD, SHARD_RUN,
                            BUILD_URL, WHAT_IF, "got_revision", "revision"})
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
class Loop:
    """A builder that drives builds of others, one at a time, for as long as its verb asks (master/loop.py).

    Its `ask` step prints one answer: `done`, or the next trial: which kind of worker runs it (`runs_on`, a key of
    `trials`: the builder that makes such a trial, one build each) and the fields passed to that build (`passes`,
    each checked by that builder's parameter of the same name, as a force would be). The build triggers it, waits,
    and asks again; once done it runs `finish`. At most `most` + ceil(log2 of the answer's `log2_of` field) trials.
    Where no worker of the builder can wait for another build (one build slot), the `alone` step does it all.
    """

    ask: str
    finish: str
    #: (runs_on, builder): where a trial goes
    trials: tuple[tuple[str, str], ...]
    passes: tuple[str, ...]
    most: int
    log2_of: str | None = None
    alone: str | None = None
    #: Name of the steps that start a trial build and wait for it (numbered).
    TRIGGER: ClassVar[str] = "trial"

    @property
    def builders(self) -> tuple[str, ...]:
        return tuple(b for _, b in self.trials)


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
    #: Its nightly builds carry the newest commit the master polled from `[llvm] repo` (master/schedulers.py),
    #: and so do the builds it triggers: Buildbot's console and grid views list them by that commit.
    follows_llvm: bool = False
    #: Drive builds of other builders one at a time (see Loop); None: an ordinary build.
    loop: Loop | None = None

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


#: The policy the nightly inliner regression judges: the newest one the farm published (policyhost/publish.py).
PUBLISHED_POLICY = "store:latest"
#: A regression step: its report's path, its verdict as summary, its report linked; a regression mails itself.
_REGRESS = dict(capture=said.REPORT, summary=said.REGRESS_SAID, links=said.REGRESS_LINKS,
                mails_itself=(EXIT_REGRESSION,))
#: The build's own page, for the alert mail (set by the farm while it renders the command line).
_BUILD_URL = IfSet(BUILD_URL, ("--build-url", f"{{{BUILD_URL}}}"))
#: Set only by llvm-tot's trigger (its toolchain on the same worker); never a parameter.
_LLVM_BIN = IfSet("llvm_bin", ("--llvm-bin", "{llvm_bin}"))


#: Set on shard builds only (FanOut): the steps then compile and run only that shard's modules.
_SHARD = IfSet(SHARD, ("--shard", f"{{{SHARD}}}"))


#: The revision of the code a dataset's corpus was built from, as Buildbot's `got_revision` (what its mail and
#: build page show, and what its trigger passes on): a Debian source's package version or a git commit (the
#: `revision` field of the answer; read from `dataset publish`, which runs once, after a fan-out's shards).
CORPUS_REVISION = (("got_revision", "revision"),)


#: MIR is read at every x86-64 level (workers/march.py): most MIR entities are instructions and register classes of
#: the wider levels (SSE4, AVX, AVX-512), which code compiled for the baseline never shows. The nightly reads all
#: four (the `march` parameter's default); `make demo` forces one (`-p march=x86-64`), a quarter of the MIR to read
#: and train on.
ALL_MARCHES = ",".join(MARCHES)
_MARCH = Param("march", ALL_MARCHES, "x86-64 levels the MIR is read at (workers/march.py): all four, or one",
               choices=(ALL_MARCHES, *MARCHES))
_MARCHES = {"mir": ("--march", "{march}")}


def _dataset_pipeline(kind: str) -> tuple[Step, ...]:
    return (
        Step("corpus", ("corpus", "{corpus_source}", "{corpus_input}", "-o", "corpus", "--with-coverage",
                        _LLVM_BIN, _SHARD),
             timeout=3600, summary=said.CORPUS_SAID),
        Step(f"triplets-{kind}", ("triplets", kind, "corpus", "-o", "dataset", *_MARCHES.get(kind, ()), _LLVM_BIN,
                                  _SHARD), timeout=3600, summary=said.TRIPLETS_SAID),
        Step("publish", ("dataset", "publish", "dataset"), timeout=600, capture=(*said.PUBLISHED, *CORPUS_REVISION),
             summary=said.PUBLISHED_SAID, links=said.DATASET_LINKS),
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
#: The inliner size builders judge the published policy, C++'s ([policy] recipe), on a C++ program.
_SIZE_BENCH = Param("bench", "gperf", "benchmark built from a Debian source package", choices=BENCHES)
#: The inliner policy a size builder judges (per file and ThinLTO alike).
_PUBLISHED_INLINE = Param("policy", PUBLISHED_POLICY, "the latest published inliner policy, or a built-in one",
                          choices=(PUBLISHED_POLICY, *builtin_policies("inline")))
_PUBLISHED_EVICT = Param("policy", PUBLISHED_POLICY, "the latest published eviction policy (policy train-evict, "
                         "policy publish --advisor regalloc), or a built-in one",
                         choices=(PUBLISHED_POLICY, *builtin_policies("regalloc")))
#: A git branch, tag or commit: letters, digits, '.', '_', '/', '-' (not first), no '..'.
GIT_REV = r"(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._/-]{0,127}"


def _dataset(kind: str) -> Param:
    return Param("dataset", "", "dataset id to train on (empty or latest: the latest published)",
                 regex=rf"(?:latest|{kind}-[0-9a-f]{{16}})?")


REGISTRY: tuple[Builder, ...] = (
    Builder(
        name="llvm-tot",
        description="build LLVM at tip of tree with embedded bitcode (the corpus and toolchain of the night)",
        # a nightly build builds the commit its source stamp names (the newest the master polled: follows_llvm);
        # a forced one has none and builds `rev`
        steps=(Step("llvm-build", ("llvm-build", "--src", "llvm-project", "--build", "llvm-build", "--rev", "{rev}",
                                   IfSet("revision", ("--rev", "{revision}"))),
                    timeout=4 * 3600, capture=said.LLVM_BUILT, summary=said.LLVM_SAID),),
        tags=("big",),
        params=(Param("rev", "main", "llvm-project git revision (main: tip of tree)", regex=GIT_REV),),
        nightly="0 1 * * *",
        follows_llvm=True,
        # the triplet builders then use this toolchain and its embedded bitcode as corpus
        exports={"llvm_bin": "{llvm_bin}", "corpus_source": "build", "corpus_input": "{llvm_build}"},
    ),
    *(
        Builder(
            name=f"triplets-{kind}",
            description=description,
            steps=_dataset_pipeline(kind),
            tags=tags,
            params=(*_CORPUS, *((_MARCH,) if kind == "mir" else ())),
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
                                    "--wait"), timeout=3600, capture=said.RETRAINED, summary=said.RETRAINED_SAID,
                    links=said.VOCAB_LINKS),),
            params=(_dataset(kind),),
            after=(f"triplets-{kind}",),
            # the policy trained after it names the vocabulary this build published (not `newest`, which
            # moves on once the size check has settled it)
            exports={"vocab": "{vocab_version}"},
        )
        for kind in KINDS
    ),
    Builder(
        name="policy-retrain-inline",
        description="train, validate and publish the inliner-for-size policy (exploration, weighted cloning, "
                    "evolution strategies) with the newest IR vocabulary, then its size check against the heuristic "
                    "on packages it never saw and the policy in force, which promotes the policy or holds it back "
                    "(and settles its vocabulary: not worse than the in-force vocabulary's policy) "
                    "(Celery chain; the vocabulary's publish has already enqueued it, so this waits for it; "
                    "a failed size check fails the build, exit 12, and mails once per transition)",
        steps=(Step("retrain", ("policy", "retrain", IfSet("vocab", ("--vocab", "{vocab}")), "--wait"),
                    timeout=4 * 3600, capture=said.POLICY, summary=said.POLICY_SAID, links=said.POLICY_LINKS),),
        params=(Param("vocab", "", "IR vocabulary version to train with (empty: the newest, latest or waiting for "
                      "its policy)", regex=r"(?:newest|latest|[0-9]{8}-[A-Za-z0-9._+=@-]{1,110})?"),),
        after=("vocab-retrain-ir",),
        notify=("problem", "exception"),
    ),
    Builder(
        name="regression-inliner-size",
        description="the published inliner policy (store:latest, with its vocabulary) for size (-Oz) against the "
                    "heuristic and against the previous published policy on real code (.text sizes)",
        steps=(Step("regress", ("regress", "run", "--builder", "{buildername}", "--bench", "{bench}",
                                "--policy", "{policy}", "--advisor", "inline", "--opt=-Oz", "--no-callgrind",
                                "--fail-on-regression", _BUILD_URL),
                    timeout=3 * 3600, **_REGRESS),),
        params=(_SIZE_BENCH, _PUBLISHED_INLINE),
        nightly="0 5 * * *",
        after=("policy-retrain-inline",),
        notify=("problem", "exception"),
    ),
    Builder(
        name="regression-inliner-size-thinlto",
        description="the published inliner policy for size (-Oz) against the heuristic in distributed ThinLTO builds "
                    "(the policy in every backend, both variants linked by ld.lld; binary .text sizes)",
        steps=(Step("regress", ("regress", "run", "--builder", "{buildername}", "--bench", "{bench}",
                                "--policy", "{policy}", "--advisor", "inline", "--opt=-Oz", "--thinlto",
                                "--no-callgrind", "--fail-on-regression", _BUILD_URL),
                    timeout=3 * 3600, **_REGRESS),),
        params=(_SIZE_BENCH, _PUBLISHED_INLINE),
        nightly="15 5 * * *",
        after=("policy-retrain-inline",),
        notify=("problem", "exception"),
    ),
    Builder(
        name="regression-bisect",
        description="which changed input made a regression alert's builder regress: the bad run's comparison re-run "
                    "with each input swapped back to its good value, named by version, one regression-bisect-rerun "
                    "build each (an LLVM commit: a regression-bisect-llvm build on a worker that builds LLVM); bisect "
                    "runs raise no alert and stay out of the trend; the culprit goes on the alert's page and, as a "
                    "follow-up, to its mail's thread",
        steps=(Step("bisect", ("regress", "bisect", "{alert}"), timeout=6 * 3600),
               Step("next", ("regress", "bisect", "{alert}", "--next"), timeout=3600, capture=(("alert", "alert"),),
                    summary=(Summary("{sentence}"),)),
               Step("finish", ("regress", "bisect", "{alert}", "--finish"), timeout=600,
                    summary=(Summary("{sentence}"),))),
        params=(Param("alert", "latest", "the regression alert's number (its page: alerts/N/), or latest: the newest "
                      "open one not bisected yet", regex=r"latest|[1-9][0-9]{0,8}", what_if=False),),
        notify=("problem", "exception"),
        loop=Loop(ask="next", finish="finish", alone="bisect", passes=("alert", "trial"),
                  trials=(("any", "regression-bisect-rerun"), ("llvm", "regression-bisect-llvm")),
                  most=bisect.most_reruns(0), log2_of="commits"),
    ),
    *(
        Builder(
            name=name,
            description=description,
            steps=(Step("rerun", ("regress", "bisect", "{alert}", "--rerun", "{trial}"), timeout=timeout),),
            tags=tags,
            params=(Param("alert", "1", "the regression alert being bisected", regex=r"[1-9][0-9]{0,8}"),
                    Param("trial", bisect.CONTROL, "the re-run: control, an input swapped back, or llvm=COMMIT",
                          regex=bisect.SPEC)),
            notify=(),
        )
        for name, description, tags, timeout in (
            ("regression-bisect-rerun", "one re-run of a bisect (started by regression-bisect): the bad run's "
             "comparison with one input swapped back, recorded as a bisect run", (), 3 * 3600),
            ("regression-bisect-llvm", "one re-run of a bisect with LLVM at a commit (started by regression-bisect): "
             "that commit's toolchain built by the farm's llvm-build, kept by commit, then the comparison",
             ("big",), 4 * 3600),
        )
    ),
    Builder(
        name="regression-inliner-control",
        description="control: the heuristic through the policy launcher must build exactly the heuristic's code "
                    "(size ratio 1.0000; checks the launcher, not a policy)",
        steps=(Step("regress", ("regress", "run", "--builder", "{buildername}", "--bench", "{bench}",
                                "--policy", "heuristic", "--advisor", "inline", "--opt=-Oz", "--no-callgrind",
                                "--repeats", "0", "--expect-identical", "--fail-on-regression", _BUILD_URL),
                    timeout=3 * 3600, **_REGRESS),),
        params=(_BENCH,),
        nightly="45 4 * * *",
        notify=("problem", "exception"),
    ),
    Builder(
        name="regression-regalloc-speed",
        # PGO, as speed users build (issue 46): both variants use the profile the heuristic's instrumented build made
        # on the benchmark's training inputs (regression/pgo.py). Not ThinLTO: LLVM 22's ThinLTO backends never
        # consult the eviction advisor (policyhost/advisors.py `thinlto_backends`), so both sides would be the heuristic
        description="the published regalloc eviction policy (store:latest) for speed against the heuristic "
                    "(callgrind instructions) in PGO builds",
        steps=(Step("regress", ("regress", "run", "--builder", "{buildername}", "--bench", "{bench}",
                                "--policy", "{policy}", "--advisor", "regalloc", "--opt=-O2", "--pgo",
                                "--fail-on-regression", _BUILD_URL), timeout=3 * 3600, **_REGRESS),),
        tags=("x86_64",),
        params=(_BENCH, _PUBLISHED_EVICT),
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


def loop_trials(registry: Iterable[Builder]) -> dict[str, str]:
    """Builders whose builds only a Loop starts: {trial builder: the builder that drives it}."""
    return {t: b.name for b in registry if b.loop for t in b.loop.builders}


def by_name(registry: Iterable[Builder]) -> dict[str, Builder]:
    return {b.name: b for b in registry}
