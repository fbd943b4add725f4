"""Narrowing an LLVM culprit to its first bad commit: toolchains cached by commit, built only when a bisect needs one.

When the input bisect (regression/bisect.py, regression/bisectrun.py) names LLVM and both runs name a commit, the
commits between them (`git rev-list --ancestry-path good..bad` in a clone of llvm-project) are searched with
`bisect.first_bad_commit`: each commit tried is built into a toolchain, the bad run's comparison is re-run with it
(a bisect run, like the input re-runs) and its verdict steers the search. A full LLVM build takes hours on two
cores, so every toolchain is kept by commit (`ToolchainCache`): the nights' own builds are hits, the search builds
at most ceil(log2 n) of n commits, and a second bisect over the same range builds nothing.

How a commit becomes a toolchain is the cache's `build(commit, dest) -> bin dir`, given by the caller: the tests give
a small stand-in; wiring the farm's `llvm-build` step (workers/llvm_build.py) to it, on the workers that build LLVM,
is not done yet. The commit is always a 40-hex name checked here and the builder is code, never a build property (no
build property chooses an executable).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from farm.errors import FarmError, InputError, first_line
from farm.toolchain import Toolchain

_COMMIT = re.compile(r"[0-9a-f]{40}")
Build = Callable[[str, Path], Path]


def is_commit(value: str | None) -> bool:
    return bool(value and _COMMIT.fullmatch(value))


def commit_range(repo: Path, good: str, bad: str) -> list[str]:
    """The commits after `good` up to `bad` (inclusive), oldest first, on the ancestry path between them."""
    for c in (good, bad):
        if not is_commit(c):
            raise InputError(f"not an LLVM commit: {c!r} (a range needs two 40-hex commits)")
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-list", "--reverse", "--ancestry-path", f"{good}..{bad}"],
                             check=True, capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError) as e:
        err = getattr(e, "stderr", None) or str(e)
        raise FarmError(f"cannot list the commits {good[:12]}..{bad[:12]} in {repo}: {first_line(err)}") from None
    return out.split()


class ToolchainCache:
    """Toolchains by LLVM commit under `root/COMMIT/`; `built` lists the commits this cache built (not found)."""

    def __init__(self, root: Path, build: Build) -> None:
        self.root, self.build = Path(root), build
        self.built: list[str] = []

    def get(self, commit: str | None) -> Toolchain | None:
        """The commit's toolchain, built once; None for what is no commit or does not build (the caller says so)."""
        if not is_commit(commit):
            return None
        done = self.root / str(commit) / "bin-dir"
        if done.is_file():
            return Toolchain(Path(done.read_text().strip()))
        done.parent.mkdir(parents=True, exist_ok=True)
        try:
            bin_dir = self.build(str(commit), done.parent)
        except (OSError, FarmError, subprocess.SubprocessError):
            return None
        self.built.append(str(commit))
        done.write_text(str(bin_dir))  # written last: a build that died half-way is not a hit
        return Toolchain(Path(bin_dir))
