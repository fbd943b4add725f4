"""CLI verbs of the comparison side: `mlgo-farm regress run|history|report` (and the alerts' `regress alerts`,
`regress alert ...` and `regress bisect`: regression/alerts/verbs.py)."""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from farm.answer import Answer, json_option
from farm.cli import positive_int
from farm.errors import EXIT_NOT_IDENTICAL, EXIT_REGRESSION
from regression import runargs
from regression.runargs import DEFAULT_BUILDER, request_from_args


def _open(args: argparse.Namespace):
    from regression.compare import open_history
    from regression.history import History

    return History(args.history) if args.history else open_history()


def _run(args: argparse.Namespace) -> int:
    from regression.compare import run_comparison

    if args.reproduce or args.report_dir or args.mail:
        return _reproduce(args)
    req = request_from_args(args)
    result = run_comparison(req, history=_open(args))
    return _answer(args, result)


def _reproduce(args: argparse.Namespace) -> int:
    """`regress run --reproduce`: the run in a temporary directory (its fetched inputs, work files and history,
    removed afterwards; the settings' var_dir is never created), nothing published, nobody mailed unless `--mail`;
    only its report is kept, in --report-dir."""
    import dataclasses
    import shutil
    import tempfile

    from farm.config import load_settings
    from farm.errors import InputError
    from regression.compare import run_comparison
    from regression.history import History

    if args.history:
        raise InputError("--reproduce keeps its history in a temporary directory: drop --history")
    out = Path(args.report_dir or runargs.REPORT_DIR).absolute()
    # a previous reproduction's report (its results.json) is replaced; anything else is left alone
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / "results.json").is_file())):
        raise InputError(f"report directory {out} exists and holds no report: name another with --report-dir")
    settings = load_settings()
    with tempfile.TemporaryDirectory(prefix="mlgo-farm-reproduce-") as tmp:
        var = Path(tmp) / "var"
        settings = dataclasses.replace(
            settings, paths=dataclasses.replace(settings.paths, var_dir=str(var)),
            smtp=settings.smtp if args.mail else dataclasses.replace(settings.smtp, recipients=""))
        req = dataclasses.replace(request_from_args(args, Path(tmp) / "bench"), publish=False)
        history = History(var / "regression" / "history.sqlite")
        result = run_comparison(req, settings=settings, history=history)
        mail = {"mailed": False, "error": None, "server": f"{settings.smtp.host}:{settings.smtp.port}"}
        if args.mail and result.queued:  # no beat ever sees this temporary history: its mail goes now or never
            from regression.alerts.delivery import deliver_pending

            delivery = deliver_pending(history, settings.smtp, held=True)
            for e in delivery.errors:
                logging.getLogger(__name__).warning("%s", e)
            mail["mailed"] = delivery.sent > 0 and delivery.pending == 0
            mail["error"] = "; ".join(delivery.errors) or None
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(result.report_dir, out)
        here = (out / "index.html").as_uri()
        result.summary = result.summary.replace(result.report_url, here)
    result.report_dir, result.report_url, result.web_url = out, here, here
    return _answer(args, result, reproduction={"asked": bool(args.mail), **mail})


def _answer(args: argparse.Namespace, result, reproduction: Mapping[str, Any] | None = None) -> Answer:
    from regression.rules import RunVerdict

    differ = not_identical(result.comparisons) if args.expect_identical else ""
    fields = {"run_id": result.run.run_id, "builder": result.run.builder, "verdict": result.verdict,
              "headline": result.headline, "report": str(result.report_dir), "report_url": result.report_url,
              "web_url": result.web_url, "publish_error": result.publish_error, "alert": result.alert,
              "queued": result.queued, "not_identical": differ or None,
              **({"reproduction": dict(reproduction)} if reproduction is not None else {})}
    code = EXIT_NOT_IDENTICAL if differ else \
        EXIT_REGRESSION if args.fail_on_regression and result.verdict == RunVerdict.REGRESSION else 0
    # the report's own summary (regression/report.py) comes first for people; the fields carry its facts
    return Answer(fields, lambda f: result.summary + _run_said(f), code)


def _run_said(f: Mapping[str, Any]) -> str:
    lines = [f"report: {f['report']}", f"verdict: {f['headline']}"]
    if f["publish_error"]:
        lines.append(f"report not published: {f['publish_error']}")
    said = f.get("reproduction")
    if f["alert"] and said and not said["asked"]:
        lines.append(f"alert: {f['alert']}, not mailed (a reproduction: --mail mails [smtp] recipients)")
    elif f["alert"] and said and f["queued"] and not said["mailed"]:
        lines.append(f"alert: {f['alert']} NOT mailed: {said['error'] or 'not sent'}; a reproduction's outbox is "
                     f"removed with it, so nothing sends it later (is a mail server listening on {said['server']}? "
                     "`mlgo-farm stack up` starts the local sink)")
    elif f["alert"] and not f["queued"]:
        lines.append(f"alert: {f['alert']}, not sent: no recipients configured ([smtp] recipients)")
    elif f["alert"] and not f.get("reproduction"):
        lines.append(f"alert: {f['alert']} queued in the outbox (Celery beat delivers it within a minute; "
                     "`mlgo-farm regress alerts --flush` now)")
    elif f["alert"]:
        lines.append(f"alert: {f['alert']} mailed through {said['server']}")
    if f["not_identical"]:
        lines.append(f"control failed: the policy build is not the heuristic build ({f['not_identical']})")
    return "\n".join(lines)


def not_identical(comparisons) -> str:
    """'' when every .text size of the policy build equals the heuristic's exactly, else the first that differs."""
    from regression.metrics import TEXT_SIZE
    from regression.rules import HEURISTIC_BASELINE

    sizes = [c for c in comparisons if c.metric == TEXT_SIZE.name and c.baseline == HEURISTIC_BASELINE]
    if not sizes:
        return "no .text size was compared"
    bad = next((c for c in sizes if c.value != c.base_value), None)
    return "" if bad is None else f"{bad.subject}: {bad.value:g} vs {bad.base_value:g} bytes"


def llvm_label(run) -> str:
    """The run's LLVM commit (12 digits), else its package version (Debian's clang has no commit)."""
    return run.llvm_label


def _history(args: argparse.Namespace) -> int:
    from regression.report import ratio_history

    history = _open(args)
    runs = history.runs(args.builder, limit=args.limit)
    if not runs and args.builder and args.builder != DEFAULT_BUILDER:  # a typo is not "no runs yet"
        from farm.cli import registered_builders

        if args.builder not in registered_builders():
            from farm.errors import InputError

            have = history.builders()
            raise InputError(f"unknown builder {args.builder!r}: no runs in {history.where} and the master registers "
                             f"no such builder (builders with runs: {', '.join(have) or 'none'})")
    if args.json:
        print(json.dumps([{**r.__dict__, "ratios": ratio_history(history, r, limit=1)[-1][2]
                           if r.status == "complete" else {}} for r in runs], indent=1))
        return 0
    if not runs:
        print("no runs" + (f" of builder {args.builder}" if args.builder else ""))
        return 0
    head = ("run", "builder", "status", "verdict", "policy", "vocab", "llvm", "ratios (policy/heuristic)")
    rows = [head]
    for r in runs:
        ratios = ratio_history(history, r, limit=1)[-1][2] if r.status == "complete" else {}
        text = ", ".join(f"{k} {v:.4f}" for k, v in ratios.items()) or (r.error or "")[:60]
        rows.append((r.run_id, r.builder, r.status, r.verdict or "-", r.policy_id or "-", r.vocab_version or "-",
                     llvm_label(r), text))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head) - 1)]  # the last column is free text
    for row in rows:
        print("  ".join([*(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)), row[-1]]).rstrip())
    return 0


def _report(args: argparse.Namespace) -> int:
    from farm.config import load_settings
    from farm.errors import FarmError, InputError
    from farm.objectstore import store_from_settings
    from regression import report
    from regression.compare import run_dir
    from regression.outcome import report_page

    settings = load_settings()
    history = _open(args)
    run = history.run(args.run_id, args.builder) if args.run_id else history.latest_run(args.builder)
    if run.status != "complete":
        raise InputError(f"run {run.run_id} of builder {run.builder} is {run.status}: no verdict to report")
    out = Path(args.output) if args.output else run_dir(settings, run.builder, run.run_id) / "report"
    page = settings.buildbot.dashboard(f"store/{report.report_prefix(run.builder, run.run_id)}/index.html")
    # the summary names the report as a reader opens it: the dashboard's page once published, not the store's link
    link = page if args.publish else report_page(settings, run)
    try:
        report.render(history, run, run.verdict, out, link, settings.buildbot.dashboard)
    except OSError as e:
        raise FarmError(f"report of run {run.run_id} cannot be written to {out}: {e.strerror or e}") from None
    if args.publish:
        link = report.publish(store_from_settings(settings), out, run.builder, run.run_id)
        history.set_report_url(run, link)  # the store's own link, as a run that published it records
    print((out / "summary.txt").read_text(), end="")
    print(f"report: {out}" + (f"\npublished: {link}\npage: {page}" if args.publish else ""))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `regress run|history|report` to `mlgo-farm`, and the alerts' verbs (regression/alerts/verbs.py)."""
    reg = sub.add_parser("regress", help="compare an ML policy with the heuristic: run, history, report, alerts")
    rsub = reg.add_subparsers(dest="regress_verb", metavar="VERB", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--history", metavar="DB",
                        help="history database: an SQLite file's path or a postgresql://USER@HOST/DB URL (default: "
                             "[regression] history_url, else VAR/regression/history.sqlite)")

    run = rsub.add_parser("run", parents=[common, json_option()],
                          help="build heuristic vs policy, measure, judge, report and alert on transitions")
    runargs.add_options(run)
    run.set_defaults(func=_run)

    hist = rsub.add_parser("history", parents=[common], help="list runs with verdicts and policy/heuristic ratios")
    hist.add_argument("--builder", help="only this builder's runs")
    hist.add_argument("--limit", type=positive_int, default=20, help="newest N runs (default 20)")
    hist.add_argument("--json", action="store_true", help="machine-readable output")
    hist.set_defaults(func=_history)

    rep = rsub.add_parser("report", parents=[common], help="render (and optionally publish) the report of a run")
    rep.add_argument("run_id", nargs="?", help="run id (default: the builder's latest run)")
    rep.add_argument("--builder", default=DEFAULT_BUILDER)
    rep.add_argument("-o", "--output", help="report directory (default: the run's own)")
    rep.add_argument("--publish", action="store_true", help="upload to the object store under regression/")
    rep.set_defaults(func=_report)

    from regression.alerts import verbs

    verbs.register(rsub, common)

