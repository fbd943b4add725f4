"""Regression history as the dashboard shows it: runs per builder, and one metric of one subject over runs.

Read from the regression history database (regression/history.py) the builders write; the
dashboard only reads it, and a farm that has not run a comparison yet has no database, which is
shown as "no runs" rather than created. The trend is LNT's picture: the heuristic's and the
policy's value per run, the runs whose verdict against the heuristic was a regression in red, and
the previous good run (the last complete run judged ok before the newest) marked, because that is
the run a regression is judged against and the one to bisect from; drawn over time with the runs
where the policy changed marked (farm/plots.py). The same runs and points are served as JSON
(`runs.json`, `trend.json`) for scripts, as LNT's users script against LNT's.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from regression import metrics
from regression.build import HEURISTIC, POLICY, build_configuration
from regression.history import History, Run
from regression.rules import HEURISTIC_BASELINE

#: The most runs one trend shows (the newest).
MAX_RUNS = 200


def open_history(path: Path | str) -> History | None:
    """The history if the farm has written one: an SQLite file that exists (never created by looking), or the
    configured PostgreSQL database (created and upgraded by whoever opens it first). One that cannot be opened (the
    server down, a refused login, a newer farm's schema) is a StoreError: the page answers 503 with its one line."""
    from farm.errors import FarmError, StoreError

    try:
        return History.existing(path)
    except FarmError as e:
        raise StoreError(str(e)) from None


def by_builder(history: History | None, limit: int = MAX_RUNS) -> dict[str, list[Run]]:
    """Runs per builder, oldest first (the newest `limit` of each)."""
    if history is None:
        return {}
    out: dict[str, list[Run]] = defaultdict(list)
    for run in history.runs():
        out[run.builder].append(run)
    return {b: runs[-limit:] for b, runs in sorted(out.items())}


@dataclass(frozen=True)
class Series:
    subject: str
    kind: str
    metric: str
    unit: str


def series_of(history: History, run: Run, modules: bool = False) -> list[Series]:
    """The (subject, metric) pairs a run measured, totals and binaries first (modules only when asked)."""
    seen: dict[tuple[str, str], Series] = {}
    for m in history.measurements(run):
        if m.kind == "module" and not modules:
            continue
        unit = m.unit or metrics.get(m.metric).unit
        seen.setdefault((m.subject, m.metric), Series(m.subject, m.kind, m.metric, unit))
    return sorted(seen.values(), key=lambda s: (s.kind == "module", s.subject, s.metric))


@dataclass(frozen=True)
class Point:
    run: Run
    heuristic: float | None
    policy: float | None
    #: the verdict of this subject and metric against the heuristic in that run (improved, regressed, ...)
    verdict: str | None
    delta_pct: float | None


def trend(history: History, runs: list[Run], subject: str, metric: str) -> list[Point]:
    """One point per complete run that measured `subject`/`metric`."""
    points = []
    for run in runs:
        if run.status != "complete":
            continue
        values = {m.policy: m.value for m in history.measurements(run) if (m.subject, m.metric) == (subject, metric)}
        if not values:
            continue
        verdict = next((c for c in history.verdicts(run) if (c.subject, c.metric, c.baseline)
                        == (subject, metric, HEURISTIC_BASELINE)), None)
        delta = verdict.delta_pct if verdict and verdict.delta_pct is not None and math.isfinite(verdict.delta_pct) \
            else None
        points.append(Point(run, values.get(HEURISTIC), values.get(POLICY), verdict.verdict if verdict else None,
                            delta))
    return points


def previous_good(history: History, runs: list[Run]) -> Run | None:
    """The last complete run judged ok before the newest complete run."""
    complete = [r for r in runs if r.status == "complete"]
    return history.previous_run(complete[-1], verdict="ok") if complete else None


def plot(points: list[Point], subject: str, metric: str, unit: str, good: Run | None) -> str:
    """The trend as an inline SVG (farm/plots.py): heuristic and policy over time, regressions red, where the
    policy changed dotted, the previous good run dashed."""
    from farm import plots

    m = metrics.get(metric)
    fig, ax = plots.subplots(9, 4)
    lines = [plots.Line(label, tuple((p.run.started, getattr(p, variant)) for p in points
                                     if getattr(p, variant) is not None), color)
             for variant, color, label in ((HEURISTIC, "#616161", "heuristic"), (POLICY, "#1565c0", "policy"))]
    regressed = [(p.run.started, p.policy) for p in points if p.verdict == "regressed" and p.policy is not None]
    shown = good if good is not None and any(p.run.seq == good.seq for p in points) else None
    plots.trend(ax, lines, changes=plots.policy_changes([(p.run.started, p.run.policy_id) for p in points]),
                regressed=regressed, good=(shown.started, shown.run_id) if shown else None,
                empty="no complete run measured this")
    ax.set_ylabel(f"{m.label} ({unit})" if unit else m.label)
    ax.set_title(f"{subject}: {m.label} ({'lower' if m.direction == 'lower' else 'higher'} is better)")
    return plots.figure_svg(fig, f"{subject} {metric} trend")


def run_json(run: Run, report: str | None) -> dict:
    """One run as the JSON endpoints give it (times as unix seconds and ISO 8601 UTC)."""
    iso = plots_iso
    return {"run_id": run.run_id, "builder": run.builder, "started": run.started, "started_utc": iso(run.started),
            "finished": run.finished, "finished_utc": iso(run.finished), "status": run.status, "verdict": run.verdict,
            "llvm_version": run.llvm_version, "llvm_commit": run.llvm_commit, "llvm_package": run.llvm_package,
            "policy_id": run.policy_id, "vocab_version": run.vocab_version, "error": run.error, "report_url": report,
            "build": build_configuration(run.config)}


def point_json(p: Point, report: str | None) -> dict:
    return {"run_id": p.run.run_id, "started": p.run.started, "started_utc": plots_iso(p.run.started),
            "policy_id": p.run.policy_id, "vocab_version": p.run.vocab_version, "heuristic": p.heuristic,
            "policy": p.policy, "delta_pct": p.delta_pct, "verdict": p.verdict, "report_url": report}


def plots_iso(t: float | None) -> str | None:
    from farm.plots import utc

    return None if t is None else utc(t).strftime("%Y-%m-%dT%H:%M:%SZ")
