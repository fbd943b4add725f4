"""The farm's plots, in one place: matplotlib set up for a daemon, a figure as inline SVG or PNG, and the trend.

Every picture the farm draws (the dashboard's trend, diff and training plots, the regression
report's PNGs) is made here or with these helpers, so the backend is chosen once (Agg: the master
and the workers have no display) and a trend looks the same in a report and on a page.

SVG for pages: inline SVG needs no second request and no image file anywhere, and with text kept
as text (`svg.fonttype: none`) the labels stay searchable and selectable in the page; a fixed hash
salt makes the same data give the same markup (element ids included), so a page can be cached and
compared.

A trend is drawn against time (when each run started, UTC), not against run ids: nightly runs
that were skipped or forced twice in a day keep their real distance, and the axis says when. A
dotted vertical line marks each run where the policy changed, since that is where a step in the
line is expected; regressions are red; the previous good run (the one a regression is judged
against and bisected from) is a dashed green line.
"""

from __future__ import annotations

import html
import io
import itertools
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path


def subplots(width: float, height: float):
    """A figure and its axes on matplotlib's Agg backend (the master is a daemon with no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def figure_svg(fig, title: str) -> str:
    """The figure as an `<svg>` element (no XML prolog or DOCTYPE), closed afterwards."""
    import matplotlib
    import matplotlib.pyplot as plt

    try:
        fig.tight_layout()
        buf = io.StringIO()
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "mlgo-farm"}):
            fig.savefig(buf, format="svg", metadata={"Date": None, "Title": title})
    finally:
        plt.close(fig)
    text = buf.getvalue()
    svg = text[text.find("<svg"):]
    # a role and label for screen readers; the scalable size follows the page width
    label = html.escape(title, quote=True)
    return re.sub(r"<svg ", lambda _: f'<svg role="img" aria-label="{label}" class="plot" ', svg, count=1)


def save_png(fig, path: Path, dpi: int = 100) -> None:
    """The figure as a PNG file (a report read offline), closed afterwards."""
    import matplotlib.pyplot as plt

    try:
        fig.tight_layout()
        fig.savefig(path, dpi=dpi)
    finally:
        plt.close(fig)


def utc(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


@dataclass(frozen=True)
class Line:
    label: str
    #: (when the run started, unix seconds; value)
    points: tuple[tuple[float, float], ...]
    color: str | None = None


#: The least time a trend's axis shows (seconds): around a single run, two hours, not the four years matplotlib's
#: date axis gives a single point.
SPAN = 7200.0


def trend(ax, lines: list[Line], *, changes: list[tuple[float, str]] = (), regressed: list[tuple[float, float]] = (),
          good: tuple[float, str] | None = None, baseline: float | None = None, empty: str = "no runs") -> None:
    """Draw `lines` over time on `ax`: `changes` (when, what: "policy P2") as dotted lines with their label,
    `regressed` points in red, the previous `good` run (when, its id) dashed, a horizontal `baseline`."""
    import matplotlib.dates as mdates

    for line in lines:
        if line.points:
            ax.plot([utc(t) for t, _ in line.points], [v for _, v in line.points], marker="o", markersize=4,
                    color=line.color, label=line.label)
    if regressed:
        ax.scatter([utc(t) for t, _ in regressed], [v for _, v in regressed], s=70, color="#c62828", zorder=3,
                   label="regressed")
    for t, what in changes:
        ax.axvline(utc(t), color="#6a1b9a", linestyle=":", linewidth=1.2)
        ax.annotate(what, xy=(utc(t), 1.0), xycoords=("data", "axes fraction"), xytext=(2, -2),
                    textcoords="offset points", rotation=90, va="top", ha="left", fontsize=7, color="#6a1b9a")
    if changes:
        ax.plot([], [], color="#6a1b9a", linestyle=":", label="policy changed")
    if good is not None:
        ax.axvline(utc(good[0]), color="#2e7d32", linestyle="--", linewidth=1, label=f"previous good ({good[1]})")
    if baseline is not None:
        ax.axhline(baseline, color="black", linewidth=0.8, linestyle="--")
    if any(line.points for line in lines):
        times = [t for line in lines for t, _ in line.points]
        if max(times) - min(times) < SPAN:  # one run (or runs minutes apart): matplotlib would span four years
            ax.set_xlim(utc(min(times) - SPAN / 2), utc(max(times) + SPAN / 2))
        locator = mdates.AutoDateLocator(tz=UTC)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=UTC))
        ax.set_xlabel("run started (UTC)")
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes)


def policy_changes(runs: list[tuple[float, str | None]]) -> list[tuple[float, str]]:
    """(when, "policy P") for each run whose policy differs from the run before it: (started, policy id) pairs in
    time order."""
    out = []
    for (_, before), (t, now) in itertools.pairwise(runs):
        if now != before:
            out.append((t, f"policy {now or '-'}"))
    return out
