"""`vocab retrain --wait` against a real redis-server that is SIGKILLed while the client waits: started again
(as the stack's supervisor does, with its append-only file), the chain runs and the client reports it
published; a Redis that stays away is one line after `[celery] client_reconnect` seconds."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import free_port, start_redis, stop, wait_until
from tests.vocabgen.test_celery import MLGO_FARM, TINY_FLAGS, Farm

WAITING = "train queued (no Celery worker is running)"


class Redis:
    """A persistent redis-server the test may SIGKILL and start again on the same port and data."""

    def __init__(self, workdir: Path) -> None:
        self.workdir, self.port = workdir, free_port()
        self.proc = start_redis(workdir, self.port, persistent=True)

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def restart(self) -> None:
        self.proc = start_redis(self.workdir, self.port, persistent=True)


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[Redis]:
    r = Redis(tmp_path / "redis")
    yield r
    stop(r.proc)


@pytest.fixture
def farm(redis: Redis, tmp_path: Path) -> Farm:
    """The farm's environment on that Redis, with the embedded file store under the test's var dir."""
    url = f"redis://127.0.0.1:{redis.port}"
    env = {**os.environ, "MLGO_FARM_CELERY_BROKER_URL": f"{url}/0", "MLGO_FARM_CELERY_RESULT_BACKEND": f"{url}/1",
           "MLGO_FARM_PATHS_VAR_DIR": str(tmp_path / "var"), "PYSTOW_HOME": str(tmp_path / "pystow")}
    return Farm(env, tmp_path, proxy=None)


def _waiting_client(farm: Farm, dataset: Path) -> tuple[subprocess.Popen, Path]:
    """`vocab retrain --wait -v` in the background, its stderr in a file; returned once its chain is queued."""
    err = farm.tmp / "client.err"
    with open(err, "w") as errf:
        client = subprocess.Popen([MLGO_FARM, "-v", "vocab", "retrain", "--kind", "ir", "--dataset", str(dataset),
                                   "--wait", "--timeout", "600", *TINY_FLAGS], env=farm.env, cwd=farm.tmp,
                                  stdout=subprocess.PIPE, stderr=errf, text=True)
    wait_until(lambda: WAITING in err.read_text() or client.poll() is not None, 60, "the chain to be queued")
    assert client.poll() is None, err.read_text()
    return client, err


def test_retrain_wait_rides_out_a_sigkilled_redis_and_reports_the_publish(farm: Farm, redis: Redis, ir_dataset):
    client, err = _waiting_client(farm, ir_dataset)
    workers = []
    try:
        redis.kill()
        wait_until(lambda: "lost Redis while waiting" in err.read_text() or client.poll() is not None, 60,
                   "the client to lose Redis")
        assert client.poll() is None, err.read_text()  # today: exit 1, "lost the Celery result backend"
        redis.restart()  # the supervisor's part; the queued chain survived in the append-only file
        workers.append(farm.worker("w1"))
        out, _ = client.communicate(timeout=600)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        for w in workers:
            stop(w.proc)
    said = err.read_text()
    assert client.returncode == 0, said[-3000:]
    assert out.strip().endswith("(published)"), out
    assert "reconnecting for up to 120s" in said and "Redis answers again after" in said, said


def test_a_redis_that_stays_away_fails_the_wait_in_one_line_after_the_limit(farm: Farm, redis: Redis, ir_dataset):
    farm.env["MLGO_FARM_CELERY_CLIENT_RECONNECT"] = "3"
    client, err = _waiting_client(farm, ir_dataset)
    try:
        redis.kill()
        client.communicate(timeout=120)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    errors = [ln for ln in err.read_text().splitlines() if ln.startswith("mlgo-farm: error: ")]
    assert client.returncode != 0 and len(errors) == 1, err.read_text()
    assert errors[0].startswith("mlgo-farm: error: lost the Celery broker while waiting for task "), errors
    assert errors[0].endswith("of reconnecting; [celery] client_reconnect = 3)"), errors
