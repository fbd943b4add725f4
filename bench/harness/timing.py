"""Timing with peak memory, from the kernel's own accounting (getrusage/wait4; no psutil).

`run(cmd)` times one command to its end: its wall time, and the CPU seconds and peak RSS of the command and every
descendant it waited for (a shell pipeline's programs too). `Meter` times a block that starts many commands (a
thread pool of compiles) or works in this process. `farm_self_peak` is the peak RSS of the farm's own Python process
running one verb, apart from the tools it starts.
"""

from __future__ import annotations

import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """Wall seconds, CPU seconds (user + system) and peak RSS in KiB (getrusage's unit)."""

    wall: float
    cpu: float
    peak_kib: int

    @property
    def peak_mib(self) -> float:
        return self.peak_kib / 1024


def run(cmd: Sequence[str] | str, *, shell: bool = False, env: dict[str, str] | None = None,
        cwd: str | os.PathLike | None = None) -> Timing:
    """Run `cmd` (output discarded) and time it; a failure ends the bench with the command and its last error line.

    CPU and peak RSS are the kernel's for the command and the descendants it waited for (`wait4`): the peak is the
    largest single process's, not their sum."""
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: a chatty command cannot fill it and stall
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, shell=shell, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            said = err.read().decode(errors="replace").strip().splitlines()[-1:]
            shown = cmd if isinstance(cmd, str) else shlex.join(map(str, cmd))
            sys.exit(f"bench command failed with {proc.returncode}: {shown}" + (f": {said[0]}" if said else ""))
    return Timing(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)


def _cpu(include_self: bool) -> float:
    who = [resource.RUSAGE_CHILDREN] + ([resource.RUSAGE_SELF] if include_self else [])
    return sum(r.ru_utime + r.ru_stime for r in map(resource.getrusage, who))


def _peak(include_self: bool) -> int:
    who = [resource.RUSAGE_CHILDREN] + ([resource.RUSAGE_SELF] if include_self else [])
    return max(resource.getrusage(w).ru_maxrss for w in who)


class Meter:
    """`with Meter() as m: ...`, then `m.timing`: the block's wall seconds, the CPU seconds of the child processes that
    ended in it (plus this process's, `include_self`: for work done in threads here), and the peak RSS of the largest
    child waited for so far (and of this process): the kernel keeps one high-water mark per process, not one per
    block, so a per-command peak is `run`'s."""

    def __init__(self, include_self: bool = False) -> None:
        self.include_self = include_self
        self.timing: Timing | None = None

    def __enter__(self) -> Meter:
        self._cpu0, self._start = _cpu(self.include_self), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self._start
        self.timing = Timing(wall, _cpu(self.include_self) - self._cpu0, _peak(self.include_self))


#: Runs `mlgo-farm ARGS` in-process and prints the process's own peak RSS (KiB) last on stderr.
_SELF_PEAK = ("import resource, sys; from farm.cli import main; rc = main(sys.argv[1:]); "
              "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(rc)")


def farm_self_peak(argv: Sequence[str]) -> int:
    """Peak RSS (KiB) of the farm's Python process alone running `mlgo-farm ARGV` once (its tools not counted)."""
    p = subprocess.run([sys.executable, "-c", _SELF_PEAK, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, check=True)
    return int(p.stderr.strip().splitlines()[-1])
