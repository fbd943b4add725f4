"""The header every bench prints first: what a number in bench/README.md needs beside it to be compared.

    # bench_triplets | 2026-11-28T10:02Z | host w1 | 2 cores | load 0.21 0.35 0.40 | commit 2dcd7e1a1b2c+changes
      | LLVM 22.1.8 | Python 3.11.9     (one line)
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from bench.harness import ROOT

#: The header's fields, in the order printed.
FIELDS = ("bench", "date", "host", "cores", "load", "commit", "llvm", "python")


def load() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def commit(root: Path = ROOT) -> str:
    """The checkout's commit, `+changes` when tracked files differ from it; `unknown` outside a git checkout."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True,
                              timeout=30).stdout.strip()

    try:
        head = git("rev-parse", "--short=12", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def llvm(toolchain=None) -> str:
    """LLVM's version (and its commit, for a source build) of the farm's configured toolchain, or why not."""
    from farm.errors import FarmError
    from farm.toolchain import Toolchain

    try:
        tc = toolchain or Toolchain.from_settings()
        return tc.version + (f" ({tc.commit[:12]})" if tc.commit else "")
    except FarmError as e:
        return f"unavailable ({e})"


def fields(toolchain=None, bench: str | None = None) -> dict[str, str]:
    """This run's header fields (`FIELDS`); `bench` defaults to the running module's name."""
    name = bench or Path(sys.argv[0]).stem
    return {"bench": name, "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%MZ"),
            "host": f"host {platform.node()}", "cores": f"{os.cpu_count()} cores", "load": f"load {load()}",
            "commit": f"commit {commit()}", "llvm": f"LLVM {llvm(toolchain)}",
            "python": f"Python {platform.python_version()}"}


def format_header(values: Mapping[str, str]) -> str:
    """One line: `# `, then the fields in `FIELDS` order joined by ` | `; an unknown field is an error, a missing one
    is left out."""
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise KeyError(f"unknown header field(s): {', '.join(unknown)}")
    return "# " + " | ".join(values[k] for k in FIELDS if k in values)


def print_header(toolchain=None, bench: str | None = None) -> None:
    """Print this run's header line, flushed (before the bench's own output)."""
    print(format_header(fields(toolchain, bench)), flush=True)
