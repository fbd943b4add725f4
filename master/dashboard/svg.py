"""Matplotlib figures as inline SVG for the dashboard's pages: farm/plots.py, where every plot of the farm is set
up (kept as this name for the pages' plot modules)."""

from farm.plots import figure_svg, subplots

__all__ = ["figure_svg", "subplots"]
