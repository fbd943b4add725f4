"""master/procs.py: waiting for a process Buildbot's own commands gave up on (its stop waits ten seconds, which a
loaded machine can outlast)."""

from __future__ import annotations

import subprocess
import sys

from master.procs import wait_gone


def test_wait_gone_wakes_when_the_process_ends_and_says_so() -> None:
    p = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    assert not wait_gone(p.pid, 0.2)  # still reading its stdin: not gone
    p.stdin.close()  # now it ends
    assert wait_gone(p.pid, 60)
    p.wait()
    assert wait_gone(p.pid, 0)  # reaped: no such process, gone
