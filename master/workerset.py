"""The workers a master accepts, parsed from `[buildbot] workers` ("name:tag+tag:max_builds,...")."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from farm.errors import InputError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class WorkerSpec:
    name: str
    tags: frozenset[str] = frozenset()
    max_builds: int = 1

    def runs(self, required: Iterable[str]) -> bool:
        """True when this worker carries every tag in `required`."""
        return set(required) <= self.tags


def parse_workers(spec: str) -> list[WorkerSpec]:
    """Parse the worker list; names must be unique and max_builds a positive integer."""
    out: list[WorkerSpec] = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        parts = item.split(":")
        if len(parts) > 3 or not _NAME.match(parts[0]):
            raise InputError(f"worker entry {item!r}: expected name[:tag+tag[:max_builds]]")
        tags = frozenset(t for t in (parts[1].split("+") if len(parts) > 1 else []) if t)
        max_builds = 1
        if len(parts) == 3:
            if not parts[2].isdigit() or int(parts[2]) < 1:
                raise InputError(f"worker entry {item!r}: max_builds must be a positive integer")
            max_builds = int(parts[2])
        if any(w.name == parts[0] for w in out):
            raise InputError(f"worker {parts[0]!r} is listed twice")
        out.append(WorkerSpec(parts[0], tags, max_builds))
    if not out:
        raise InputError("no workers configured ([buildbot] workers is empty)")
    return out


def workers_for(tags: Iterable[str], workers: Iterable[WorkerSpec]) -> list[str]:
    """Names of the workers that may run a builder needing `tags`."""
    need = tuple(tags)
    return [w.name for w in workers if w.runs(need)]
