"""Regression history as the dashboard shows it: runs per builder, and one metric of one subject over runs.

Read from the regression history database (regression/history.py) the builders write; the
dashboard only reads it, and a farm that has not run a comparison yet has no database, which is
shown as "no runs" rather than created. The trend is LNT's picture: the heuristic's and the
policy's value per run, the runs whose verdict against the heuristic was a regression in red, and
the previous good run (the last complete run judged ok before the newest) marked, because that is
the run a regression is judged against and the one to bisect from.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from regression import metrics
from regression.build import HEURISTIC, POLICY
from regression.history import History, Run
from regression.rules import HEURISTIC_BASELINE

#: The most runs one trend shows (the newest).
MAX_RUNS = 200


def open_history(path: Path) -> History | None:
    """The history if the farm has written one (never created by looking)."""
    return History(path) if Path(path).is_file() else None


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
    """The trend as an inline SVG: heuristic and policy lines, regressions red, the previous good run marked."""
    from master.dashboard.svg import figure_svg, subplots

    m = metrics.get(metric)
    fig, ax = subplots(9, 4)
    x = list(range(len(points)))
    for policy, color, label in ((HEURISTIC, "#616161", "heuristic"), (POLICY, "#1565c0", "policy")):
        xs = [i for i, p in zip(x, points, strict=True) if getattr(p, policy) is not None]
        ax.plot(xs, [getattr(points[i], policy) for i in xs], marker="o", markersize=4, color=color, label=label)
    bad = [i for i, p in enumerate(points) if p.verdict == "regressed" and p.policy is not None]
    if bad:
        ax.scatter(bad, [points[i].policy for i in bad], s=70, color="#c62828", zorder=3, label="regressed")
    at = next((i for i, p in enumerate(points) if good is not None and p.run.seq == good.seq), None)
    if at is not None:
        ax.axvline(at, color="#2e7d32", linestyle="--", linewidth=1, label=f"previous good ({good.run_id})")
    step = max(1, len(points) // 12)
    ticks = x[::-1][::step][::-1]
    ax.set_xticks(ticks, [points[i].run.run_id for i in ticks], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(f"{m.label} ({unit})" if unit else m.label)
    ax.set_title(f"{subject}: {m.label} ({'lower' if m.direction == 'lower' else 'higher'} is better)")
    if points:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no complete run measured this", ha="center", va="center", transform=ax.transAxes)
    return figure_svg(fig, f"{subject} {metric} trend")
