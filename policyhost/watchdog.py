"""Stop work that outlives its deadline: one thread for every guarded call of a process.

A model can run forever (an ONNX `Loop` whose condition never turns false), and a call into
onnxruntime cannot be interrupted from Python. It can be asked to stop from another thread
(`RunOptions.terminate = True`), so a policy guards each inference with a deadline and this
watchdog calls its `stop` once the deadline passes. One thread serves all guards (a shared
`policy serve` runs one inference per connected compile at a time): it sleeps until the earliest
deadline of the calls in flight, so a decision costs a lock and a dictionary entry, not a timer
thread.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable


class Watchdog:
    """Calls `stop()` of a run still armed `seconds` after it was armed (at most once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._active: dict[int, tuple[float, Callable[[], None]]] = {}
        self._ids = itertools.count()
        self._wake = float("inf")  # when the thread wakes up next (inf: only when notified)
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, stop: Callable[[], None]) -> int:
        """Call `stop()` from the watchdog's thread if `disarm(key)` has not come within `seconds`; the key.

        `stop` must be quick (it runs under the watchdog's lock). After `disarm` it is never called, but
        a call that ended just at its deadline may have seen it called, so callers reset what `stop`
        set after disarming (as OnnxPolicy resets `terminate`). Two calls and no thread per guarded
        run: this is on every decision's path.
        """
        deadline = time.monotonic() + seconds
        key = next(self._ids)
        with self._lock:
            self._active[key] = (deadline, stop)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="policy-watchdog", daemon=True)
                self._thread.start()
            if deadline < self._wake:
                self._cond.notify()
        return key

    def disarm(self, key: int) -> None:
        with self._lock:
            self._active.pop(key, None)

    def _run(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                for key in [k for k, (deadline, _) in self._active.items() if deadline <= now]:
                    self._active.pop(key)[1]()  # under the lock: never after its block has ended
                self._wake = min((d for d, _ in self._active.values()), default=float("inf"))
                self._cond.wait(None if self._wake == float("inf") else self._wake - now)
                self._wake = float("inf")


#: the process's one watchdog
WATCHDOG = Watchdog()


class Stop(threading.Event):
    """An Event that also calls back what asked to be told (`on_set`) when it is set.

    An interrupted fan-out (policytrain/fanout.py) sets its Stop so that a model's run in flight in one of its
    threads ends now, not at its deadline: the main thread is where Ctrl-C and SIGTERM land, and it can only leave
    once the threads it waits for have.
    """

    def __init__(self) -> None:
        super().__init__()
        self._calls: list[Callable[[], None]] = []
        self._calls_lock = threading.Lock()

    def on_set(self, call: Callable[[], None]) -> None:
        """Call `call()` when this is set (at once if it is); `call` must be quick and must not block."""
        with self._calls_lock:
            if not self.is_set():
                self._calls.append(call)
                return
        call()

    def set(self) -> None:
        with self._calls_lock:
            super().set()
            calls, self._calls = self._calls, []
        for call in calls:
            call()
