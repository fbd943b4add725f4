"""CLI verbs of this role (filled in as the role grows)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add this role's verbs to `mlgo-farm`."""
