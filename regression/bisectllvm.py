"""Narrowing an LLVM culprit to its first bad commit: toolchains cached by commit, built only when a bisect needs one.

When the input bisect (regression/bisect.py, regression/bisectrun.py) names LLVM and both runs name a commit, the
commits between them (`git rev-list --ancestry-path good..bad` in a clone of llvm-project) are searched with
`bisect.first_bad_commit`: each commit tried is built into a toolchain, the bad run's comparison is re-run with it
(a bisect run, like the input re-runs) and its verdict steers the search. A full LLVM build takes hours on two
cores, so every toolchain is kept by commit (`ToolchainCache`): the nights' own builds are hits, the search builds
at most ceil(log2 n) of n commits, and a second bisect over the same range builds nothing.

How a commit becomes a toolchain is the cache's `build(commit, dest) -> bin dir`. On the farm (`farm_cache`) it is the
farm's own LLVM build, the `llvm-build` verb's plan and run (workers/llvm_build.py: git checkout of `[llvm] repo`,
CMake, Ninja) into `<var_dir>/bisect/toolchains/COMMIT/`, on the workers that build LLVM (the `big` ones: the
`regression-bisect-llvm` builder); the tests' llvm-project stand-in is a git repository whose `llvm/` is a small CMake
project, built by that same code. The commit is always a 40-hex name checked here and the builder is code, never a
build property (no build property chooses an executable). The commits of a range are listed in a clone of `[llvm]
repo` that holds commits only (`farm_range`), on whichever worker asks.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from farm.config import Settings
from farm.errors import FarmError, InputError, first_line
from farm.toolchain import Toolchain

_COMMIT = re.compile(r"[0-9a-f]{40}")
Build = Callable[[str, Path], Path]
#: Lists the commits after a good commit up to a bad one, oldest first (`commit_range` in some clone).
CommitRange = Callable[[str, str], list[str]]


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
    """Toolchains by LLVM commit under `root/COMMIT/`; `built` lists the commits this cache built (not found).
    One build at a time per cache (a file lock): two re-runs wanting one commit build it once."""

    def __init__(self, root: Path, build: Build) -> None:
        self.root, self.build = Path(root), build
        self.built: list[str] = []
        #: why a commit's build failed (its one line), for the re-run that wanted it
        self.errors: dict[str, str] = {}

    def get(self, commit: str | None) -> Toolchain | None:
        """The commit's toolchain, built once; None for what is no commit or does not build (the caller says so)."""
        if not is_commit(commit):
            return None
        done = self.root / str(commit) / "bin-dir"
        if done.is_file():
            return Toolchain(Path(done.read_text().strip()))
        with self._lock():
            if done.is_file():  # built by another re-run while this one waited
                return Toolchain(Path(done.read_text().strip()))
            done.parent.mkdir(parents=True, exist_ok=True)
            try:
                bin_dir = self.build(str(commit), done.parent)
            except (OSError, FarmError, subprocess.SubprocessError) as e:
                self.errors[str(commit)] = first_line(e)
                return None
            self.built.append(str(commit))
            done.write_text(str(bin_dir))  # written last: a build that died half-way is not a hit
        return Toolchain(Path(bin_dir))

    def need(self, commit: str | None) -> Toolchain | None:
        """`get`, but a commit that does not build is a FarmError saying why (None: no commit)."""
        found = self.get(commit)
        if found is None and str(commit) in self.errors:
            raise FarmError(f"no toolchain of LLVM {commit}: {self.errors[str(commit)]}")
        return found

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)


def _dir(settings: Settings) -> Path:
    return settings.var_dir / "bisect"


def llvm_builder(settings: Settings, host: Toolchain) -> Build:
    """The farm's LLVM build of one commit (what `mlgo-farm llvm-build --rev COMMIT` does) from `[llvm] repo`, its
    source checked out in `<var_dir>/bisect/llvm-project`, built in the cache's folder of that commit."""
    from workers import llvm_build

    def build(commit: str, dest: Path) -> Path:
        p = llvm_build.plan(_dir(settings) / "llvm-project", dest, commit, host, repo=settings.llvm.repo.strip())
        return llvm_build.run(p, log=lambda line: print(line, file=sys.stderr, flush=True))

    return build


def farm_cache(settings: Settings, host: Toolchain) -> ToolchainCache | None:
    """This worker's toolchains by commit, built by `llvm_builder`; None without `[llvm] repo` (nothing to build)."""
    if not settings.llvm.repo.strip():
        return None
    return ToolchainCache(_dir(settings) / "toolchains", llvm_builder(settings, host))


def _git(args: list[str], what: str) -> str:
    try:
        return subprocess.run(["git", *args], check=True, capture_output=True, text=True, timeout=3600,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0"}).stdout
    except (OSError, subprocess.SubprocessError) as e:
        err = getattr(e, "stderr", None) or str(e)
        raise FarmError(f"{what}: {first_line(err)}") from None


#: Whether the first commit is the second or one of its ancestors; None when the commits' clone cannot say.
Before = Callable[[str, str], "bool | None"]


def commit_order(settings: Settings) -> Before | None:
    """The order of LLVM commits in `<var_dir>/bisect/commits.git` (farm_range's clone), for telling whether two
    alerts' revision ranges overlap (regression/alerts/records.py `overlapping`). Only what the clone already holds:
    an alert is opened in the transaction that completes its run, which must not wait on the network. None
    without the clone."""
    clone = _dir(settings) / "commits.git"
    if not (clone / "HEAD").is_file():
        return None

    def before(a: str, b: str) -> bool | None:
        if not (is_commit(a) and is_commit(b)):
            return None
        try:
            p = subprocess.run(["git", "-C", str(clone), "merge-base", "--is-ancestor", a, b], capture_output=True,
                               timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return {0: True, 1: False}.get(p.returncode)  # 128: a commit the clone does not hold

    return before


def farm_range(settings: Settings) -> CommitRange | None:
    """Commit ranges of `[llvm] repo`, listed in `<var_dir>/bisect/commits.git`: a bare clone of commits only
    (no trees, no files), fetched up to the bad commit when it lacks it. None without `[llvm] repo`."""
    repo = settings.llvm.repo.strip()
    if not repo:
        return None
    clone = _dir(settings) / "commits.git"

    def commits(good: str, bad: str) -> list[str]:
        for c in (good, bad):
            if not is_commit(c):
                raise InputError(f"not an LLVM commit: {c!r} (a range needs two 40-hex commits)")
        if not (clone / "HEAD").is_file():
            clone.parent.mkdir(parents=True, exist_ok=True)
            _git(["clone", "--quiet", "--bare", "--filter=tree:0", "--", repo, str(clone)], f"cannot clone {repo}")
        have = subprocess.run(["git", "-C", str(clone), "cat-file", "-e", f"{bad}^{{commit}}"], capture_output=True)
        if have.returncode != 0:
            _git(["-C", str(clone), "fetch", "--quiet", "origin", good, bad], f"cannot fetch {bad[:12]} from {repo}")
        return commit_range(clone, good, bad)

    return commits
