"""CLI verbs (filled in as the role grows)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add these verbs to `mlgo-farm`."""
