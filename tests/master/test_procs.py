"""master/procs.py: waiting for a process Buildbot's own commands gave up on (its stop waits ten seconds, which a
loaded machine can outlast)."""

from __future__ import annotations

import signal
import subprocess
import sys

from master.procs import end, wait_gone


def test_wait_gone_wakes_when_the_process_ends_and_says_so() -> None:
    p = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    assert not wait_gone(p.pid, 0.2)  # still reading its stdin: not gone
    p.stdin.close()  # now it ends
    assert wait_gone(p.pid, 60)
    p.wait()
    assert wait_gone(p.pid, 0)  # reaped: no such process, gone


def test_end_terminates_and_kills_only_what_ignores_sigterm() -> None:
    polite = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    deaf = subprocess.Popen([sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGTERM, "
                             "signal.SIG_IGN); print(flush=True); sys.stdin.read()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    deaf.stdout.readline()  # its SIGTERM handler is set
    assert end(polite.pid, 60) and polite.wait() == -signal.SIGTERM
    assert end(deaf.pid, 0.2) and deaf.wait() == -signal.SIGKILL
