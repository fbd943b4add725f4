"""Runs without a result of their own: stopped (SIGTERM, Ctrl-C) or abandoned while `running`.

Such a run says nothing about its inputs: a bisect's re-run stopped half-way is no trial (regression/bisectrun.py
makes it again), where a re-run that failed on its own (a build that breaks) is one. The history tells them apart by
the run's state: still `running` (its process died without a word, or is still at it), or `failed` with an error
that starts with INTERRUPTED.
"""

from __future__ import annotations

from regression.history import Run

#: How the recorded error of a run that was stopped, not failed, starts.
INTERRUPTED = "interrupted"


def interrupted(run: Run) -> bool:
    """Whether `run` has no result of its own (see the module's docstring)."""
    return run.status == "running" or (run.status == "failed" and (run.error or "").startswith(INTERRUPTED))


def stopped(e: BaseException) -> str:
    """The error recorded for a run `e` stopped (farm/cli.py raises Terminated, a KeyboardInterrupt, on SIGTERM)."""
    return f"{INTERRUPTED} ({type(e).__name__}): stopped before it had a result"
