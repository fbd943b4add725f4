"""The `mlgo-farm` entry point itself: usage errors are one line and exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("argv, says", [
    (["vocab", "show", "--kind", "bogus"], "mlgo-farm vocab show: error: argument --kind: invalid choice: 'bogus'"),
    (["triplets", "ir"], "mlgo-farm triplets: error: the following arguments are required"),
    (["no-such-verb"], "mlgo-farm: error: argument VERB: invalid choice: 'no-such-verb'"),
])
def test_usage_errors_are_one_line(argv: list[str], says: str) -> None:
    p = subprocess.run([sys.executable, "-m", "farm.cli", *argv], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith(says) and p.stderr.endswith("--help)\n")
    assert p.stderr.count("\n") == 1, p.stderr
