"""Regression role: ML policy vs heuristic builds, measurements, history, reports, alerts."""
