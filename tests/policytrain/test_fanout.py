"""The fan-out in threads: an interrupted training stops its searches instead of waiting for them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from farm import hold
from policytrain import fanout
from tests.servers import stop, wait_until

ROOT = Path(__file__).resolve().parents[2]
MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))


def test_an_interrupted_fanout_drops_queued_jobs_and_tells_running_ones_to_stop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C or SIGTERM reaches the main thread while searches run in the pool: the queued ones never start and
    the running ones see `stop` set, so the run exits after the compiles in flight (a search in flight is up to a
    minute of compiles on LLVM's code). Each search here runs until it is told to stop; without the stop the
    test fails after a minute instead of hanging."""
    ran, saw_stop = [], []

    def job(item: int, toolchain, cache, stop: threading.Event) -> int:
        ran.append(item)
        if item == 0:
            raise KeyboardInterrupt  # what farm/cli.py's SIGTERM handler raises, delivered through the pool
        saw_stop.append(stop.wait(timeout=60))
        return item

    monkeypatch.setitem(fanout.JOBS, "test", job)
    run = fanout.thread_fanout(None, None, 2)
    with pytest.raises(KeyboardInterrupt):
        run("test", list(range(50)))
    assert saw_stop and all(saw_stop), saw_stop
    assert len(ran) <= 3, ran  # the interrupting job, the one beside it, at most one the free thread took


def test_jobs_start_largest_module_first_and_come_back_in_the_callers_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A round whose big modules come last ends with one worker busy and the rest idle: the fan-out starts the
    largest bitcode first. The trainer zips results with its own list, so they must come back in its order; an
    item whose module is missing goes last and is left to its job to report."""
    sizes = {"a": 10, "b": 3000, "c": 200, "d": 3000}
    items = []
    for name, n in sizes.items():
        (tmp_path / name).write_bytes(b"x" * n)
        items.append({"unit": {"name": name, "bitcode": str(tmp_path / name), "flags": ["-Oz"]}})
    items.insert(1, {"unit": {"name": "gone", "bitcode": str(tmp_path / "gone"), "flags": ["-Oz"]}})
    started = []

    def job(item: dict, toolchain, cache, stop: threading.Event) -> str:
        started.append(item["unit"]["name"])
        return item["unit"]["name"].upper()

    monkeypatch.setitem(fanout.JOBS, "test", job)
    out = fanout.thread_fanout(None, None, 1)("test", items)
    assert started == ["b", "d", "c", "a", "gone"]
    assert out == ["A", "GONE", "B", "C", "D"]


def test_an_interrupted_celery_training_revokes_its_queued_jobs(packages: dict[str, Path], tmp_path: Path,
                                                                 redis_url: str) -> None:
    """`policy train --celery` stopped (SIGTERM, a builder's stop) while a real worker runs its first search: the
    command exits in one line, and the worker discards every other queued search instead of running them for a
    training that is gone. The first search is held (farm/hold.py) until the command has exited, so nothing depends
    on how fast the searches are; the worker is prefork, so it hears the revoke while the search runs."""
    import redis

    from workers import corpus

    redis.Redis.from_url(redis_url).flushall()
    env = {**os.environ, "MLGO_FARM_CELERY_BROKER_URL": f"{redis_url}/0",
           "MLGO_FARM_CELERY_RESULT_BACKEND": f"{redis_url}/1", "MLGO_FARM_PATHS_VAR_DIR": str(tmp_path / "var")}
    gate, log = tmp_path / "hold", tmp_path / "worker.log"
    gate.touch()
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "farm.celery_app", "worker", "--pool=prefork", "--concurrency=1",
         "--loglevel=INFO", "-n", "trainer@%h", "--without-gossip", "--without-mingle", "--without-heartbeat",
         f"--logfile={log}"], cwd=ROOT, env={**env, hold.ENV: str(gate)}, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: log.exists() and "ready." in log.read_text(), 60, "the Celery worker")
        cli = subprocess.Popen(
            [MLGO_FARM, "policy", "train", "--recipe", "smoke", "--train", f"alpha={packages['alpha']}",
             "--validation", f"beta={packages['beta']}", "--evaluation", f"gamma={packages['gamma']}",
             "-o", str(tmp_path / "p.onnx"), "--celery", "--timeout", "600"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: hold.held_marker(gate).exists() or cli.poll() is not None, 120,
                   "the first search to start and be held")
        cli.send_signal(signal.SIGTERM)
        _, err = cli.communicate(timeout=60)
        assert cli.returncode == 128 + signal.SIGTERM and err.strip().splitlines() == ["mlgo-farm: error: terminated"]
        gate.unlink()
        queued = len(corpus.load(packages["alpha"]).modules) - 1
        wait_until(lambda: log.read_text().count("Discarding revoked task") == queued, 120,
                   f"the worker to discard the {queued} queued searches")
        assert log.read_text().count("policyhost.train_tasks.work[") == 2 * queued + 2, log.read_text()[-3000:]
        assert not (tmp_path / "p.onnx").exists()
    finally:
        stop(worker)
