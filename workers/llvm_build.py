"""Configure and build LLVM at a git revision with CMake + Ninja and embedded bitcode.

This is the production path at tip of tree: the resulting build is both the farm's toolchain
(clang, opt, llc, llvm-ir2vec) and, through its embedded bitcode, a corpus (`corpus build`).
A full build takes hours on 2 cores; `--configure-only` stops after CMake.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from farm.errors import FarmError, InputError
from farm.toolchain import Toolchain

DEFAULT_TARGETS = ("clang", "opt", "llc", "llvm-ir2vec", "llvm-size", "llvm-objcopy", "llvm-config", "lld")
LLVM_REPO = "https://github.com/llvm/llvm-project.git"


@dataclass(frozen=True)
class BuildPlan:
    """Every command the build runs, in order, so it can be reviewed and tested."""

    commands: list[list[str]]
    build_dir: Path

    @property
    def bin_dir(self) -> Path:
        return self.build_dir / "bin"


def plan(src: Path, build: Path, rev: str, host: Toolchain, *, targets: tuple[str, ...] = DEFAULT_TARGETS,
         jobs: int | None = None, repo: str = LLVM_REPO, clone: bool = True) -> BuildPlan:
    """The git, CMake and Ninja commands that build LLVM at `rev` with embedded bitcode."""
    if not rev or any(c.isspace() for c in rev) or rev.startswith("-"):
        raise InputError(f"invalid git revision {rev!r}")
    src, build = Path(src).absolute(), Path(build).absolute()
    cmds: list[list[str]] = []
    if clone and not (src / ".git").exists():
        cmds.append(["git", "clone", "--filter=blob:none", "--no-checkout", repo, str(src)])
    cmds.append(["git", "-C", str(src), "fetch", "--quiet", "origin", rev])
    cmds.append(["git", "-C", str(src), "checkout", "--quiet", "--detach", "FETCH_HEAD"])
    embed = "-Xclang -fembed-bitcode=all"
    cmds.append([
        "cmake", "-G", "Ninja", "-S", str(src / "llvm"), "-B", str(build),
        "-DCMAKE_BUILD_TYPE=Release",
        "-DLLVM_ENABLE_PROJECTS=clang;lld",
        "-DLLVM_TARGETS_TO_BUILD=X86;AArch64",
        "-DLLVM_ENABLE_ASSERTIONS=ON",
        "-DLLVM_APPEND_VC_REV=ON",
        "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
        f"-DCMAKE_C_COMPILER={host.path('clang')}",
        f"-DCMAKE_CXX_COMPILER={host.path('clang++')}",
        f"-DCMAKE_C_FLAGS={embed}",
        f"-DCMAKE_CXX_FLAGS={embed}",
        "-DLLVM_USE_LINKER=lld",
    ])
    ninja = ["ninja", "-C", str(build)]
    if jobs:
        ninja += ["-j", str(jobs)]
    cmds.append([*ninja, *targets])
    return BuildPlan(cmds, build)


def run(p: BuildPlan, *, configure_only: bool = False, log: Callable[[str], None] = print) -> Path:
    """Run the plan (stopping after CMake with `configure_only`); returns the new bin dir."""
    for tool in ("git", "cmake", "ninja"):
        if not shutil.which(tool):
            raise FarmError(f"{tool} not found: run deploy/setup.sh")
    for cmd in p.commands:
        if configure_only and cmd[0] == "ninja":
            break
        log("+ " + shlex.join(cmd))
        r = subprocess.run(cmd)
        if r.returncode != 0:
            raise FarmError(f"{cmd[0]} failed with exit code {r.returncode} (command: {' '.join(cmd[:4])} ...)")
    return p.bin_dir
