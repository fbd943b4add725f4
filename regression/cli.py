"""CLI verbs of the regression role: the policy side and the comparison side."""

from __future__ import annotations

import argparse

from regression import compare_cli, policy_cli


def register(sub: argparse._SubParsersAction) -> None:
    """Add the regression role's verbs to `mlgo-farm`."""
    policy_cli.register(sub)
    compare_cli.register(sub)
