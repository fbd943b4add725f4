"""Run per-module jobs on all cores, keeping a person (or a builder) told how far the run is.

The progress is farm/progress.py's (a tqdm bar on a terminal, a plain line on stderr every
`PROGRESS_EVERY` seconds elsewhere): the full LLVM corpus runs for hours between its first and
last line of real output, and Buildbot kills a step that stays silent for its timeout.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TypeVar

from farm.progress import Progress

__all__ = ["default_jobs", "run_all"]

T = TypeVar("T")
R = TypeVar("R")


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run_all(fn: Callable[[T], R], items: Iterable[T], *, jobs: int | None, desc: str,
            is_failure: Callable[[R], bool] = lambda r: False, every: float | None = None) -> Iterator[tuple[T, R]]:
    """Apply `fn` to every item with `jobs` threads (the work is in child processes).

    Yields (item, result) as jobs finish; `is_failure(result)` says which results count as failed
    in the progress lines.
    """
    items = list(items)
    jobs = max(1, jobs or default_jobs())
    progress = Progress(len(items), desc, every, is_failure=is_failure, unit="mod")
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

