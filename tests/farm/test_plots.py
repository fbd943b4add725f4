"""The farm's plots (farm/plots.py): what a reader sees must say what the data says."""

from __future__ import annotations

import matplotlib.dates as mdates

from farm import plots


def test_a_trend_of_one_run_spans_hours_not_years() -> None:
    """matplotlib gives a single date a four-year axis (2025 to 2029 around one run); the trend shows two hours."""
    t = 1_790_000_000.0  # 2026-09-21
    _fig, ax = plots.subplots(6, 3)
    plots.trend(ax, [plots.Line("policy", ((t, 100.0),), "#1565c0")])
    lo, hi = (mdates.num2date(x).timestamp() for x in ax.get_xlim())
    assert lo <= t <= hi and hi - lo <= plots.SPAN + 1
    # runs days apart keep their own span
    _fig, ax = plots.subplots(6, 3)
    plots.trend(ax, [plots.Line("policy", ((t, 100.0), (t + 5 * 86400, 99.0)), "#1565c0")])
    lo, hi = (mdates.num2date(x).timestamp() for x in ax.get_xlim())
    assert hi - lo >= 5 * 86400 and hi - lo < 30 * 86400
