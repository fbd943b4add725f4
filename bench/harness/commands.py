"""The farm's command as the benches start it: niced and echoed (`farm`), or from another checkout (`farm_cli`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.harness import MLGO_FARM, ROOT


def farm(*args: str, nice: int = 15) -> None:
    """`mlgo-farm ARGS`, echoed, run niced from the repository's root (the machine is shared); fails the bench if the
    verb fails."""
    print("$ mlgo-farm " + " ".join(args), flush=True)
    subprocess.run(["nice", "-n", str(nice), MLGO_FARM, *args], check=True, cwd=ROOT)


def farm_cli(tree: Path | None = None) -> list[str]:
    """The argv prefix that runs the farm's CLI (`... VERB ARGS`) with this checkout's code, or with the code of another
    checkout `tree` (`git archive REV | tar -x -C DIR`: the code before a change) and this one's configuration:
    `tree` first on the module path (PYTHONPATH), and `-P` so that the working directory does not come before it."""
    if tree is None:
        return [sys.executable, "-m", "farm.cli"]
    return ["env", f"PYTHONPATH={Path(tree).absolute()}", sys.executable, "-P", "-m", "farm.cli"]
