"""Running an alert's bisect for real: each re-run is one `regress run` of the bad run's comparison with inputs of the
good run swapped in; the result goes on the alert and, as a follow-up in the alert mail's thread, to its readers.

A bisect is resumable, because on a farm of several machines each re-run is a Buildbot build of its own: its state
is nothing but the alert and the re-runs the history recorded for it (`config.bisect.alert`). `next_of` says what to
re-run next (regression/bisect.py's `next_trial` over the recorded re-runs), `rerun` makes and records exactly one,
`finish` decides, keeps the finding on the alert and mails it (regression/bisectmail.py): `regress bisect ID
--next | --rerun SPEC | --finish`, driven by the `regression-bisect` coordinator build (master/factories.py).
`run_bisect` is the same three in one loop, in this process (`regress bisect ID`: a single machine, the tests). A
re-run stopped before its result (regression/unfinished.py) is no trial: the resumed bisect makes it again.

regression/bisect.py decides which re-runs to make and what they mean; this module makes them. A re-run is the
bad run's own recorded command (`config.reproduce`: corpus, benchmarks, flags, rules), with the policy and the
vocabulary pinned by version (`store:VERSION`, never `latest`, which moves) from the good or the bad run's lineage,
and LLVM from a toolchain that has the wanted build (`toolchains`; by default only the one this host runs). It is
recorded as a bisect run (`config.bisect`, RunRequest.bisect): judged against the alert's good run like the bad run
was, never opening or closing an alert, never mailed, never in the trend or another run's baseline
(regression/history.py NOT_BISECT, outcome.finish). So a bisect can run on any host with the inputs and the history.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shlex
import time
from collections.abc import Callable
from pathlib import Path

from farm.config import Settings, load_settings
from farm.errors import FarmError, InputError, first_line
from farm.toolchain import Toolchain
from regression import bisect, bisectmail, unfinished
from regression.alerts.records import REGRESSION, Alert, AlertStore, inputs_of
from regression.bisectllvm import CommitRange, ToolchainCache, commit_range, is_commit
from regression.history import History, Run
from regression.request import RunRequest

log = logging.getLogger(__name__)
#: Finds a toolchain for an LLVM input value (a commit, a package version); None: none on this host.
Toolchains = Callable[[str | None], Toolchain | None]


def llvm_value(toolchain: Toolchain) -> str | None:
    """A toolchain's LLVM as a run's lineage names it (regression/alerts/records.py inputs_of): commit, else package,
    else version."""
    from regression.lineage import llvm_package

    return toolchain.commit or llvm_package(toolchain) or toolchain.version


def only(toolchain: Toolchain) -> Toolchains:
    """The default: the host's own toolchain, for the LLVM it is; no other LLVM can be re-run here."""
    mine = llvm_value(toolchain)
    return lambda wanted: toolchain if wanted == mine else None


def _pins(run: Run) -> dict[str, dict]:
    """The request fields that give `run`'s policy and vocabulary, pinned to the versions it used."""
    cfg = run.config
    policy = f"store:{cfg['policy_version']}" if cfg.get("policy_version") else cfg.get("policy") or run.policy_id
    vocab = cfg.get("vocab")
    version = run.vocab_version
    if version and not version.startswith("sha256-") and (vocab is None or str(vocab).startswith(("store:", "http"))):
        vocab = f"store:{version}"
    return {"policy": {"policy": policy, "policy_sha256": None, "advisor": cfg.get("advisor")},
            "vocab": {"vocab": vocab, "vocab_sha256": None}}


def base_request(bad: Run) -> RunRequest:
    """The bad run's comparison as its recorded `reproduce` command asks it (what to build and how to measure)."""
    from regression.runargs import parse_run, request_from_args

    command = bad.config.get("reproduce")
    if not command:
        raise InputError(f"run {bad.run_id} of builder {bad.builder} recorded no command to re-run")
    try:
        args = parse_run(shlex.split(command)[3:])
    except SystemExit:
        raise InputError(f"run {bad.run_id}: its recorded command cannot be parsed: {command}") from None
    dirs = bad.config.get("bench_dirs") or {}
    if args.bench_url and len(dirs) == len(args.bench_url) and all(_same_sources(bad, n, d) for n, d in dirs.items()):
        # the sources the command names by URL are still here, where the run read them: no fetch from the dashboard
        args.bench_dir, args.bench_url, args.bench_sha256 = [*args.bench_dir, *dirs.values()], [], []
    return request_from_args(args)


def _same_sources(run: Run, name: str, directory: str) -> bool:
    """Whether `directory` still holds the sources `run` built as benchmark `name` (runs of before `bench_sources`
    are trusted as they always were; a directory changed since is fetched by the command's URL instead)."""
    from regression import benchsource

    recorded = (run.config.get("bench_sources") or {}).get(name)
    if not Path(directory).is_dir():
        return False
    return recorded is None or benchsource.key(Path(directory), benchsource.pack(Path(directory)))[1] == recorded


def rerun_id(trial: bisect.Trial, bad: Run, alert: Alert, n: int) -> str:
    """The n-th re-run's id: the bad run's, the alert and what it swapped (`n1.bisect3.2-policy`)."""
    swap = f"llvm-{trial.commit[:12]}" if trial.commit else trial.swap or bisect.CONTROL
    return f"{bad.run_id}.bisect{alert.id}.{n}-{swap}"


def bisect_config(trial: bisect.Trial, good: Run, bad: Run, alert: Alert) -> dict:
    """What a re-run records as `config.bisect`: what `load` reads back (and what keeps it out of the trend)."""
    return {"alert": alert.id, "good_run": good.run_id, "bad_run": bad.run_id, "swap": trial.swap,
            "inputs": trial.inputs, "commit": trial.commit, "spec": trial.spec}


def request_for(trial: bisect.Trial, base: RunRequest, good: Run, bad: Run, alert: Alert, n: int) -> RunRequest:
    """The re-run of `trial`: the bad run's request with the swapped input's fields taken from the good run."""
    fields: dict = {}
    for pins in _pins(bad).values():
        fields.update(pins)
    if trial.swap in ("policy", "vocab"):  # LLVM is swapped by the toolchain the re-run is given
        fields.update(_pins(good)[trial.swap])
    if trial.swap == "bench":  # the good run's benchmark sources, from its own command
        fields["benchmarks"] = base_request(good).benchmarks
    return dataclasses.replace(base, **fields, builder=bad.builder, run_id=rerun_id(trial, bad, alert, n),
                               publish=True, build_url=None, bisect=bisect_config(trial, good, bad, alert))


@dataclasses.dataclass(frozen=True)
class Case:
    """One alert's bisect as the history holds it: the alert, its good and bad runs, the re-runs recorded so far
    (oldest first) and when the first of them started."""

    alert: Alert
    good: Run
    bad: Run
    steps: tuple[bisect.Step, ...]
    started: float | None
    #: the re-runs recorded, interrupted ones too (no trials: regression/unfinished.py), which number the next one
    recorded: int = 0

    @property
    def good_inputs(self) -> dict[str, str | None]:
        return inputs_of(self.good)

    @property
    def bad_inputs(self) -> dict[str, str | None]:
        return inputs_of(self.bad)


def load(alert_id: int, history: History) -> Case:
    """The alert's bisect so far; an alert without a good run before its bad run has nothing to bisect."""
    alert = AlertStore(history).get(alert_id)
    if alert.kind != REGRESSION or not alert.good_run:
        raise InputError(f"alert #{alert.id} has no good run before its bad run: there is nothing to bisect")
    good, bad = history.run(alert.good_run, alert.builder), history.run(alert.bad_run, alert.builder)
    mine = [r for r in history.bisect_runs(alert.id) if r.builder == bad.builder]
    # a re-run stopped before its result (SIGTERM, a build's stop) is no trial: the bisect makes it again, rather
    # than deciding "cannot decide" from it
    made = [r for r in mine if not unfinished.interrupted(r)]
    return Case(alert, good, bad, tuple(_step(r, inputs_of(good)) for r in made),
                min((r.started for r in mine), default=None), len(mine))


def _step(run: Run, good: dict[str, str | None]) -> bisect.Step:
    """A recorded re-run with a result as the bisect reads it: its trial (from `config.bisect`) and its verdict or
    error."""
    b = run.config["bisect"]
    inputs = dict(b.get("inputs") or {})
    commit = b.get("commit")
    if "commit" not in b and b.get("swap") == "llvm" and inputs.get("llvm") != good.get("llvm"):
        commit = inputs.get("llvm")  # recorded before re-runs named their commit
    trial = bisect.Trial(b.get("swap"), inputs, commit if is_commit(commit) else None)
    seconds = (run.finished - run.started) if run.finished else 0.0
    if run.status == "complete":
        return bisect.Step(trial, run_id=run.run_id, verdict=run.verdict, seconds=seconds)
    return bisect.Step(trial, run_id=run.run_id, error=run.error or "failed", seconds=seconds)


@dataclasses.dataclass(frozen=True)
class Next:
    """What `regress bisect ID --next` says: the next re-run to make, or the finding once none is left."""

    case: Case
    trial: bisect.Trial | None
    finding: bisect.Finding | None
    #: the LLVM range's length once the search needed it (0: no search)
    commits: int = 0

    @property
    def most(self) -> int:
        """The bound on this bisect's re-runs (regression/bisect.py most_reruns)."""
        return bisect.most_reruns(self.commits)

    @property
    def runs_on(self) -> str | None:
        """Where the trial can run: `llvm` (its LLVM is a commit: a toolchain the LLVM workers build and keep by
        commit) or `any` (the LLVM of a package or a version: a worker that has it)."""
        if self.trial is None:
            return None
        return "llvm" if is_commit(self.trial.inputs.get("llvm")) else "any"

    def as_json(self) -> dict:
        said = (f"next re-run: {self.trial.spec} (on {self.runs_on} worker)" if self.trial else
                f"done: {self.finding.sentence()}")  # type: ignore[union-attr]
        return {"alert": self.case.alert.id, "done": self.trial is None,
                "trial": self.trial.spec if self.trial else None, "runs_on": self.runs_on,
                "reruns": len(self.case.steps), "commits": self.commits, "most": self.most, "sentence": said}


def next_of(alert_id: int, history: History, commits: CommitRange | None = None) -> Next:
    """The next re-run of alert `alert_id`'s bisect, from what the history recorded; `commits` lists an LLVM range
    (bisectllvm.commit_range in a clone), needed only once the inputs name LLVM between two commits."""
    case = load(alert_id, history)
    found: list[int] = []

    def search() -> list[str] | None:
        good, bad = case.good.llvm_commit, case.bad.llvm_commit
        if commits is None or not (is_commit(good) and is_commit(bad)):
            return None
        listed = commits(str(good), str(bad))
        found.append(len(listed))
        return listed

    nxt = bisect.next_trial(case.good_inputs, case.bad_inputs, case.steps, search)
    n = found[0] if found else 0
    if isinstance(nxt, bisect.Finding):
        return Next(case, None, nxt, n)
    return Next(case, nxt, None, n)


def trial_of(case: Case, spec: str, commits: CommitRange | None = None) -> bisect.Trial:
    """The trial a spec names for this alert (`bisect.SPEC`): the control, an input that changed, or a commit of
    the LLVM range (checked against the range when `commits` can list it)."""
    try:
        bisect.check_spec(spec)
    except ValueError as e:
        raise InputError(str(e)) from None
    good, bad = case.good_inputs, case.bad_inputs
    if spec == bisect.CONTROL:
        return bisect.Trial(None, dict(bad))
    if "=" in spec:
        commit = spec.split("=", 1)[1]
        g, b = case.good.llvm_commit, case.bad.llvm_commit
        if not (is_commit(g) and is_commit(b)):
            raise InputError(f"alert #{case.alert.id}: LLVM is not named by two commits: no commit to re-run")
        if commits is not None and commit not in commits(str(g), str(b)):
            raise InputError(f"commit {commit} is not between the good run's LLVM {g} and the bad run's {b}")
        return bisect.Trial("llvm", {**bad, "llvm": commit}, commit=commit)
    if good.get(spec) == bad.get(spec):
        raise InputError(f"alert #{case.alert.id}: {spec} did not change between the good and the bad run")
    return bisect.Trial(spec, {**bad, spec: good.get(spec)})


def rerun(alert_id: int, spec: str, history: History, settings: Settings, toolchains: Toolchains,
          commits: CommitRange | None = None) -> bisect.Step:
    """Make the one re-run `spec` names and record it as a bisect run, whatever happens: a re-run that fails
    (a toolchain it cannot have, a build that breaks) is recorded as failed, so the bisect moves on and says so; one
    that is stopped (SIGTERM, Ctrl-C) is recorded as interrupted, no trial, and made again by the resumed bisect
    (under a new number: the interrupted one stays as it was recorded)."""
    from regression.compare import run_comparison

    case = load(alert_id, history)
    trial = trial_of(case, spec, commits)
    n = case.recorded + 1
    run_id = rerun_id(trial, case.bad, case.alert, n)
    t0 = time.time()
    try:
        req = request_for(trial, base_request(case.bad), case.good, case.bad, case.alert, n)
        chain = toolchains(trial.inputs.get("llvm"))
        if chain is None:
            raise FarmError(f"no toolchain of LLVM {trial.inputs.get('llvm')} on this host")
        result = run_comparison(req, settings, chain, history)
    except FarmError as e:
        _record_failure(history, case, trial, run_id, first_line(e))
        return bisect.Step(trial, run_id=run_id, error=first_line(e), seconds=time.time() - t0)
    except KeyboardInterrupt as e:  # farm/errors.py's Terminated (SIGTERM, raised by farm/cli.py) too
        _record_stop(history, case.bad.builder, run_id, e)
        raise
    log.info("bisect of alert #%s: %s -> %s", case.alert.id, run_id, result.verdict)
    return bisect.Step(trial, run_id=run_id, verdict=result.verdict, seconds=time.time() - t0)


def _record_failure(history: History, case: Case, trial: bisect.Trial, run_id: str, error: str) -> None:
    """A re-run that failed before the comparison recorded itself (no toolchain, no command) is recorded here."""
    try:
        history.run(run_id, case.bad.builder)
        return  # the comparison recorded it (failed) itself
    except InputError:
        pass
    llvm = trial.inputs.get("llvm")
    run = history.start_run(run_id, case.bad.builder, llvm_version=None,
                            llvm_commit=llvm if is_commit(llvm) else None, policy_id=str(trial.inputs.get("policy")),
                            vocab_version=trial.inputs.get("vocab"),
                            config={"bisect": bisect_config(trial, case.good, case.bad, case.alert)})
    history.fail_run(run, error)


def _record_stop(history: History, builder: str, run_id: str, e: BaseException) -> None:
    """A re-run that was stopped is recorded as interrupted (regression/unfinished.py), not as failed: no trial."""
    with contextlib.suppress(FarmError):  # not recorded (stopped before it started), or the history is down
        run = history.run(run_id, builder)
        if run.status != "complete":
            history.fail_run(run, unfinished.stopped(e))


def finish(alert_id: int, history: History, settings: Settings, commits: CommitRange | None = None) -> bisect.Finding:
    """Decide from the recorded re-runs, keep the finding on the alert, and mail it in the alert's thread."""
    nxt = next_of(alert_id, history, commits)
    if nxt.finding is None:
        raise InputError(f"alert #{alert_id}: the bisect is not done: re-run {nxt.trial.spec} next "  # type: ignore
                         f"(regress bisect {alert_id} --rerun {nxt.trial.spec})")  # type: ignore[union-attr]
    case, finding = nxt.case, nxt.finding
    started = case.started or time.time()
    result = {**finding.as_json(), "good_run": case.good.run_id, "bad_run": case.bad.run_id, "started": started,
              "seconds": round(time.time() - started, 1),
              "links": bisectmail.published(settings, case.bad.builder,
                                              [s.run_id for s in finding.steps if s.run_id])}
    store = AlertStore(history)
    store.set_bisect(case.alert.id, result)
    bisectmail.follow_up(history, settings, store.get(case.alert.id), result)
    return finding


def in_repo(repo: Path) -> CommitRange:
    """Commit ranges listed in a local clone of llvm-project."""
    return lambda good, bad: commit_range(repo, good, bad)


def run_bisect(alert_id: int, history: History, settings: Settings | None = None,
               toolchain: Toolchain | None = None, toolchains: Toolchains | None = None,
               llvm_repo: Path | None = None, cache: ToolchainCache | None = None,
               commits: CommitRange | None = None) -> bisect.Finding:
    """Bisect alert `alert_id` here, in this process: `next_of`, `rerun`, again, until the finding; then `finish`.
    A re-run that fails (a build, a missing toolchain) is a step with its error: the bisect then says it cannot
    decide, and why. With `llvm_repo` (a clone of llvm-project) or `commits`, and `cache` (toolchains by commit), an
    LLVM culprit between two commits is narrowed to its first bad commit. Re-runs already recorded for the alert are
    not made again: a bisect stopped half-way goes on where it stopped."""
    settings = settings or load_settings()
    toolchain = toolchain or Toolchain.from_settings(settings)
    if toolchains is None:
        here = only(toolchain)
        toolchains = (lambda v: here(v) or cache.need(v)) if cache is not None else here
    if commits is None and llvm_repo is not None:
        commits = in_repo(llvm_repo)
    made = -1
    while (nxt := next_of(alert_id, history, commits)).trial is not None:
        if len(nxt.case.steps) >= nxt.most or len(nxt.case.steps) == made:
            raise FarmError(f"bisect of alert #{alert_id}: {len(nxt.case.steps)} re-runs recorded (at most "
                            f"{nxt.most}) and it still asks for {nxt.trial.spec}")
        made = len(nxt.case.steps)
        rerun(alert_id, nxt.trial.spec, history, settings, toolchains, commits)
    return finish(alert_id, history, settings, commits)
