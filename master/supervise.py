"""`python -m master.supervise`: the single-machine stack's supervisor, started by `mlgo-farm stack up`.

Why: a Celery worker killed with SIGKILL (the OOM killer, a careless `kill -9`) used to stay dead,
so its task waited for nobody and the build waiting on it sat silent. Every second this loop
checks each part's pid file and starts again, with the stack's own idempotent start functions,
whatever is not running (master/stack.py: revive). It is a loop and not supervisord or systemd on
purpose: the parts daemonize themselves with the pid files the stack already keeps, a loop on
those adds no dependency and no second process model, and a machine that should survive reboots
runs the systemd units in deploy/systemd instead (Restart=always, the same commands in the
foreground). `stack down` stops this first, under the stack lock, so nothing it stops comes back.
"""

from __future__ import annotations

import logging
import sys
import time

from farm.config import load_settings
from farm.errors import FarmError
from master import stack

log = logging.getLogger("mlgo-farm.supervise")
INTERVAL = 1.0


def supervise(interval: float = INTERVAL) -> None:
    s = load_settings()
    failures: dict[str, int] = {}
    not_before: dict[str, float] = {}
    log.info("supervising the stack in %s every %gs", s.var_dir, interval)
    while True:
        for line in stack.revive(s, failures, not_before):
            log.warning("%s", line)
        time.sleep(interval)


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(message)s")
    try:
        supervise()
    except FarmError as e:
        log.error("supervisor stopped: %s", e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
