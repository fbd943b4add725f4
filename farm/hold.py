"""A test's hold on a long-running loop (a training), so that a kill or an outage lands while it runs.

Why: a test that SIGKILLs a worker mid-training, or takes the store down mid-training, must not
guess how long a training lasts (3,000 epochs outlived two visibility timeouts on one machine and
finished in 19 s on another). With `MLGO_TEST_HOLD` naming a file, every `checkpoint` (each
training calls one after every epoch) waits for as long as that file exists, and says so first by
appending its pid to `<file>.held`; the test removes the file to let the loop go on.

Outside tests the variable is unset: `checkpoint` reads one environment variable and returns,
nothing is read or written. A hold never waits forever: after `MLGO_TEST_HOLD_SECONDS`
(default 900) it fails with a one-line FarmError.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from farm.errors import FarmError

log = logging.getLogger(__name__)
ENV = "MLGO_TEST_HOLD"
SECONDS_ENV = "MLGO_TEST_HOLD_SECONDS"
DEFAULT_SECONDS = 900.0
POLL = 0.05


def held_marker(gate: Path) -> Path:
    """Where holding processes write their pids, one a line."""
    return gate.with_name(gate.name + ".held")


def checkpoint(what: str) -> None:
    """Wait while the file named by MLGO_TEST_HOLD exists (never when the variable is unset)."""
    value = os.environ.get(ENV)
    if not value:
        return
    gate = Path(value)
    if not gate.exists():
        return
    try:
        limit = float(os.environ.get(SECONDS_ENV) or DEFAULT_SECONDS)
    except ValueError:
        raise FarmError(f"{SECONDS_ENV} must be a number of seconds, got {os.environ[SECONDS_ENV]!r}") from None
    deadline = time.monotonic() + limit
    with held_marker(gate).open("a") as f:
        f.write(f"{os.getpid()}\n")
    log.warning("%s held by the test file %s (%s)", what, gate, ENV)
    while gate.exists():
        if time.monotonic() >= deadline:
            raise FarmError(f"{what} held by the test file {gate} for more than {limit:g}s")
        time.sleep(POLL)
    log.warning("%s released by the test file %s", what, gate)
