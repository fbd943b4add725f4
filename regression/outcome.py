"""The end of a regression run: verdict and alert recorded together (the alert's mail queued in the outbox), the
report rendered and published; and the command line that reproduces the comparison on another machine.

Split from compare.py, which measures and judges; this decides what the run tells whom. The alert
is composed before the report is published, with the report's address on the master's dashboard
(`[buildbot] web_url`, else http://master_host:www_port/) — what a reader of the mail can open —
rather than the store's own link (a `file://` path on the worker, or a private bucket).

A run never talks to the mail server: Celery beat's `deliver_alerts` (regression/tasks.py) sends what runs queued.
A silent or slow server used to hold every run for the length of its time-outs, and each run delivered other
builders' mails too (one run took 403 s).
"""

from __future__ import annotations

import dataclasses
import logging
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from farm.config import Settings
from farm.errors import FarmError, first_line
from farm.objectstore import store_from_settings
from regression import alerts, report, rules, unfinished
from regression.alertstore import Alert, AlertStore
from regression.database import Tx
from regression.history import History, Run, Skipped

if TYPE_CHECKING:
    from regression.request import RunRequest, RunResult

log = logging.getLogger(__name__)
#: What `regress run` assumes when an option is not given (left out of the reproducing command).
_DEFAULT_REPEATS = 5


def _sha256(path: str | Path | None) -> str | None:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path and Path(path).is_file() else None


def reproduce_command(req: RunRequest, published: str | None, vocab_id: str | None,
                      web: Callable[[str], str] | None = None, vocab_file: str | Path | None = None,
                      bench_keys: dict[str, tuple[str, str]] | None = None) -> str:
    """`mlgo-farm regress run ...` with this run's inputs, pinned: a published policy or vocabulary by its version
    (not `latest`, which moves), `--reproduce` so a reproduction writes nothing but its report where it is run
    (no `./var/`), publishes nothing and mails nobody.

    A local benchmark whose sources the run published (`bench_keys`: its name's store key and sha256,
    regression/benchsource.py) is named by its dashboard URL and sha256 with `web`, not by a farm host's path.

    With `web` (the dashboard's URL of a path: `[buildbot] web_url`), published versions are named by their
    download URLs and sha256, so the command works wherever the master's URL reaches, not only where the farm's
    store is; the policy's vocabulary is then named too (a URL policy does not bring its own)."""
    argv = ["mlgo-farm", "regress", "run"]
    if req.corpus is not None:
        argv += ["--corpus", str(req.corpus)]
    bench_args: tuple[str, ...] = ()
    for b in req.benchmarks:
        if b.local_dir is None:
            argv += ["--bench", b.name]
        elif web is not None and bench_keys and b.name in bench_keys:
            argv += ["--bench-url", web(f"store/{bench_keys[b.name][0]}"), "--bench-sha256", bench_keys[b.name][1]]
            bench_args = b.workloads[0].args if b.workloads else ()
        else:
            argv += ["--bench-dir", str(b.local_dir)]
            bench_args = b.workloads[0].args if b.workloads else ()
    argv += [f"--bench-arg={a}" for a in bench_args]
    local = [b for b in req.benchmarks if b.local_dir is not None and b.training]
    argv += [f"--bench-train-arg={a}" for a in (local[-1].training[0].args if local else ())]
    # a version the farm published (from the store, or fetched with its manifest), not a local file's digest
    vocab_published = vocab_id if vocab_id and not vocab_id.startswith("sha256-") and (
        web is not None or str(req.vocab).startswith("store:")) else None
    if web is not None and published:
        argv += ["--policy", web(f"store/policies/{req.advisor_name}/{published}/model.onnx")]
        argv += ["--policy-sha256", sha] if (sha := _sha256(req.policy)) else []
    else:
        argv += ["--policy", f"store:{published}" if published else str(req.policy)]
    argv += ["--advisor", req.advisor_name]
    if web is not None and vocab_published:
        argv += ["--vocab", web(f"store/vocab/ir/{vocab_published}/vocab.json")]
        argv += ["--vocab-sha256", sha] if (sha := _sha256(vocab_file)) else []
    elif req.vocab is not None and not published:
        argv += ["--vocab", f"store:{vocab_id}" if str(req.vocab).startswith("store:") and vocab_id else str(req.vocab)]
    argv += [f"--opt={f}" for f in req.opt_flags]
    if req.pgo:
        argv.append("--pgo")
    if req.thinlto:
        argv.append("--thinlto")
    if req.repeats != _DEFAULT_REPEATS:
        argv += ["--repeats", str(req.repeats)]
    if not req.callgrind:
        argv.append("--no-callgrind")
    if req.rules_file is not None:
        argv += ["--rules", str(req.rules_file)]
    return shlex.join([*argv, "--reproduce"])


def report_page(settings: Settings, run: Run) -> str | None:
    """Where a reader opens the run's report: its page on the dashboard when the history's link names the
    published copy (the store's own `file://` or S3 link, which only the farm's hosts can open), else that link
    (a report that stayed on the worker, e.g. after its publication failed)."""
    key = f"{report.report_prefix(run.builder, run.run_id)}/index.html"
    if run.report_url and run.report_url.endswith(f"/{key}"):
        return settings.buildbot.dashboard(f"store/{key}")
    return run.report_url


def alert_facts(settings: Settings, history: History, run: Run, kind: str | None, report_url: str) -> alerts.Facts:
    """The links and lineage an alert carries besides the table."""
    bb = settings.buildbot
    if kind == alerts.REGRESSION:
        before = history.previous_run(run, verdict=rules.RunVerdict.OK)
    else:
        before = history.previous_run(run, verdict=rules.RunVerdict.REGRESSION)
    return alerts.Facts(
        report_url=report_url, history_url=bb.dashboard(f"regression/{run.builder}/"),
        build_url=run.config.get("build_url"), reproduce=run.config.get("reproduce"), before=before,
        before_url=bb.dashboard(f"store/{report.report_prefix(before.builder, before.run_id)}/index.html")
        if before else None)


def alert_record(settings: Settings, history: History, run: Run, verdict: str, kind: str | None,
                 comparisons: list[rules.Comparison], skipped: list[Skipped], summary: str, web: str
                 ) -> Callable[[Tx], tuple | None]:
    """What the run's completion records of alerts, in its transaction (regression/alertstore.py): a transition into
    regression opens an alert, a good run closes the builder's open ones (detected-fixed), an improvement is recorded
    and not mailed; returns the mail to queue, which names the alert it opens or those it closes."""
    from regression.bisectllvm import commit_order

    store = AlertStore(history, commit_order(settings))  # LLVM revision ranges that overlap group their alerts
    facts = alert_facts(settings, history, run, kind, web) if kind is not None else None
    good = history.previous_run(run, verdict=rules.RunVerdict.OK)
    improved = kind is None and verdict == rules.RunVerdict.OK and alerts.improved(comparisons)

    def record(db: Tx) -> tuple | None:
        nonlocal facts
        page = settings.buildbot.dashboard
        to = settings.smtp.recipient_list
        hold = None
        if kind == alerts.REGRESSION and facts is not None:
            if store.open_of(db, run.builder):
                return None  # another run of the builder, completed meanwhile, opened and mailed this transition
            alert = store.open_regression(db, run, facts.before)
            facts = dataclasses.replace(facts, alert_id=alert.id, alert_url=page(f"alerts/{alert.id}/"))
            if to and alert.group_id is not None:
                if summarised(settings, history, db, alert, run, comparisons, skipped):
                    return None  # the group's mail, still queued, now tells of this alert too
                mates = db.execute("SELECT id, builder FROM alerts WHERE group_id=:group AND id<>:id ORDER BY id",
                                   {"group": alert.group_id, "id": alert.id}).fetchall()
                facts = dataclasses.replace(facts, group=(alert.group_id, tuple((m[0], m[1]) for m in mates)))
            if settings.alerts.group_wait > 0:
                hold = time.time() + settings.alerts.group_wait * 60
        elif verdict == rules.RunVerdict.OK:
            closed = store.detect_fixed(db, run)
            if facts is not None:
                facts = dataclasses.replace(facts, closes=tuple((a.id, page(f"alerts/{a.id}/")) for a in closed))
            if improved:
                store.record_improvement(db, run, good)
        if kind is None or facts is None or not to:
            return None
        msg = alerts.compose(kind, run, verdict, comparisons, skipped, summary, settings.smtp, facts)
        return kind, settings.smtp.sender, to, alerts.to_bytes(msg), facts.alert_id, hold

    return record


def summarised(settings: Settings, history: History, db: Tx, alert: Alert, run: Run,
               comparisons: list[rules.Comparison], skipped: list[Skipped]) -> bool:
    """When the mail of `alert`'s group is still queued (held for its mates, or not delivered yet), rewrite it into
    one summary of every alert of the group, this one included; False when it went out already."""
    queued = db.execute("SELECT id FROM outbox WHERE sent IS NULL AND alert_id IN (SELECT id FROM alerts WHERE"
                        " group_id=:group) ORDER BY id LIMIT 1", {"group": alert.group_id}).fetchone()
    if queued is None:
        return False
    page = settings.buildbot.dashboard
    members, shared = [], None
    for a in AlertStore.in_group(db, alert.group_id):
        this = a.id == alert.id
        bad = run if this else history.run(a.bad_run, a.builder)
        rows = report.table_rows(comparisons if this else history.verdicts(bad))
        line = report.headline(rows, rules.RunVerdict.REGRESSION, skipped if this else history.skipped(bad),
                               say_verdict=False)
        members.append(alerts.Member(a.id, a.builder, bad, a.good_run, line,
                                     page(f"alerts/{a.id}/"),
                                     page(f"store/{report.report_prefix(a.builder, a.bad_run)}/index.html")))
        common = {k: tuple(v) for k, v in a.inputs.items()}
        shared = common if shared is None else {k: v for k, v in shared.items() if common.get(k) == v}
    inputs = "; ".join(f"{k} {old or '-'} -> {new or '-'}" for k, (old, new) in (shared or {}).items()) or \
        "; ".join(f"{k} -> {alert.inputs[k][1]}" for k in alert.inputs)
    msg = alerts.compose_group(alert.group_id or alert.id, members, inputs, settings.smtp)
    db.execute("UPDATE outbox SET message=:message WHERE id=:id", {"message": alerts.to_bytes(msg), "id": queued["id"]})
    return True


def finish(req: RunRequest, settings: Settings, history: History, run: Run, verdict: str,
           comparisons: list[rules.Comparison], skipped: list[Skipped], work: Path) -> RunResult:
    """Record the verdict and queue the alert first, then render and publish the report (the beat delivers it).

    A report that cannot be written (a full disk) raises a one-line FarmError, but the run is already
    complete with its verdict and alert; `mlgo-farm regress report` renders it again later.
    """
    from regression.request import RunResult

    report_dir = work / "report"
    local = report_dir.joinpath("index.html").absolute().as_uri()
    link, web, publish_error, store = local, local, None, None
    if req.publish:
        try:
            store = store_from_settings(settings)
            key = f"{report.report_prefix(run.builder, run.run_id)}/index.html"
            link, web = store.link(key), settings.buildbot.dashboard(f"store/{key}")
        except FarmError as e:
            publish_error = str(e)
    rows = report.table_rows(comparisons)
    summary = report.summary_text(run, verdict, rows, skipped, web)
    # a bisect's re-run answers its alert's question (regression/bisectrun.py): it opens, closes and mails nothing
    bisecting = bool(run.config.get("bisect"))
    kind = None if bisecting else alerts.transition(history, run, verdict)
    record = None if bisecting else alert_record(settings, history, run, verdict, kind, comparisons, skipped,
                                                 summary, web)
    if kind is not None and not settings.smtp.recipient_list:
        log.warning("run %s: %s alert not sent: no recipients configured ([smtp] recipients)", run.run_id, kind)
    try:
        history.complete_run(run, verdict, link, record=record)
    except FarmError as e:  # the history went down at the end: the run is failed, now or once it is back
        unfinished.fail(history, settings, run, e, work)
        raise
    if kind == alerts.REGRESSION and not AlertStore(history).alerts(builder=run.builder, kind=alerts.REGRESSION,
                                                                    bad_run=run.run_id):
        kind = None  # the transition was another run's (alert_record)

    _render(history, settings, run, verdict, report_dir, web)
    if store is not None and publish_error is None:
        try:
            report.publish(store, report_dir, run.builder, run.run_id)
        except (OSError, FarmError) as e:
            publish_error = first_line(e)
            link = web = local
            history.set_report_url(run, link)
            _render(history, settings, run, verdict, report_dir, link)
            summary = report.summary_text(run, verdict, rows, skipped, link)
    if publish_error:
        log.warning("report of run %s not published: %s", run.run_id, publish_error)
    queued = kind is not None and bool(settings.smtp.recipient_list)
    return RunResult(history.run(run.run_id, run.builder), verdict, comparisons, skipped, report_dir, link,
                     kind, queued, summary, publish_error, web_url=web,
                     headline=report.headline(rows, verdict, skipped))


def _render(history: History, settings: Settings, run: Run, verdict: str, report_dir: Path, link: str) -> None:
    """Write the report of the completed `run` (its alert is queued already); a one-line FarmError if it cannot."""
    try:
        report.render(history, run, verdict, report_dir, link, settings.buildbot.dashboard)
    except (OSError, FarmError) as e:
        raise FarmError(f"run {run.run_id} of builder {run.builder} is complete ({verdict}), but its report could "
                        f"not be written to {report_dir}: {first_line(e)}; render it again with `mlgo-farm regress "
                        f"report {run.run_id} --builder {run.builder}`") from None

