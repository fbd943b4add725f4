"""Run per-module jobs on all cores with a progress bar, keeping results in input order."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, TypeVar

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
    bar = _progress_bar(len(items), desc)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(fn, item): item for item in items}
        try:
            for fut in as_completed(futures):
                if bar is not None:
                    bar.update(1)
                yield futures[fut], fut.result()
        finally:
            if bar is not None:
                bar.close()
            for fut in futures:
                fut.cancel()


def _progress_bar(total: int, desc: str) -> Any:
    """A tqdm bar on stderr when it is a terminal, else None (tqdm is imported only then: it is slow to import)."""
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="mod", file=sys.stderr, leave=False)
