"""Run per-module jobs on all cores, keeping a person (or a builder) told how far the run is.

On a terminal the progress is a tqdm bar. Elsewhere — a Buildbot step, a Celery worker, a log
file — it is a plain line on stderr every `PROGRESS_EVERY` seconds: Buildbot kills a step that
stays silent for its timeout, and the full LLVM corpus runs for hours between its first and last
line of real output. A run shorter than the interval prints nothing.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, TextIO, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Seconds between progress lines when stderr is not a terminal (well under any step's silence timeout).
PROGRESS_EVERY = 60.0


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _elapsed(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m // 60}h{m % 60:02d}m" if m >= 60 else f"{m}m{s:02d}s"


class Progress:
    """Counts finished items and reports them: a tqdm bar on a terminal, else a line every `every` seconds."""

    def __init__(self, total: int, desc: str, every: float = PROGRESS_EVERY, stream: TextIO | None = None,
                 is_failure: Callable[[Any], bool] = lambda r: False) -> None:
        self.total, self.desc, self.every, self.stream = total, desc, every, stream or sys.stderr
        self.done = self.failed = 0
        self.start = self.last = time.monotonic()
        self.is_failure = is_failure
        self.bar = _progress_bar(total, desc) if self.stream.isatty() else None

    def update(self, result: Any) -> None:
        self.done += 1
        self.failed += bool(self.is_failure(result))
        if self.bar is not None:
            self.bar.update(1)
            return
        now = time.monotonic()
        if now - self.last >= self.every and self.done < self.total:
            self.last = now
            spent = now - self.start
            left = spent / self.done * (self.total - self.done)
            print(f"{self.desc}: {self.done}/{self.total} done ({self.failed} failed), {_elapsed(spent)}, "
                  f"about {_elapsed(left)} left", file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_all(fn: Callable[[T], R], items: Iterable[T], *, jobs: int | None, desc: str,
            is_failure: Callable[[R], bool] = lambda r: False, every: float | None = None) -> Iterator[tuple[T, R]]:
    """Apply `fn` to every item with `jobs` threads (the work is in child processes).

    Yields (item, result) as jobs finish; `is_failure(result)` says which results count as failed
    in the progress lines.
    """
    items = list(items)
    jobs = max(1, jobs or default_jobs())
    progress = Progress(len(items), desc, PROGRESS_EVERY if every is None else every, is_failure=is_failure)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(fn, item): item for item in items}
        try:
            for fut in as_completed(futures):
                result = fut.result()
                progress.update(result)
                yield futures[fut], result
        finally:
            progress.close()
            for fut in futures:
                fut.cancel()


def _progress_bar(total: int, desc: str) -> Any:
    """A tqdm bar on stderr (tqdm is imported only then: it is slow to import)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="mod", file=sys.stderr, leave=False)
