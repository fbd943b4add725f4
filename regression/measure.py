"""Measurements: `.text` size (llvm-size, Berkeley), executed instructions (callgrind), wall time."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from farm.errors import FarmError, ToolError
from farm.toolchain import Toolchain, describe_failure, text_sizes  # noqa: F401 (the measure of this module)

_TOTALS = re.compile(rb"^(?:summary|totals):\s*(\d+)", re.MULTILINE)


@dataclass(frozen=True)
class Execution:
    """One finished run of a benchmark program."""

    seconds: float
    output_sha256: str


def _run(argv: Sequence[str], stdin: Path | None, cwd: Path | None, timeout: float,
         what: str, status: int = 0) -> subprocess.CompletedProcess:
    try:
        with open(stdin, "rb") if stdin else open(os.devnull, "rb") as inp:
            p = subprocess.run(list(argv), stdin=inp, capture_output=True, cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise FarmError(f"{what} timed out after {timeout:g}s") from None
    except OSError as e:
        raise FarmError(f"{what}: cannot start {argv[0]}: {e.strerror}") from None
    if p.returncode != status:
        raise FarmError(failed_run(what, p.returncode, p.stderr, status))
    return p


def failed_run(what: str, returncode: int, stderr: bytes | str, status: int = 0) -> str:
    """One line for a run that did not exit with `status` (its workload's: 0, or a solver's answer), measured or
    training a profile alike."""
    return describe_failure(what, returncode, stderr) + (f" (a run answers {status})" if status else "")


def run_program(argv: Sequence[str], *, stdin: Path | None = None, cwd: Path | None = None,
                timeout: float = 600, status: int = 0) -> Execution:
    """Run once; wall seconds and a digest of stdout (to check both builds compute the same). Any exit status but
    `status` (the workload's: 0, or a solver's answer) is a failure."""
    start = time.perf_counter()
    p = _run(argv, stdin, cwd, timeout, Path(argv[0]).name, status)
    seconds = time.perf_counter() - start
    return Execution(seconds, hashlib.sha256(p.stdout).hexdigest())


def callgrind_instructions(argv: Sequence[str], *, stdin: Path | None = None, cwd: Path | None = None,
                           timeout: float = 1800, status: int = 0) -> tuple[int, str]:
    """Instructions executed (callgrind's `Ir` total) and the stdout digest; repeatable on noisy machines."""
    valgrind = shutil.which("valgrind")
    if not valgrind:
        raise ToolError("valgrind not found: install the Debian package valgrind (deploy/setup.sh)")
    with tempfile.TemporaryDirectory(prefix="callgrind.") as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-instr=no", "-q", *argv]
        p = _run(cmd, stdin, cwd, timeout, f"callgrind {Path(argv[0]).name}", status)  # valgrind exits as its client
        m = _TOTALS.search(out.read_bytes()) if out.is_file() else None
        if not m:
            raise ToolError(f"callgrind wrote no instruction total for {Path(argv[0]).name}")
        return int(m.group(1)), hashlib.sha256(p.stdout).hexdigest()


def interleaved_wall_times(programs: Mapping[str, tuple[Sequence[str], Path | None]], repeats: int, *,
                           cwd: Path | None = None, timeout: float = 600, status: int = 0) -> dict[str, list[float]]:
    """Wall seconds of each program over `repeats` rounds, alternating programs within each round.

    Alternating (and rotating the order every round) spreads slow drift of a shared machine over
    all variants instead of letting it land on one of them.
    """
    names = list(programs)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            argv, stdin = programs[n]
            samples[n].append(run_program(argv, stdin=stdin, cwd=cwd, timeout=timeout, status=status).seconds)
    return samples
