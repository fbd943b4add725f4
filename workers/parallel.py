"""Run per-module jobs on all cores with a progress bar, keeping results in input order."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")
R = TypeVar("R")


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run_all(fn: Callable[[T], R], items: Iterable[T], *, jobs: int | None, desc: str) -> Iterator[tuple[T, R]]:
    """Apply `fn` to every item with `jobs` threads (the work is in child processes).

    Yields (item, result) as jobs finish; the progress bar goes to stderr on a terminal only.
    """
    items = list(items)
    jobs = max(1, jobs or default_jobs())
    bar = tqdm(total=len(items), desc=desc, unit="mod", file=sys.stderr, disable=None, leave=False)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(fn, item): item for item in items}
        try:
            for fut in as_completed(futures):
                bar.update(1)
                yield futures[fut], fut.result()
        finally:
            bar.close()
            for fut in futures:
                fut.cancel()
