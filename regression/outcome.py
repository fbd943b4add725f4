"""The end of a regression run: its verdict recorded (with what its alert records, in the same transaction:
regression/alerts/lifecycle.py), the report rendered and published; and the command line that reproduces the
comparison on another machine.

Split from compare.py, which measures and judges; this records the verdict and says where to read it. The alert
is composed before the report is published, with the report's address on the master's dashboard
(`[buildbot] web_url`, else http://master_host:www_port/) — what a reader of the mail can open —
rather than the store's own link (a `file://` path on the worker, or a private bucket).

A run never talks to the mail server: it queues its alert's mail, and Celery beat's pass sends it
(regression/alerts/delivery.py). A silent or slow server used to hold every run for the length of its time-outs,
and each run delivered other builders' mails too (one run took 403 s).
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from farm.config import Settings
from farm.errors import FarmError, first_line
from farm.objectstore import store_from_settings
from regression import report, rules, unfinished
from regression.alerts import lifecycle
from regression.alerts.records import REGRESSION
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
    kind = None if bisecting else lifecycle.transition(history, run, verdict)
    record = None if bisecting else lifecycle.alert_record(settings, history, run, verdict, kind, comparisons,
                                                           skipped, summary, web)
    try:
        history.complete_run(run, verdict, link, record=record)
    except FarmError as e:  # the history went down at the end: the run is failed, now or once it is back
        unfinished.fail(history, settings, run, e, work)
        raise
    if kind == REGRESSION and not lifecycle.opened(history, run):
        kind = None  # the transition was another run's

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

