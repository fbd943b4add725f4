"""The regression pages: every builder's recent runs, one builder's runs with its series, one series' trend (an
inline SVG), and the JSON of each for scripts (`regression/index.json`, `BUILDER/runs.json`, `BUILDER/trend.json`).

What they show is the regression history the builders write (master/dashboard/trends.py reads it), at the time of
the request. The JSON's links are absolute URLs from the configured `[buildbot] web_url` (context.public), so a
script that fetched one document can follow them from anywhere.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, render_template, request, url_for

from master.dashboard import trends
from master.dashboard.context import current_farm, json_answer, public
from master.dashboard.templating import report_link
from regression import metrics

bp = Blueprint("regression", __name__)


def _unit(history: Any, points: list, subject: str, metric: str, default: str) -> str:
    """The unit a trend's newest run recorded for (subject, metric): the page and its JSON say the same."""
    return next((s.unit for s in trends.series_of(history, points[-1].run, modules=True)
                 if (s.subject, s.metric) == (subject, metric)), default)


def _runs(builder: str):
    """The history and `builder`'s runs, oldest first (a 404 when it has none)."""
    history = trends.open_history(current_farm().history_path)
    runs = trends.by_builder(history).get(builder)
    if history is None or not runs:
        abort(404)
    return history, runs


def _trend(builder: str) -> tuple[Any, list, str, str, list]:
    """The history, `builder`'s runs, the (subject, metric) the query asks for and its trend (empty: never measured)."""
    history, runs = _runs(builder)
    subject, metric = request.args.get("subject", ""), request.args.get("metric", "")
    return history, runs, subject, metric, trends.trend(history, runs, subject, metric)


@bp.route("/regression/")
def regression_index():
    history = trends.open_history(current_farm().history_path)
    return render_template("regression_index.html", builders=trends.by_builder(history, limit=20))


@bp.route("/regression/<builder>/")
def regression_builder(builder: str):
    history, runs = _runs(builder)
    complete = [r for r in runs if r.status == "complete"]
    newest = complete[-1] if complete else runs[-1]
    return render_template("regression_builder.html", builder=builder, runs=list(reversed(runs)),
                           series=trends.series_of(history, newest, modules=request.args.get("modules") == "1"),
                           good=trends.previous_good(history, runs))


@bp.route("/regression/index.json")
def regression_index_json():
    history = trends.open_history(current_farm().history_path)
    return json_answer({"format": 1, "builders": {
        b: {"runs": public(url_for("regression.regression_runs_json", builder=b)), "newest": trends.run_json(
            runs[-1], public(report_link(runs[-1])))} for b, runs in trends.by_builder(history, limit=1).items()}})


@bp.route("/regression/<builder>/runs.json")
def regression_runs_json(builder: str):
    history, runs = _runs(builder)
    good = trends.previous_good(history, runs)
    return json_answer({"format": 1, "builder": builder, "previous_good": good.run_id if good else None,
                        "series": [{"subject": s.subject, "kind": s.kind, "metric": s.metric, "unit": s.unit,
                                    "trend": public(url_for("regression.regression_trend_json", builder=builder,
                                                            subject=s.subject, metric=s.metric))}
                                   for s in trends.series_of(history, runs[-1], modules=True)],
                        "runs": [trends.run_json(r, public(report_link(r))) for r in reversed(runs)]})


@bp.route("/regression/<builder>/trend.json")
def regression_trend_json(builder: str):
    history, runs, subject, metric, points = _trend(builder)
    if not points:
        abort(404, description=f"no complete run of {builder} measured {subject!r} {metric!r}")
    m = metrics.get(metric)
    good = trends.previous_good(history, runs)
    return json_answer({"format": 1, "builder": builder, "subject": subject, "metric": metric,
                        "unit": _unit(history, points, subject, metric, m.unit),
                        "better": m.direction, "previous_good": good.run_id if good else None,
                        "points": [trends.point_json(p, public(report_link(p.run))) for p in points]})


@bp.route("/regression/<builder>/trend")
def regression_trend(builder: str):
    history, runs, subject, metric, points = _trend(builder)
    if not points:
        abort(404)
    unit = _unit(history, points, subject, metric, "")
    good = trends.previous_good(history, runs)
    return render_template("regression_trend.html", builder=builder, subject=subject, metric=metric, unit=unit,
                           points=list(reversed(points)), good=good,
                           plot=trends.plot(points, subject, metric, unit, good))
