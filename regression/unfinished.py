"""Runs without a result of their own: stopped (SIGTERM, Ctrl-C), abandoned while `running`, or left `running`
because the history went down before they could be completed or failed.

Such a run says nothing about its inputs: a bisect's re-run stopped half-way is no trial (regression/bisectrun.py
makes it again), where a re-run that failed on its own (a build that breaks) is one. The history tells them apart by
the run's state: still `running` (its process died without a word, or is still at it), or `failed` with an error
that starts with INTERRUPTED.

A history that goes down mid-run (a PostgreSQL restart, a network cut) used to leave the run `running` for ever and
lose what it had measured. Now what the history refuses is kept on disk beside the run's work files (`KEPT`), a run
that cannot even be marked failed is written to this host's spool (`<var_dir>/regression/unfinished/`), and the
next run on the host (or Celery beat's `sweep_unfinished`, regression/tasks.py) marks it failed once the history is
back; the run's one-line error names it and where its measurements are.
"""

from __future__ import annotations

import json
from pathlib import Path

from farm import jsonio
from farm.atomic import write_atomic
from farm.config import Settings
from farm.errors import FarmError, HistoryError, InputError, first_line
from regression.history import History, Measurement, Run, Skipped

#: How the recorded error of a run that was stopped, not failed, starts.
INTERRUPTED = "interrupted"
#: The file in a run's work directory that keeps the measurements and skips the history refused.
KEPT = "unrecorded-measurements.json"


def interrupted(run: Run) -> bool:
    """Whether `run` has no result of its own (see the module's docstring)."""
    return run.status == "running" or (run.status == "failed" and (run.error or "").startswith(INTERRUPTED))


def stopped(e: BaseException) -> str:
    """The error recorded for a run `e` stopped (farm/cli.py raises Terminated, a KeyboardInterrupt, on SIGTERM)."""
    return f"{INTERRUPTED} ({type(e).__name__}): stopped before it had a result"


def spool_dir(settings: Settings) -> Path:
    return settings.var_dir / "regression" / "unfinished"


def record(history: History, run: Run, found: tuple[list[Measurement], list[Skipped]], work: Path) -> None:
    """Add measurements and skips to the history; when it refuses them they are kept in `work/KEPT` first (under
    the run's `seq`: an earlier attempt's file under a reused run id is not this run's)."""
    rows, skipped = found
    try:
        history.add_measurements(run, rows)
        history.add_skipped(run, skipped)
    except FarmError:
        kept = work / KEPT
        old = _kept(kept, run) or {"run": run.seq, "measurements": [], "skipped": []}
        old["measurements"] += [vars(m) for m in rows]
        old["skipped"] += [vars(s) for s in skipped]
        kept.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(kept, json.dumps(old, indent=1, sort_keys=True) + "\n")
        raise


def _read(path: Path) -> dict | None:
    """A record this module wrote (farm/jsonio.py reads it: hostile numbers and nesting are one error there);
    None for anything else: missing, being written (atomically: never half), or not the farm's."""
    try:
        said = jsonio.load_file(path)
    except InputError:
        return None
    return said if isinstance(said, dict) else None


def _kept(kept: Path, run: Run) -> dict | None:
    """What `record` kept of `run` (None: nothing, or another attempt's)."""
    said = _read(kept)
    return said if said is not None and said.get("run") == run.seq else None


def fail(history: History, settings: Settings, run: Run, e: BaseException, work: Path) -> None:
    """Record `run` as failed by `e` (stopped: INTERRUPTED). Returns when the caller should re-raise `e`; raises a
    one-line FarmError naming the run (and where its measurements are kept) when `e` is the history's, or the
    history cannot take even this: then the run waits in this host's spool for `settle`."""
    error = stopped(e) if isinstance(e, KeyboardInterrupt) else str(e) or type(e).__name__
    kept = work / KEPT
    where = f"; its measurements are kept in {kept}" if _kept(kept, run) else ""
    name = f"run {run.run_id} of builder {run.builder}"
    try:
        history.fail_run(run, error)
    except FarmError as down:
        spooled = spool_dir(settings) / run.builder / f"{run.run_id}.json"
        spooled.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(spooled, json.dumps({"history": history.where, "run_id": run.run_id, "builder": run.builder,
                                          "error": error, "kept": str(kept) if where else None}) + "\n")
        if isinstance(e, KeyboardInterrupt):
            return  # a stop stays a stop; the spool records the run's end
        raise FarmError(f"{name} could not be completed nor marked failed ({first_line(down)}){where}; the next "
                        "run on this host marks it failed once the history is back") from None
    if not isinstance(e, KeyboardInterrupt) and (where or isinstance(e, HistoryError)):
        raise FarmError(f"{name} failed: {first_line(e)}{where}") from None


def settle(history: History, settings: Settings) -> list[str]:
    """Mark failed the runs of `history` this host spooled (fail), if they are still `running`; their names."""
    done = []
    for spooled in sorted(spool_dir(settings).glob("*/*.json")):
        said = _read(spooled)
        if said is None or said.get("history") != history.where or not {"run_id", "builder", "error"} <= set(said):
            continue
        try:
            run = history.run(said["run_id"], said["builder"])
        except InputError:
            run = None  # gone: nothing to mark
        if run is not None and run.status == "running":
            kept = f"; its measurements are kept in {said['kept']}" if said.get("kept") else ""
            history.fail_run(run, f"{said['error']} (marked failed later: the history was down){kept}")
            done.append(f"run {run.run_id} of builder {run.builder}")
        spooled.unlink(missing_ok=True)
    return done
