"""A real, size-limited tmpfs for disk-full tests: mounted by the test, filled to the page, unmounted."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def mounted(where: Path, size: str = "1m") -> Iterator[Path]:
    """`where` as a fresh tmpfs of `size`; the test is skipped where mounting is not permitted (not root)."""
    where.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
                         capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True, timeout=30)


def page_size(where: Path) -> int:
    return os.statvfs(where).f_frsize


def free_pages(where: Path) -> int:
    return os.statvfs(where).f_bavail


def fill(where: Path, leave_pages: int = 0) -> Path:
    """Take all the space of the tmpfs at `where` but `leave_pages` pages with one file; returns it."""
    filler = where / f"filler-{len(list(where.glob('filler-*')))}"
    room = (free_pages(where) - leave_pages) * page_size(where)
    assert room >= 0, f"only {free_pages(where)} pages free, asked to leave {leave_pages}"
    filler.write_bytes(b"\xff" * room)
    assert free_pages(where) == leave_pages
    return filler


def unfill(where: Path) -> None:
    for f in where.glob("filler-*"):
        f.unlink()


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and directory (None) under `root`, hidden temporaries included: what a
    failed write must leave exactly as it was (an empty directory left behind counts too)."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}
