"""Instrumented PGO for the speed comparison (`regress run --pgo`): build, train, merge, then build with the profile.

Speed users ship PGO builds (with ThinLTO, the issue's baseline that counts), and a register allocator or an
inliner decides differently on code whose hot paths a profile names, so a speed result without PGO says little.
The profile is made once per benchmark with the *heuristic* build, as a user makes it with the compiler they have:
the heuristic variant built per file with `-fprofile-generate=DIR`, its training runs (the benchmark's `training`
workloads, never the measured ones) executed each bounded by a timeout whose expiry kills the run's process group,
the raw profiles merged by `llvm-profdata merge`. Both variants, heuristic and policy, are then built with
`-fprofile-use=` that profile (`use_flags`) in the run's configuration: per file, or as a distributed ThinLTO build
whose pre-link compiles and backends both get the flags. The instrumented build is never a ThinLTO one: a
distributed ThinLTO backend lowers the instrumentation without the pre-link's IR-level marker, so its raw profile
reads as a front-end profile that fits nothing; an IR profile is taken early in the pre-link pipeline, before any
LTO step, so the per-file instrumented build's profile fits the ThinLTO pre-link (the fit check below enforces it).

A profile that does not fit the build is no input for a number: `-fprofile-use` of an IR profile warns in clang's
`backend-plugin` group when a function's control flow differs from the profiled one (hash mismatch) or, with
`-pgo-warn-missing-function`, when a function has no record at all; a front-end profile warns
`-Wprofile-instr-out-of-date`/`-unprofiled`. All are made errors (never silenced with `-Wno-`), so a stale profile
(made by another build of the benchmark) fails the compile and the benchmark is skipped with one line saying so
(`describe_stale`). A corrupt `.profdata`, a missing training input and a training run that fails or hangs are each
one line naming the benchmark.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from farm.errors import FarmError, InputError, ToolError
from farm.toolchain import Toolchain, merge_profiles
from regression import benchmarks, build
from regression.benchmarks import Benchmark
from regression.measure import failed_run

#: Seconds one training run of the instrumented build may take (slower than the measured build's runs).
TRAIN_TIMEOUT = 600.0
#: What clang says of a function whose profile does not fit it (llvm/lib/Transforms/Instrumentation/PGO*.cpp)
_STALE = ("control flow change detected", "no profile data available", "hash mismatch",
          "profile data may be out of date")


@dataclass(frozen=True)
class Profile:
    """A benchmark's merged profile and what names it in the run's lineage."""

    path: Path
    sha256: str
    training_sha256: str  # the training inputs' (benchmarks.input_digest)

    def lineage(self) -> dict[str, str]:
        return {"profile_sha256": self.sha256, "training_sha256": self.training_sha256}


def instrument_flags(raw_dir: Path) -> list[str]:
    """The instrumented build's flags: IR-level instrumentation writing its raw profiles into `raw_dir` (also at the
    link, which brings in the profile runtime); the training runs name it in `LLVM_PROFILE_FILE` too (one raw file
    per process), as a user's training script does."""
    return [f"-fprofile-generate={raw_dir}"]


def use_flags(profile: Path) -> list[str]:
    """A build with the profile: a function the profile does not fit (changed, or absent) is a compile error, not a
    silently unprofiled function (see the module's docstring)."""
    return [f"-fprofile-use={profile}", "-mllvm", "-pgo-warn-missing-function", "-Werror=backend-plugin",
            "-Werror=profile-instr-out-of-date", "-Werror=profile-instr-unprofiled"]


def describe_stale(bench: Benchmark, error: str) -> str:
    """A build error as the benchmark's one line: a profile that does not fit the build says so."""
    if any(s in error for s in _STALE):
        return (f"benchmark {bench.name}: the profile does not fit this build (stale: made from another build of "
                f"the benchmark), no result from it: {error}")
    return error


def check_profile(toolchain: Toolchain, bench: Benchmark, profile: Path) -> str:
    """The profile's sha256 once `llvm-profdata` reads it as an instrumentation profile; a corrupt or foreign file
    is one line naming the benchmark (before any build would fail on it once per module)."""
    try:
        toolchain.run("llvm-profdata", ["show", "--counts", "--topn=0", str(profile)], timeout=120)
    except ToolError as e:
        raise InputError(f"benchmark {bench.name}: profile {profile.name} is not usable: {e}") from None
    return hashlib.sha256(profile.read_bytes()).hexdigest()


def train(toolchain: Toolchain, bench: Benchmark, root: Path, work: Path, opt_flags: Sequence[str], jobs: int,
          timeout: float = TRAIN_TIMEOUT) -> Profile:
    """The benchmark's profile: its training inputs prepared (under `work/train-inputs`), the heuristic build
    instrumented per file (`work/instrumented`), each training run executed in `work` (a file its run writes stays
    there), the raw profiles merged into `work/<benchmark>.profdata`. Any step that fails is one FarmError line
    naming the benchmark (and the run or input)."""
    inputs = work / "train-inputs"
    if inputs.exists():
        shutil.rmtree(inputs)
    training_sha = benchmarks.prepare_training(bench, root, inputs)
    raw = work / "profraw"
    if raw.exists():
        shutil.rmtree(raw)  # a profile is this build's runs only
    built = build.build_benchmark(toolchain, bench, root, build.heuristic_variant(), work / "instrumented",
                                  opt_flags, jobs, profile_flags=instrument_flags(raw))
    if built.error:
        raise FarmError(f"benchmark {bench.name}: the instrumented build failed: {built.error}")
    for w in bench.training:
        argv = w.argv(built.binary, inputs)
        try:
            status, stderr = build.run_bounded(argv, timeout, stdin=w.stdin_path(inputs), cwd=work,
                                               env={"LLVM_PROFILE_FILE": str(raw / "%m-%p.profraw")})
        except OSError as e:
            raise FarmError(f"benchmark {bench.name}: training run {w.name} cannot start: {e.strerror}") from None
        if status is None:
            raise FarmError(f"benchmark {bench.name}: training run {w.name} timed out after {timeout:g}s (killed)")
        if status != w.status:
            raise FarmError(f"benchmark {bench.name}: training run {w.name}: "
                            + failed_run(bench.binary, status, stderr, w.status))
    raws = sorted(raw.glob("*.profraw")) if raw.is_dir() else []
    if not raws:
        raise FarmError(f"benchmark {bench.name}: the training runs wrote no profile into {raw}")
    profile = work / f"{bench.name}.profdata"
    try:
        merge_profiles(toolchain, raws, profile)
    except ToolError as e:
        raise FarmError(f"benchmark {bench.name}: merging its training profiles failed: {e}") from None
    return Profile(profile, check_profile(toolchain, bench, profile), training_sha)
