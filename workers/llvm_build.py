"""Configure and build LLVM at a git revision with CMake + Ninja and embedded bitcode.

This is the production path at tip of tree: the resulting build is both the farm's toolchain
(clang, opt, llc, llvm-ir2vec) and, through its embedded bitcode, a corpus (`corpus build`).
The cheap path for the corpus alone is `corpus llvm` (workers/llvm_source.py: configure and
generators only). git, CMake and Ninja run through workers/buildsys.py, so a revision that does
not exist, a failed configure and a failed compile are each one line in the farm's words. A full
build takes hours on 2 cores: Ninja's `[n/m]` lines become the farm's progress (farm/progress.py: a bar on a
terminal, a line every few minutes on stderr in a builder's log, which kills a step silent for its timeout), its
other lines (warnings, a failed edge) are passed through as they come; `--configure-only` stops after CMake.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from farm.errors import FarmError
from farm.progress import Progress
from farm.toolchain import Toolchain
from workers import buildsys

DEFAULT_TARGETS = ("clang", "opt", "llc", "llvm-ir2vec", "llvm-size", "llvm-objcopy", "llvm-config", "lld")
LLVM_REPO = "https://github.com/llvm/llvm-project.git"
#: Every TU carries its pre-optimization bitcode in its object (`corpus build` extracts it).
EMBED = "-Xclang -fembed-bitcode=all"


#: Ninja's status line: `[n/m] what it does`
_STATUS = re.compile(r"^\[(\d+)/(\d+)\] ")


class NinjaProgress:
    """Ninja's output as progress: each `[n/m]` line advances the `llvm-build: ninja edges` stage, any other line
    goes to `log`. A context manager; its call takes one line of Ninja's."""

    def __init__(self, log: Callable[[str], None], desc: str = "llvm-build: ninja edges",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.log, self.desc, self.clock = log, desc, clock
        self.stage: Progress | None = None

    def __call__(self, line: str) -> None:
        m = _STATUS.match(line)
        if m is None:
            self.log(line)
            return
        done, total = int(m[1]), int(m[2])
        if self.stage is None:
            self.stage = Progress(total, self.desc, unit="edge", clock=self.clock)
        self.stage.advance(done, total=total)

    def __enter__(self) -> NinjaProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.stage is not None:
            self.stage.close()


@dataclass(frozen=True)
class BuildPlan:
    """What the build does, decided and checked before anything runs, so it can be reviewed and tested."""

    src: Path
    build_dir: Path
    rev: str
    repo: str
    defines: tuple[str, ...]
    targets: tuple[str, ...]
    jobs: int | None

    @property
    def bin_dir(self) -> Path:
        return self.build_dir / "bin"

    @property
    def commands(self) -> list[list[str]]:
        """The equivalent shell commands (`llvm-build --dry-run`)."""
        return [["git", "clone", "--filter=blob:none", "--no-checkout", self.repo, str(self.src)],
                ["git", "-C", str(self.src), "fetch", "--quiet", "origin", self.rev],
                ["git", "-C", str(self.src), "checkout", "--quiet", "--detach", "FETCH_HEAD"],
                ["cmake", "-G", "Ninja", "-S", str(self.src / "llvm"), "-B", str(self.build_dir),
                 *(f"-D{d}" for d in self.defines)],
                ["ninja", "-C", str(self.build_dir), *(["-j", str(self.jobs)] if self.jobs else []), *self.targets]]


def plan(src: Path, build: Path, rev: str, host: Toolchain, *, targets: tuple[str, ...] = DEFAULT_TARGETS,
         jobs: int | None = None, repo: str = LLVM_REPO) -> BuildPlan:
    """The build of LLVM at `rev` with embedded bitcode, compiled by the host's clang."""
    defines = ("CMAKE_BUILD_TYPE=Release", "LLVM_ENABLE_PROJECTS=clang;lld", "LLVM_TARGETS_TO_BUILD=X86;AArch64",
               "LLVM_ENABLE_ASSERTIONS=ON", "LLVM_APPEND_VC_REV=ON", "CMAKE_EXPORT_COMPILE_COMMANDS=ON",
               f"CMAKE_C_COMPILER={host.path('clang')}", f"CMAKE_CXX_COMPILER={host.path('clang++')}",
               f"CMAKE_C_FLAGS={EMBED}", f"CMAKE_CXX_FLAGS={EMBED}", "LLVM_USE_LINKER=lld")
    return BuildPlan(Path(src).absolute(), Path(build).absolute(), buildsys.check_rev(rev), repo, defines,
                     tuple(targets), jobs)


def run(p: BuildPlan, *, configure_only: bool = False, log: Callable[[str], None] = print) -> Path:
    """Check out, configure and (unless `configure_only`) build; returns the new bin dir."""
    log(f"+ git checkout {p.rev} of {p.repo} in {p.src}")
    commit = buildsys.checkout(p.repo, p.rev, p.src)
    log(f"  at commit {commit}")
    log(f"+ cmake -S {p.src / 'llvm'} -B {p.build_dir} " + " ".join(shlex.quote(f"-D{d}") for d in p.defines))
    buildsys.configure(p.src / "llvm", p.build_dir, p.defines, timeout=None)
    if configure_only:
        return p.bin_dir
    log("+ " + shlex.join(map(str, p.commands[-1])))
    with NinjaProgress(log) as echo:
        r = buildsys.build_streaming(p.build_dir, p.targets, echo, jobs=p.jobs)
    if r.returncode != 0:
        what, error = buildsys.ninja_failure(r.stdout)
        raise FarmError(f"building LLVM at {p.rev} failed" + (f" at {what}" if what else "") + f": {error}")
    return p.bin_dir
