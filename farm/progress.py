"""How far a long verb is: the farm's one progress facility, on stderr.

Every verb that can run for minutes (`policy train`, `policy heldout`, `corpus debian`, `triplets`,
`vocab retrain --wait`, `llvm-build`) reports through a `Progress`: a stage's name, how many of its
items are done out of how many, the time spent and an estimate of the time left.

* On a terminal it is a tqdm bar (stage, done/total, elapsed<left, rate); tqdm is imported only
  then, so a verb run by a builder pays nothing for it.
* A training's epochs are stages told one after the other (`Stages`), through a Celery task's state when a worker
  trains (`vocab retrain --wait` shows them as the worker's training goes).
* Elsewhere (a Buildbot step's log, a Celery worker, a file) it is plain lines, no carriage returns:

      triplets mir: modules: 13/29 done (0 failed), 1m01s, about 1m15s left

  A fine-grained stage (modules, translation units, Ninja edges) prints at most one line every
  `PROGRESS_EVERY` seconds, and none for a run shorter than that; a coarse stage made by `steps`
  (packages, training rounds) prints a line per step, its last one included, e.g.
  `policy train: packages: 3/40 done, 2m10s, about 26m40s left`. Buildbot kills a step that stays
  silent for its timeout, so the interval stays well under any step's.

Progress never writes to stdout, where a verb's answer (and `--json`) goes; `say` prints a verb's own
line to stdout without tearing the bars of a terminal.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

#: Seconds between two lines of a fine-grained stage when stderr is not a terminal.
PROGRESS_EVERY = 60.0

#: A plain progress line (what a test, or a reader of a builder's log, tells from the verb's other lines)
LINE = re.compile(r"^(?P<stage>.+): (?P<done>\d+)/(?P<total>\d+) done( \((?P<failed>\d+) failed\))?, "
                  r"(?P<elapsed>\d+(m\d\ds|h\d\dm))(, about (?P<left>\d+(m\d\ds|h\d\dm)) left)?$")

#: Bars open now (a line printed meanwhile goes through tqdm.write, which redraws them).
_open_bars: list[Any] = []


def elapsed(seconds: float) -> str:
    """`1m05s`, `2h03m`: how long, at the resolution a person reads a log at."""
    m, s = divmod(int(seconds), 60)
    return f"{m // 60}h{m % 60:02d}m" if m >= 60 else f"{m}m{s:02d}s"


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: plain lines
        return False


class Progress:
    """Counts a stage's finished items and reports them: a tqdm bar on a terminal, else plain lines.

    `every` is the least number of seconds between two plain lines (None: `PROGRESS_EVERY`, read when the stage
    starts); `final` prints the line of the last item too; `is_failure(result)` says which results count as failed
    (shown only when given). A stage is a context manager; `close` ends its bar.
    """

    def __init__(self, total: int, desc: str, every: float | None = None, stream: TextIO | None = None,
                 is_failure: Callable[[Any], bool] | None = None, *, unit: str = "it", final: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.desc, self.stream = total, desc, stream or sys.stderr
        self.every = PROGRESS_EVERY if every is None else every
        self.final, self.clock = final, clock
        self.done = self.failed = 0
        self.start = self.last = clock()
        self.is_failure = is_failure
        self.bar = _bar(total, desc, unit, self.stream, final) if total and _is_tty(self.stream) else None

    def update(self, result: Any = None) -> None:
        """One more item done (`result` is what `is_failure` reads)."""
        self.advance(self.done + 1, failed=bool(self.is_failure and self.is_failure(result)))

    def advance(self, done: int, *, failed: bool = False, total: int | None = None) -> None:
        """`done` items done so far (a tool that counts for itself: Ninja's `[n/m]`)."""
        step = done - self.done
        self.done, self.failed = done, self.failed + failed
        if total is not None and total != self.total:
            self.total = total
            if self.bar is not None:
                self.bar.total = total
        if self.bar is not None:
            if step:
                self.bar.update(step)
            return
        now = self.clock()
        if now - self.last >= self.every and (self.done < self.total or self.final):
            self.last = now
            print(self.line(now), file=self.stream, flush=True)

    def line(self, now: float | None = None) -> str:
        """The plain line: stage, done/total, failures if counted, elapsed, and the estimate while work is left."""
        spent = (self.clock() if now is None else now) - self.start
        failed = f" ({self.failed} failed)" if self.is_failure is not None else ""
        text = f"{self.desc}: {self.done}/{self.total} done{failed}, {elapsed(spent)}"
        if 0 < self.done < self.total:
            text += f", about {elapsed(spent / self.done * (self.total - self.done))} left"
        return text

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            if self.bar in _open_bars:
                _open_bars.remove(self.bar)
            self.bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Stages:
    """Stages told one after the other as `(stage, done, total)`, each its own `Progress` named `prefix: stage`: a
    training's epochs (held-out, then published), told here or by a worker through its task's state
    (farm/client.py). Callable, so it is the training's `on_epoch` as it is."""

    def __init__(self, prefix: str, stream: TextIO | None = None, unit: str = "epoch") -> None:
        self.prefix, self.stream, self.unit = prefix, stream, unit
        self.current: Progress | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        desc = f"{self.prefix}: {stage}"
        if self.current is None or self.current.desc != desc or done < self.current.done:
            self.close()
            self.current = Progress(total, desc, stream=self.stream, unit=self.unit, final=True)
        self.current.advance(done, total=total)

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None

    def __enter__(self) -> Stages:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def steps(total: int, desc: str, stream: TextIO | None = None, unit: str = "step") -> Progress:
    """A coarse stage (packages, training rounds): a line for every step, the last one included."""
    return Progress(total, desc, every=0.0, stream=stream, unit=unit, final=True)


def say(line: str, file: TextIO | None = None) -> None:
    """Print a verb's own line (stdout unless `file`), above any bar on the terminal instead of through it."""
    out = file or sys.stdout
    if _open_bars:
        from tqdm import tqdm

        tqdm.write(line, file=out)
        out.flush()
    else:
        print(line, file=out, flush=True)


def _columns(stream: TextIO) -> int:
    """The terminal's width (0 when it says none, as a pseudo-terminal nobody sized)."""
    try:
        size = os.get_terminal_size(stream.fileno())
        return size.columns if size.lines else 0
    except (AttributeError, ValueError, OSError):
        return 0


def _bar(total: int, desc: str, unit: str, stream: TextIO, coarse: bool) -> Any:
    """A tqdm bar (tqdm is imported only here: it is slow to import); a coarse stage's is drawn at every step and
    left on the screen when it ends."""
    from tqdm import tqdm

    # a terminal that says it has no size (a pseudo-terminal nobody sized): tqdm would draw nothing in it
    size = {"dynamic_ncols": True} if _columns(stream) else {"ncols": 100, "nrows": 24}
    bar = tqdm(total=total, desc=desc, unit=unit, file=stream, leave=coarse, **size,
               **({"mininterval": 0.0, "miniters": 1} if coarse else {}))
    _open_bars.append(bar)
    return bar
