"""Matplotlib figures as inline SVG for the dashboard's pages.

Inline SVG needs no second request and no image file anywhere, and with text kept as text
(`svg.fonttype: none`) the labels stay searchable and selectable in the page; a fixed hash salt
makes the same data give the same markup (element ids included), so a page can be cached and
compared.
"""

from __future__ import annotations

import html
import io
import re


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
    start = text.find("<svg")
    svg = text[start:]
    # a role and label for screen readers; the scalable size follows the page width
    label = html.escape(title, quote=True)
    return re.sub(r"<svg ", lambda _: f'<svg role="img" aria-label="{label}" class="plot" ', svg, count=1)


def subplots(width: float, height: float):
    """A figure and its axes on matplotlib's Agg backend (the master is a daemon with no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))
