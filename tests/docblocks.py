"""The command lines the docs show, read from the page itself, and run as a reader runs them: a test that runs
them keeps the page and the farm from drifting apart (README.md, docs/policies.md)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from farm.toolchain import Toolchain

ROOT = Path(__file__).resolve().parents[1]


def sh_block(page: str, heading: str, ends: str = "\n#") -> list[str]:
    """The lines of the first ```sh block under `heading` (as written, `## Name` or `### Name`) of `page` (relative
    to the checkout), looked for before `ends` (the next heading, by default of any level)."""
    text = (ROOT / page).read_text(encoding="utf-8").split(f"\n{heading}\n", 1)[1].split(ends, 1)[0]
    return text.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()


def run_sh(script: str, where: Path, toolchain: Toolchain, timeout: float = 600) -> subprocess.CompletedProcess:
    """`script` run by bash in `where`, stopping at the first failing line, with the toolchain's LLVM first on PATH
    (as a reader with LLVM 22 installed has it); a failure is the assertion, with the end of its stderr."""
    env = {**os.environ, "PATH": f"{toolchain.bin_dir}:{os.environ['PATH']}"}
    got = subprocess.run(["bash", "-c", "set -e\n" + script], cwd=where, env=env, capture_output=True, text=True,
                         timeout=timeout)
    assert got.returncode == 0, f"exit {got.returncode}: {got.stderr[-2000:]}"
    return got
