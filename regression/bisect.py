"""Which changed input made a builder regress: the pure logic of a bisect, with no runs, files or mail.

An alert knows its last good run and its first bad run, and the lineage of both (regression/lineage.py): the LLVM
build (commit, else Debian package version), the policy version, the vocabulary version (and, once runs record
them, the benchmark sources). Whatever changed between the two is a suspect. The farm re-runs the bad run's
comparison a few times, each time with other inputs (regression/bisectrun.py does that for real); this module only
says which re-runs to make and what their verdicts mean, so it is tested with a fake verdict oracle.

The plan, in order:

1. a **control**: the bad run's inputs as they were. If it does not regress again, the regression is not
   reproducible (noise, or an input the lineage does not record) and nothing after it could be trusted: stop.
2. one re-run per changed input, that input swapped back to its good value, the others kept bad. The culprit is
   the one input whose swap flips the verdict to good. Both (or several) flip: the inputs interact, or the
   re-runs are flaky; none flips: the regression needs more than one change at once. Either way: cannot decide.

With only the policy changed that is two re-runs. LLVM named by a commit range of n commits is then narrowed by
`first_bad_commit`, a binary search that builds at most ceil(log2 n) toolchains, within the issue's bound of
ceil(log2 n) + 1 (the commit before the range is the good run's and the last one the bad run's: neither is rebuilt).

A bisect on a farm of several machines makes each re-run in a build of its own, so it cannot be one Python loop
holding its state in memory: `next_trial` says what to make next from the re-runs made so far (what the history
recorded), or the finding once nothing is left. The local loop (`bisect_inputs`) and the farm's coordinator build
(master/factories.py's BisectLoop) both call it, so there is one logic; `most_reruns` is the bound both keep.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

OK, REGRESSION = "ok", "regression"
#: The inputs in the order they are tried back: the cheapest re-runs first (LLVM may need a toolchain built).
ORDER = ("policy", "vocab", "bench", "llvm")
#: A trial as a command line and a build property name it: the control, one input swapped back, or a commit of the
#: LLVM range. Only these: a spec never names a file, an executable or an option.
CONTROL = "control"
SPEC = rf"{CONTROL}|{'|'.join(ORDER)}|llvm=[0-9a-f]{{40}}"
_SPEC = re.compile(SPEC)


def check_spec(spec: str) -> str:
    """`spec` if it is one (`SPEC`), else ValueError."""
    if not isinstance(spec, str) or not _SPEC.fullmatch(spec):
        raise ValueError(f"bisect trial {spec!r}: one of {CONTROL}, {', '.join(ORDER)} or llvm=COMMIT (40 hex)")
    return spec


@dataclass(frozen=True)
class Trial:
    """One re-run: the bad run's inputs with `swap` (None: the control) put back to its good value; or, searching
    the LLVM range, with LLVM at `commit`."""

    swap: str | None
    inputs: dict[str, str | None]
    commit: str | None = None

    @property
    def spec(self) -> str:
        """How a command line and a build property name it (`SPEC`)."""
        return f"llvm={self.commit}" if self.commit else self.swap or CONTROL


@dataclass(frozen=True)
class Step:
    """What one re-run gave: a verdict, or why it gave none (`error`: a build or a run failed)."""

    trial: Trial
    run_id: str | None = None
    verdict: str | None = None
    error: str | None = None
    seconds: float = 0.0


@dataclass(frozen=True)
class Finding:
    """A bisect's finding: the culprit input (its good and bad values) with the runs that show it, or why not."""

    changed: dict[str, tuple[str | None, str | None]]
    steps: tuple[Step, ...] = ()
    culprit: str | None = None
    why: str | None = None
    #: for an LLVM culprit narrowed to a commit: the first bad commit (`first_bad_commit`)
    commit: str | None = None
    commit_steps: tuple[tuple[str, str | None], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def evidence(self) -> list[str]:
        return [s.run_id for s in self.steps if s.run_id]

    def sentence(self) -> str:
        """One line for a mail, a page or a terminal."""
        runs = ", ".join(self.evidence) or "none"
        if self.culprit is None:
            return f"cannot decide: {self.why} (evidence runs {runs})"
        old, new = self.changed[self.culprit]
        at = f", first bad commit {self.commit}" if self.commit else ""
        return f"culprit {self.culprit} {old or '-'} -> {new or '-'}{at} (evidence runs {runs})"

    def as_json(self) -> dict[str, Any]:
        return {"culprit": self.culprit, "why": self.why, "commit": self.commit, "sentence": self.sentence(),
                "changed": {k: list(v) for k, v in self.changed.items()}, "evidence": self.evidence,
                "steps": [{**asdict(s.trial), **{k: v for k, v in asdict(s).items() if k != "trial"}}
                          for s in self.steps],
                "commit_steps": [list(c) for c in self.commit_steps], **self.extra}


def changed_inputs(good: Mapping[str, str | None], bad: Mapping[str, str | None]
                   ) -> dict[str, tuple[str | None, str | None]]:
    """`{input: (good value, bad value)}` of every input both runs recorded that differs, in the order they are tried
    back (an input one run did not record cannot be swapped back: regression/alerts/records.py `inputs_of`)."""
    names = [k for k in ORDER if k in good and k in bad] + sorted(set(good) & set(bad) - set(ORDER))
    return {k: (good.get(k), bad.get(k)) for k in names if good.get(k) != bad.get(k)}


def plan(good: Mapping[str, str | None], bad: Mapping[str, str | None]) -> list[Trial]:
    """The control, then one swap per changed input (nothing at all when nothing changed: there is no suspect)."""
    changed = changed_inputs(good, bad)
    if not changed:
        return []
    return [Trial(None, dict(bad))] + [Trial(k, {**bad, k: good.get(k)}) for k in changed]


def decide(changed: dict[str, tuple[str | None, str | None]], steps: Sequence[Step]) -> Finding:
    """The culprit from the re-runs made so far (`plan`'s order), or why there is none."""
    steps = tuple(steps)
    if not changed:
        return Finding(changed, steps, why="no input changed between the good and the bad run")
    failed = [s for s in steps if s.error]
    if failed:
        s = failed[0]
        what = "the control re-run" if s.trial.swap is None else f"the re-run with {s.trial.swap} swapped back"
        return Finding(changed, steps, why=f"{what} failed: {s.error}")
    control = next((s for s in steps if s.trial.swap is None), None)
    if control is None:
        return Finding(changed, steps, why="the control re-run was not made")
    if control.verdict != REGRESSION:
        return Finding(changed, steps, why="flaky: the bad run's own inputs did not regress again (noise, or an "
                                           "input the lineage does not record)")
    swaps = [s for s in steps if s.trial.swap is not None]
    if len(swaps) < len(changed):
        return Finding(changed, steps, why=f"only {len(swaps)} of {len(changed)} changed inputs were tried")
    flips = [s.trial.swap for s in swaps if s.verdict == OK]
    if len(flips) == 1:
        return Finding(changed, steps, culprit=flips[0])
    if flips:
        return Finding(changed, steps, why=f"flaky or interacting: swapping back any of {', '.join(flips)} "  # type: ignore[arg-type]
                                           "alone makes the run good")
    return Finding(changed, steps, why="no single input flips the verdict: swapping back each of "
                                       f"{', '.join(changed)} alone still regresses")


def most_reruns(commits: int = 0) -> int:
    """The most re-runs one bisect makes: the control and one per input, then ceil(log2 n) of a range of n commits."""
    return len(ORDER) + 1 + (math.ceil(math.log2(commits)) if commits > 1 else 0)


class _Unmade(Exception):
    """The commit search reached a commit no recorded re-run has tried yet."""

    def __init__(self, commit: str) -> None:
        super().__init__(commit)
        self.commit = commit


def next_trial(good: Mapping[str, str | None], bad: Mapping[str, str | None], steps: Sequence[Step],
               commits: Callable[[], Sequence[str] | None] | None = None) -> Trial | Finding:
    """The next re-run to make after `steps` (the re-runs made so far, oldest first; a trial made twice counts by
    its last), or the Finding when none is left: `plan`'s re-runs in order, stopping early when the control fails or
    does not regress again (the swaps would tell nothing); then, when they name LLVM and `commits()` gives the
    range between the good and the bad run's commits (oldest first; None: no range), `first_bad_commit` replayed
    over the commits already tried, up to the first one not tried yet."""
    changed = changed_inputs(good, bad)
    made = {s.trial.spec: s for s in steps if s.trial.commit is None}
    done: list[Step] = []
    for trial in plan(good, bad):
        step = made.get(trial.spec)
        if step is None:
            return trial
        done.append(step)
        if trial.swap is None and (step.error or step.verdict != REGRESSION):
            break
    finding = decide(changed, done)
    search = commits() if finding.culprit == "llvm" and commits is not None else None
    if search is None:
        return finding
    return _commit_search(finding, bad, steps, list(search))


def _commit_search(finding: Finding, bad: Mapping[str, str | None], steps: Sequence[Step], commits: list[str]
                   ) -> Trial | Finding:
    made = {s.trial.commit: s for s in steps if s.trial.commit}
    used: list[Step] = []

    def verdict(commit: str) -> str | None:
        step = made.get(commit)
        if step is None:
            raise _Unmade(commit)
        used.append(step)
        return None if step.error else step.verdict

    try:
        found, tried, why = first_bad_commit(commits, verdict)
    except _Unmade as e:
        return Trial("llvm", {**bad, "llvm": e.commit}, commit=e.commit)
    extra: dict[str, Any] = {"commits": len(commits), "commit_builds_bound": max_builds(len(commits))}
    if found is None:
        extra["commit_why"] = why
    return Finding(finding.changed, finding.steps + tuple(used), culprit=finding.culprit, commit=found,
                   commit_steps=tuple(tried), extra=extra)


def bisect_inputs(good: Mapping[str, str | None], bad: Mapping[str, str | None],
                  rerun: Callable[[Trial], Step], commits: Callable[[], Sequence[str] | None] | None = None
                  ) -> Finding:
    """Make `next_trial`'s re-runs through `rerun` until it gives the Finding (at most `most_reruns` of them)."""
    steps: list[Step] = []
    listed = [0]

    def counted() -> Sequence[str] | None:
        found = commits() if commits is not None else None
        listed[0] = len(found or ())
        return found

    while True:
        nxt = next_trial(good, bad, steps, counted)
        if isinstance(nxt, Finding):
            return nxt
        if len(steps) >= most_reruns(listed[0]):  # a `rerun` whose steps do not answer what it was asked
            raise RuntimeError(f"bisect made {len(steps)} re-runs, at most {most_reruns(listed[0])}, and still "
                               f"asks for {nxt.spec}")
        steps.append(rerun(nxt))


def max_builds(n: int) -> int:
    """The issue's bound on the builds of a range of n commits, ceil(log2 n) + 1 (`first_bad_commit` keeps it)."""
    return math.ceil(math.log2(n)) + 1 if n > 1 else 1


def first_bad_commit(commits: Sequence[str], verdict: Callable[[str], str | None]
                     ) -> tuple[str | None, list[tuple[str, str | None]], str | None]:
    """The first commit of `commits` (oldest first; the last good run's commit is before them, the bad run's is the
    last) whose verdict is regression; `verdict(commit)` builds and runs it (None: the build or run failed).

    Returns (commit or None, [(commit, verdict)] in the order tried, why not). The last commit is the bad run's own
    and is trusted bad without a build (so at most ceil(log2 n) builds); a failed build cannot be skipped safely
    (the culprit may be the commit that broke it), so it stops the search and says so."""
    tried: list[tuple[str, str | None]] = []
    if not commits:
        return None, tried, "no commits between the good and the bad run"
    lo, hi = 0, len(commits) - 1  # the first bad commit is in commits[lo..hi]; commits[hi] is bad
    while lo < hi:
        mid = (lo + hi) // 2
        v = verdict(commits[mid])
        tried.append((commits[mid], v))
        if v is None:
            return None, tried, f"the build or run at commit {commits[mid]} failed"
        if v == REGRESSION:
            hi = mid
        else:
            lo = mid + 1
    return commits[lo], tried, None
