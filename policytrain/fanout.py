"""Policy training's unit of work, run in threads or as Celery tasks: one module explored or compiled.

The trainer (policytrain/trainer.py) never compiles itself: it hands `(kind, item)` jobs to a
fan-out and waits for their results in order. `kind` is `explore` (a module's greedy flip
search from a base policy, cached by content, LLVM, base and budget) or `size` (one compile with
a policy, its `.text`). Items are plain JSON (a module's name, bitcode path and flags; the
policy's weights), so the same job runs in a thread of the trainer or in any Celery worker
that sees the corpus: adding workers adds compiles per second, through Celery and nothing else.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed, wait
from pathlib import Path
from typing import Any

from farm import hold
from farm.celery_app import app
from farm.errors import InputError
from farm.progress import Progress
from farm.toolchain import Toolchain
from policyhost.watchdog import Stop
from policytrain import mlp_io
from policytrain.explore import (
    Abandoned,
    ExploreCache,
    ReplayPolicy,
    compile_object,
    compile_size,
    explore_cached,
    play,
)
from policytrain.mlp import Mlp
from policytrain.params import Budget
from policytrain.units import Fanout, Unit

#: The work queue's name: a farm may give training compiles their own workers (`celery -Q policy-train`).
QUEUE = "celery"


def _policy(d: dict | None) -> Mlp | None:
    return None if d is None else mlp_io.from_json(d)


def _vocab(item: dict) -> Path | None:
    return Path(item["vocab"]) if item.get("vocab") else None


def explore_job(item: dict, toolchain: Toolchain, cache: ExploreCache, stop: threading.Event | None = None) -> dict:
    result = explore_cached(Unit.from_json(item["unit"]), _policy(item.get("base")), toolchain,
                            Budget(**item["budget"]), cache, vocab=_vocab(item), prior=_policy(item.get("prior")),
                            stop=None if stop is None else stop.is_set)
    return result.as_json()


def size_job(item: dict, toolchain: Toolchain, cache: ExploreCache,
             stop: threading.Event | None = None) -> int | list | None:
    """One compile's `.text`: with a network (`policy`), the heuristic (neither), or an ONNX model file (`model`);
    with `why` in the item, [size, why it failed or None].

    A model runs in this process, so each of its runs is bounded as `policy serve` bounds them (`[policy] timeout`,
    policyhost/runnable.py `OnnxPolicy.time_limit`): one that never answers fails its compile instead of holding a
    thread, and the run's end, forever. An interrupted fan-out (`stop`, a watchdog.Stop) stops the run in flight."""
    unit = Unit.from_json(item["unit"])
    if item.get("model"):
        from farm.config import load_settings
        from policyhost.runnable import OnnxPolicy

        policy = OnnxPolicy(item["model"])
        policy.time_limit = float(load_settings().policy.timeout)
        policy.stopping = stop if isinstance(stop, Stop) else None
        hold.checkpoint("a compile with a model")  # tests only (farm/hold.py): a signal lands while models run
        size, error = compile_size(unit, policy, toolchain, vocab=_vocab(item))
    else:
        done = play(unit, _policy(item.get("policy")), (), toolchain, vocab=_vocab(item))
        size, error = done.size, done.error
    return [size, error] if item.get("why") else size


def _job_policy(item: dict, toolchain: Toolchain, stop: threading.Event | None) -> Callable[[], object]:
    """A factory of the item's policy for one compile each: an ONNX model (`model`, bounded as size_job bounds it),
    else the network `policy` (the heuristic when None)."""
    if item.get("model"):
        from farm.config import load_settings
        from policyhost.runnable import OnnxPolicy

        model = OnnxPolicy(item["model"])
        model.time_limit = float(load_settings().policy.timeout)
        model.stopping = stop if isinstance(stop, Stop) else None
        return lambda: model
    net = _policy(item.get("policy"))
    return lambda: ReplayPolicy(net)


def link_job(item: dict, toolchain: Toolchain, cache: ExploreCache, stop: threading.Event | None = None) -> dict:
    """A whole package compiled with a policy (`policy`, `model`, or the heuristic) and linked as its binary
    packages ship it (workers/linked.py; `outputs` as workers/data/shipped.toml declares them): each module's
    object `.text` (`sizes`, None where it failed, `errors` why), and each linked file's (`linked`), or why the
    link could not be made (`link_error`, one line naming the package). The objects live in the job's own
    directory, so a Celery worker links what it compiled."""
    from farm.errors import FarmError
    from farm.toolchain import text_sizes
    from workers.linked import link
    from workers.shipped import Output

    units = [Unit.from_json(u) for u in item["units"]]
    outputs = [Output.from_json(o) for o in item.get("outputs", ())]
    make = _job_policy(item, toolchain, stop)
    with tempfile.TemporaryDirectory(prefix="mlgo-link-") as tmp:
        objs: dict[str, Path | None] = {}
        errors: list[str | None] = []
        for i, u in enumerate(units):
            if stop is not None and stop.is_set():
                raise Abandoned(item["package"])
            obj = Path(tmp) / f"{i}.o"
            err = compile_object(u, make(), toolchain, obj, vocab=_vocab(item))
            objs[u.name] = None if err else obj
            errors.append(err)
        made = [o for o in objs.values() if o is not None]
        measured = text_sizes(toolchain, made) if made else {}
        sizes = [None if o is None else measured[o] for o in objs.values()]
        linked, link_error = None, None
        try:
            linked = dict(link(item["package"], outputs, objs, Path(tmp) / "out", toolchain).outputs)
        except FarmError as e:
            link_error = str(e)
    return {"sizes": sizes, "errors": errors, "linked": linked, "link_error": link_error}


def parts_job(item: dict, toolchain: Toolchain, cache: ExploreCache,
              stop: threading.Event | None = None) -> dict | None:
    """One module compiled with the heuristic, its object's `.text` split into its own bytes and its COMDAT groups'
    (farm/toolchain.py `TextParts`); None when it did not compile. What the trainer learns, from all of a package's
    modules, which groups another module carries too (`Unit.shared`)."""
    from farm.toolchain import text_parts

    unit = Unit.from_json(item["unit"])
    with tempfile.TemporaryDirectory(prefix="mlgo-parts-") as tmp:
        obj = Path(tmp) / "m.o"
        if compile_object(unit, ReplayPolicy(None), toolchain, obj):
            return None
        parts = text_parts(toolchain, [obj])[obj]
    return {"own": parts.own, "groups": dict(parts.groups)}


def _failed(result: Any) -> bool:
    if isinstance(result, dict) and "sizes" in result:  # a link job's
        return bool(result.get("link_error")) or None in result["sizes"]
    if isinstance(result, dict):  # an explore job's, or a parts job's
        return bool(result.get("error"))
    return result is None or (isinstance(result, list) and result[0] is None)


#: Each kind's job: (item, toolchain, cache, stop) -> its JSON result; `stop` (an Event) is set when the run is
#: being interrupted.
JOBS: dict[str, Callable[..., Any]] = {"explore": explore_job, "size": size_job, "link": link_job, "parts": parts_job}
#: Seconds an interrupted fan-out waits for its jobs in flight to stop (they are told to at once)
INTERRUPT_GRACE = 10.0
#: Each job's stage in its progress (a tqdm bar on a terminal, a line a minute in a log: farm/progress.py)
STAGES = {"explore": "policy: modules searched", "size": "policy: modules compiled and measured",
          "link": "policy: packages compiled and linked", "parts": "policy: COMDAT groups of modules read"}


def largest_first(run: Fanout) -> Fanout:
    """`run` with each call's jobs handed out largest module first; the results come back in the caller's order.

    A training's jobs differ by three orders of magnitude (a small C file against an LLVM TU with thousands of
    decisions, whose search is hundreds of compiles), and a corpus lists its big modules together. In that order a
    round can end with one worker searching the last big module while the others idle, the more so the more
    workers a farm has. Starting the longest jobs first (the LPT schedule, bitcode size standing for a job's
    length) lets the small ones fill in beside them.
    Results do not depend on the order: each job is independent and cached by content.
    """
    def size(item: dict) -> int:
        try:
            units = item["units"] if "units" in item else [item["unit"]]  # a link job: its package's modules
            return sum(Path(u["bitcode"]).stat().st_size for u in units)
        except (KeyError, TypeError, OSError):
            return 0  # the job itself reports a missing module in one line

    def ordered(kind: str, items: Sequence[dict]) -> list:
        order = sorted(range(len(items)), key=lambda i: -size(items[i]))
        results = run(kind, [items[i] for i in order])
        out: list = [None] * len(items)
        for i, r in zip(order, results, strict=True):
            out[i] = r
        return out
    return ordered


def thread_fanout(toolchain: Toolchain, cache: ExploreCache, jobs: int) -> Fanout:
    """Jobs in this process, `jobs` at a time, largest module first (each compile is its own clang process).

    Interrupted (Ctrl-C, SIGTERM: farm/cli.py raises it in the main thread), the queued jobs are dropped and the
    running ones told to stop, so the run exits after the compiles in flight, not after every search in flight; a
    model's run in flight is stopped at once (watchdog.Stop), so a model that never answers cannot keep the
    process waiting for its thread.
    """
    def run(kind: str, items: Sequence[dict]) -> list:
        fn, stopping = JOBS[kind], Stop()
        pool = ThreadPoolExecutor(max(1, jobs))
        progress = Progress(len(items), STAGES.get(kind, f"policy: {kind} jobs"), is_failure=_failed, unit="mod")
        futures: dict = {}
        try:
            futures = {pool.submit(fn, it, toolchain, cache, stopping): i for i, it in enumerate(items)}
            results: list = [None] * len(items)
            for fut in as_completed(futures):
                results[futures[fut]] = fut.result()
                progress.update(results[futures[fut]])
            return results
        except BaseException:
            stopping.set()
            pool.shutdown(wait=False, cancel_futures=True)
            # the jobs in flight were told to stop; one that has not within the grace is left to the command's exit
            # (farm/cli.py `console`), so an interrupt never waits on a compile or a model run that will not end
            wait(futures, timeout=INTERRUPT_GRACE)
            raise
        finally:
            progress.close()
            pool.shutdown(wait=not stopping.is_set(), cancel_futures=True)
    return largest_first(run)


def celery_fanout(timeout: float, progress: Callable[[str], None] | None = None) -> Fanout:
    """Jobs as one Celery group per call, largest module first; a failed job or the group outliving `timeout`: one line.

    Whatever ends the wait early (the timeout, a failed job, Ctrl-C or SIGTERM) revokes the group, so the workers
    drop its queued jobs instead of searching hundreds of modules for a run that is gone; the jobs in flight finish
    their module.
    """
    from celery import group

    def run(kind: str, items: Sequence[dict]) -> list:
        if not items:
            return []
        res = group(work.s(kind, it) for it in items).apply_async(queue=QUEUE)
        deadline = time.monotonic() + timeout
        try:
            return res.get(timeout=max(1.0, deadline - time.monotonic()), propagate=True, interval=0.2)
        except TimeoutError:
            res.revoke()
            raise InputError(f"{kind} jobs: {res.completed_count()}/{len(items)} finished within {timeout:g} s; "
                             "are Celery workers running?") from None
        except BaseException:
            res.revoke()
            raise
    return largest_first(run)


@app.task(name="policyhost.train_tasks.work", acks_late=True, reject_on_worker_lost=True)
def work(kind: str, item: dict) -> Any:
    from farm.config import load_settings

    settings = load_settings()
    cache = ExploreCache.under(settings.var_dir)
    hold.checkpoint("a training job")  # tests only (farm/hold.py); returns at once otherwise
    return JOBS[kind](item, Toolchain.from_settings(settings), cache)
