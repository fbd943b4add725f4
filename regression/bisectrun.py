"""Running an alert's bisect for real: each re-run is one `regress run` of the bad run's comparison with inputs of the
good run swapped in; the result goes on the alert and, as a follow-up in the alert mail's thread, to its readers.

regression/bisect.py decides which re-runs to make and what they mean; this module makes them. A re-run is the
bad run's own recorded command (`config.reproduce`: corpus, benchmarks, flags, rules), with the policy and the
vocabulary pinned by version (`store:VERSION`, never `latest`, which moves) from the good or the bad run's lineage,
and LLVM from a toolchain that has the wanted build (`toolchains`; by default only the one this host runs). It is
recorded as a bisect run (`config.bisect`, RunRequest.bisect): judged against the alert's good run like the bad run
was, never opening or closing an alert, never mailed, never in the trend or another run's baseline
(regression/history.py NOT_BISECT, outcome.finish). So a bisect can run on any host with the inputs and the history.
"""

from __future__ import annotations

import dataclasses
import email
import email.policy
import logging
import shlex
import time
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path

from farm.config import Settings, load_settings
from farm.errors import FarmError, InputError, first_line
from farm.toolchain import Toolchain
from regression import bisect, report
from regression.alerts import new_message
from regression.alertstore import REGRESSION, Alert, AlertStore, inputs_of
from regression.bisectllvm import ToolchainCache, commit_range, is_commit
from regression.history import History, Run
from regression.request import RunRequest

log = logging.getLogger(__name__)
#: Finds a toolchain for an LLVM input value (a commit, a package version); None: none on this host.
Toolchains = Callable[[str | None], Toolchain | None]


def llvm_value(toolchain: Toolchain) -> str | None:
    """A toolchain's LLVM as a run's lineage names it (alertstore.inputs_of): commit, else package, else version."""
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
    if args.bench_url and len(dirs) == len(args.bench_url) and all(Path(d).is_dir() for d in dirs.values()):
        # the sources the command names by URL are still here, where the run read them: no fetch from the dashboard
        args.bench_dir, args.bench_url, args.bench_sha256 = [*args.bench_dir, *dirs.values()], [], []
    return request_from_args(args)


def request_for(trial: bisect.Trial, base: RunRequest, good: Run, bad: Run, alert: Alert, n: int) -> RunRequest:
    """The re-run of `trial`: the bad run's request with the swapped input's fields taken from the good run."""
    fields: dict = {}
    for pins in _pins(bad).values():
        fields.update(pins)
    if trial.swap in ("policy", "vocab"):  # LLVM is swapped by the toolchain the re-run is given
        fields.update(_pins(good)[trial.swap])
    swap = trial.swap or "control"
    if trial.swap == "llvm" and trial.inputs.get("llvm") != good.llvm_commit:  # a commit of the range, by name
        swap = f"llvm-{str(trial.inputs.get('llvm'))[:12]}"
    return dataclasses.replace(
        base, **fields, builder=bad.builder, run_id=f"{bad.run_id}.bisect{alert.id}.{n}-{swap}", publish=True,
        build_url=None, bisect={"alert": alert.id, "good_run": good.run_id, "bad_run": bad.run_id,
                                "swap": trial.swap, "inputs": trial.inputs})


def run_bisect(alert_id: int, history: History, settings: Settings | None = None,
               toolchain: Toolchain | None = None, toolchains: Toolchains | None = None,
               llvm_repo: Path | None = None, cache: ToolchainCache | None = None) -> bisect.Outcome:
    """Bisect alert `alert_id`'s changed inputs with real re-runs; keep the outcome on the alert and mail it as a
    follow-up of the alert's mail. A re-run that fails (a build, a missing toolchain) is a step with its error:
    the bisect then says it cannot decide, and why. With `llvm_repo` (a clone of llvm-project) and `cache`
    (toolchains by commit), an LLVM culprit between two commits is narrowed to its first bad commit."""
    from regression.compare import run_comparison

    settings = settings or load_settings()
    toolchain = toolchain or Toolchain.from_settings(settings)
    if toolchains is None:
        here = only(toolchain)
        toolchains = (lambda v: here(v) or cache.get(v)) if cache is not None else here
    store = AlertStore(history)
    alert = store.get(alert_id)
    if alert.kind != REGRESSION or not alert.good_run:
        raise InputError(f"alert #{alert.id} has no good run before its bad run: there is nothing to bisect")
    good, bad = history.run(alert.good_run, alert.builder), history.run(alert.bad_run, alert.builder)
    base = base_request(bad)
    started = time.time()

    def rerun(trial: bisect.Trial) -> bisect.Step:
        n = sum(1 for r in history.runs(bad.builder, bisect=True) if (r.config.get("bisect") or {}).get(
            "alert") == alert.id) + 1
        req = request_for(trial, base, good, bad, alert, n)
        t0 = time.time()
        chain = toolchains(trial.inputs.get("llvm"))
        if chain is None:
            return bisect.Step(trial, error=f"no toolchain of LLVM {trial.inputs.get('llvm')} on this host")
        try:
            result = run_comparison(req, settings, chain, history, deliver_backoff=0.05)
        except FarmError as e:
            return bisect.Step(trial, run_id=req.run_id, error=first_line(e), seconds=time.time() - t0)
        log.info("bisect of alert #%s: %s -> %s", alert.id, req.run_id, result.verdict)
        return bisect.Step(trial, run_id=req.run_id, verdict=result.verdict, seconds=time.time() - t0)

    outcome = bisect.bisect_inputs(inputs_of(good), inputs_of(bad), rerun)
    if outcome.culprit == "llvm" and llvm_repo is not None and is_commit(good.llvm_commit) and \
            is_commit(bad.llvm_commit):
        outcome = _first_bad_commit(outcome, llvm_repo, good, bad, rerun)
    result = {**outcome.as_json(), "good_run": good.run_id, "bad_run": bad.run_id, "started": started,
              "seconds": round(time.time() - started, 1),
              "links": {s.run_id: evidence_url(settings, bad.builder, s.run_id) for s in outcome.steps if s.run_id}}
    store.set_bisect(alert.id, result)
    follow_up(history, settings, store.get(alert.id), result)
    return outcome


def _first_bad_commit(outcome: bisect.Outcome, repo: Path, good: Run, bad: Run,
                      rerun: Callable[[bisect.Trial], bisect.Step]) -> bisect.Outcome:
    """Search the commits between the good and the bad run's LLVM (regression/bisectllvm.py): each tried commit is
    the bad run's comparison re-run with that commit's toolchain."""
    commits = commit_range(repo, str(good.llvm_commit), str(bad.llvm_commit))
    steps: list[bisect.Step] = []

    def verdict(commit: str) -> str | None:
        step = rerun(bisect.Trial("llvm", {**inputs_of(bad), "llvm": commit}))
        steps.append(step)
        return None if step.error else step.verdict

    found, tried, why = bisect.first_bad_commit(commits, verdict)
    extra = {"commits": len(commits), "commit_builds_bound": bisect.max_builds(len(commits))}
    if found is None:
        return dataclasses.replace(outcome, steps=outcome.steps + tuple(steps), commit_steps=tuple(tried),
                                   extra={**extra, "commit_why": why})
    return dataclasses.replace(outcome, steps=outcome.steps + tuple(steps), commit=found, commit_steps=tuple(tried),
                               extra=extra)


def evidence_url(settings: Settings, builder: str, run_id: str) -> str:
    """A re-run's report on the dashboard (each re-run publishes its report like a night's)."""
    return settings.buildbot.dashboard(f"store/{report.report_prefix(builder, run_id)}/index.html")


def _thread(history: History, alert: Alert) -> tuple[str | None, str | None]:
    """The Message-ID and Subject of the alert's own mail (or its group's summary): the thread to answer in."""
    ids = {alert.id}
    if alert.group_id is not None:
        ids |= {a.id for a in AlertStore(history).alerts(group_id=alert.group_id)} | {alert.group_id}
    for m in history.outbox():
        if m.alert_id in ids and m.kind == REGRESSION:
            first = email.message_from_bytes(m.message, policy=email.policy.default)
            return first["Message-ID"], " ".join(str(first["Subject"]).split())
    return None, None


def compose(alert: Alert, result: dict, smtp, page: str, parent: str | None, subject: str | None) -> EmailMessage:
    """The follow-up mail: the culprit (or why none) and every re-run with its verdict, time and report."""
    msg = new_message(f"Re: {subject}" if subject else f"[mlgo-farm] bisect of alert #{alert.id} ({alert.builder})",
                      smtp)
    if parent:
        msg["In-Reply-To"] = parent
        msg["References"] = parent
    lines = [f"Bisect of alert #{alert.id} ({alert.builder}; good run {result['good_run']}, bad run "
             f"{result['bad_run']}):", "", f"  {result['sentence']}", "", f"Alert:  {page}",
             "Changed inputs: " + (", ".join(f"{k} {a or '-'} -> {b or '-'}"
                                             for k, (a, b) in result["changed"].items()) or "none"),
             f"Re-runs: {len(result['steps'])} in {result['seconds']:.0f} s (bisect runs: no alert, not in the trend)",
             ""]
    for s in result["steps"]:
        what = "control (the bad run's inputs)" if s["swap"] is None else f"{s['swap']} swapped back"
        said = s["verdict"] or f"failed: {s['error']}"
        lines.append(f"  {s['run_id'] or '-'}: {what}: {said} ({s['seconds']:.0f} s)")
        if s["run_id"] in result["links"]:
            lines.append(f"      {result['links'][s['run_id']]}")
    msg.set_content("\n".join(lines) + "\n")
    return msg


def follow_up(history: History, settings: Settings, alert: Alert, result: dict) -> None:
    """Queue the follow-up in the outbox and deliver it (nobody configured: logged, as alert mails are)."""
    from regression import alerts, outcome

    to = settings.smtp.recipient_list
    if not to:
        log.warning("bisect of alert #%s not mailed: no recipients configured ([smtp] recipients)", alert.id)
        return
    parent, subject = _thread(history, alert)
    msg = compose(alert, result, settings.smtp, settings.buildbot.dashboard(f"alerts/{alert.id}/"), parent, subject)
    history.queue(alert.bad_run, alert.builder, "bisect", settings.smtp.sender, to, alerts.to_bytes(msg), alert.id)
    outcome.deliver(history, settings, 0.05)
