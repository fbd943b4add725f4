"""The Celery chain for real: redis-server, `celery worker` subprocesses, moto S3 over HTTP behind a proxy."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from farm import hold, lease, progress
from farm.artifacts import VOCABULARIES
from farm.config import load_settings
from pipeline import make_app  # the farm's app with the schedule the pipeline declares
from tests.servers import stop, wait_until
from tests.vocabgen.conftest import s3_store
from vocabgen.validate import compile_samples, llvm_loads

ROOT = Path(__file__).resolve().parents[2]
MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))
TINY_FLAGS = ["--dim", "8", "--epochs", "5", "--batch-size", "64"]
#: The lease's visibility timeout in these tests (the farm runs with 60 s; set
#: MLGO_TEST_VISIBILITY_TIMEOUT=60 to measure redelivery with that).
LEASE_TIMEOUT = int(os.environ.get("MLGO_TEST_VISIBILITY_TIMEOUT", "6"))



@dataclass
class Farm:
    """Every worker and client runs with MLGO_TEST_HOLD set: `hold()` stops trainings after their
    first epoch until `release()` (farm/hold.py), so a kill or an outage lands during training on any machine."""

    env: dict[str, str]
    tmp: Path
    proxy: object

    @property
    def gate(self) -> Path:
        return Path(self.env[hold.ENV])

    def hold(self) -> None:
        self.gate.touch()

    def release(self) -> None:
        self.gate.unlink(missing_ok=True)

    def held(self) -> list[int]:
        """The pids of the trainings that were held (one a line in the marker), oldest first."""
        marker = hold.held_marker(self.gate)
        return [int(x) for x in marker.read_text().split()] if marker.exists() else []

    def worker(self, name: str, *, concurrency: int = 1, prefork: bool = False,
               extra_env: dict[str, str] | None = None) -> Worker:
        """A worker subprocess: the solo pool for one task at a time unless `prefork` (the stack's pool)."""
        log = self.tmp / f"{name}.log"
        pool = (["--pool=prefork", f"--concurrency={concurrency}"] if prefork or concurrency > 1
                else ["--pool=solo"])
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "farm.celery_app", "worker", *pool, "--loglevel=INFO",
             "-n", f"{name}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat", f"--logfile={log}"],
            cwd=ROOT, env={**self.env, **(extra_env or {})}, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        w = Worker(proc, log, name)
        wait_until(lambda: w.log_has("ready.") or proc.poll() is not None, 60, f"worker {name} ready")
        assert proc.poll() is None, w.log()
        return w

    def cli(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
        return subprocess.run([MLGO_FARM, *args], env=self.env, capture_output=True, text=True, timeout=timeout,
                              cwd=self.tmp)

    def cli_background(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen([MLGO_FARM, *args], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=self.tmp)

    @property
    def store(self):
        return s3_store(self.proxy.url)


@dataclass
class Worker:
    proc: subprocess.Popen
    logfile: Path
    name: str = ""

    def log(self) -> str:
        return self.logfile.read_text() if self.logfile.exists() else ""

    def log_has(self, text: str) -> bool:
        return text in self.log()

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


@pytest.fixture
def farm(redis_url: str, s3_proxy, tmp_path: Path, ir_dataset: Path) -> Iterator[Farm]:
    import redis

    redis.Redis.from_url(redis_url).flushall()
    _, proxy = s3_proxy
    config = tmp_path / "farm.toml"
    config.write_text("")
    env = {
        **os.environ,
        "MLGO_FARM_CONFIG": str(config),
        "MLGO_FARM_PATHS_VAR_DIR": str(tmp_path / "var"),
        "MLGO_FARM_CELERY_BROKER_URL": f"{redis_url}/0",
        "MLGO_FARM_CELERY_RESULT_BACKEND": f"{redis_url}/1",
        "MLGO_FARM_STORE_URL": "s3://mlgo-vocab/farm",
        "MLGO_FARM_STORE_ENDPOINT_URL": proxy.url,
        "MLGO_FARM_STORE_ACCESS_KEY_ID": "testing",
        "MLGO_FARM_STORE_SECRET_ACCESS_KEY": "testing",
        # the vocabulary chain alone: a publish does not go on to train the inliner policy (tests/policyhost)
        "MLGO_FARM_POLICY_RETRAIN_AFTER_VOCAB": "false",
        "PYSTOW_HOME": str(tmp_path / "pystow"),
        hold.ENV: str(tmp_path / "hold-training"),
    }
    from workers.dataset import publish as publish_dataset

    publish_dataset(ir_dataset, s3_store(proxy.url))  # what `mlgo-farm dataset publish` does
    yield Farm(env, tmp_path, proxy)


@pytest.fixture
def workers(farm: Farm) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for w in started:
        stop(w.proc)


def test_retrain_publish_list_download_and_llvm_loads(farm: Farm, workers, toolchain, tmp_path: Path) -> None:
    workers.append(farm.worker("w1"))
    done = farm.cli("vocab", "retrain", "--kind", "ir", "--wait", "--timeout", "180", *TINY_FLAGS)
    assert done.returncode == 0, done.stderr + workers[0].log()[-3000:]
    version = done.stdout.split()[1]
    listed = farm.cli("vocab", "list", "--kind", "ir")
    assert version in listed.stdout and listed.stdout.startswith("KIND")
    out = tmp_path / "vocab.json"
    got = farm.cli("vocab", "download", "--kind", "ir", "--version", "latest", "-o", str(out))
    assert got.returncode == 0 and got.stdout.strip() == f"-ir2vec-vocab-path={out}"
    assert llvm_loads("ir", out, 8, toolchain, compile_samples("ir", toolchain, tmp_path))[0]["functions"] >= 5
    manifest = json.loads(farm.cli("vocab", "show", "--kind", "ir").stdout)
    assert manifest["validation"]["ok"] and manifest["version"] == version
    assert not farm.store.list("vocab-staging/"), "staging area must be emptied after publishing"

    app = make_app(load_settings(env=farm.env))
    assert app.send_task("vocabgen.tasks.scheduled_retrain", args=["ir"]).get(timeout=60)["status"] == "unchanged"
    assert app.send_task("vocabgen.tasks.scheduled_retrain", args=["mir"]).get(timeout=60)["status"] == "no-dataset"


def test_a_worker_with_the_demo_recipe_trains_the_demo_and_the_manifest_says_so(farm: Farm, workers) -> None:
    """`make demo`'s workers train with `[vocab] recipe = demo` (deploy/demo.sh): a retrain that names no epochs
    trains the demo's, and the published manifest names the recipe beside the parameters."""
    from vocabgen.params import recipe

    workers.append(farm.worker("w1", extra_env={"MLGO_FARM_VOCAB_RECIPE": "demo"}))
    done = farm.cli("vocab", "retrain", "--kind", "ir", "--wait", "--timeout", "180", "--dim", "8",
                    "--batch-size", "64")
    assert done.returncode == 0, done.stderr + workers[0].log()[-3000:]
    manifest = json.loads(farm.cli("vocab", "show", "--kind", "ir").stdout)
    assert manifest["recipe"] == "demo"
    assert manifest["parameters"]["epochs"] == recipe("demo").epochs < recipe("nightly").epochs
    assert manifest["parameters"]["warm_epochs"] == recipe("demo").warm_epochs


def test_bad_dataset_fails_with_one_line_and_publishes_nothing(farm: Farm, workers) -> None:
    workers.append(farm.worker("w1"))
    res = farm.cli("vocab", "retrain", "--kind", "ir", "--dataset", "ir-0000000000000000", "--wait",
                   "--timeout", "60", *TINY_FLAGS)
    assert res.returncode != 0
    assert res.stderr.strip().splitlines() == [
        "mlgo-farm: error: dataset ir-0000000000000000 of kind ir is not in s3://mlgo-vocab/farm"
    ]
    assert farm.store.list("vocab/") == []


def test_two_identical_requests_publish_one_version(farm: Farm, workers) -> None:
    workers.append(farm.worker("w1", concurrency=2))
    clients = [farm.cli_background("vocab", "retrain", "--kind", "ir", "--wait", "--timeout", "180", *TINY_FLAGS)
               for _ in range(2)]
    outs = [c.communicate(timeout=240) for c in clients]
    assert all(c.returncode == 0 for c in clients), outs
    lines = sorted(o[0].strip() for o in outs)
    assert lines[0].endswith("(already published)") and lines[1].endswith("(published)")
    assert lines[0].split()[1] == lines[1].split()[1]
    index = VOCABULARIES.read_index(farm.store)
    assert len(index) == 1 and index[0]["version"] == lines[0].split()[1]
    assert workers[0].log().count("Task vocabgen.tasks.train[") >= 2  # both really trained


def test_worker_killed_mid_training_is_redelivered(farm: Farm, workers) -> None:
    fast_redelivery = {"MLGO_FARM_CELERY_VISIBILITY_TIMEOUT": "3"}
    first = farm.worker("doomed", extra_env=fast_redelivery)
    farm.hold()
    client = farm.cli_background("vocab", "retrain", "--kind", "ir", "--wait", "--timeout", "240", *TINY_FLAGS)
    wait_until(farm.held, 60, "the training to start and be held")
    first.kill()
    trained = farm.tmp / "var" / "vocab" / "trained" / "ir"
    assert not list(trained.glob("*/manifest.json")), "the killed worker must not have finished"
    farm.release()
    workers.append(farm.worker("rescuer", extra_env=fast_redelivery))
    out, err = client.communicate(timeout=300)
    assert client.returncode == 0, err + workers[0].log()[-3000:]
    assert out.strip().endswith("(published)")
    assert workers[0].log_has("training ir vocabulary")
    assert len(VOCABULARIES.read_index(farm.store)) == 1


def _children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (a prefork worker's pool)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _held(app) -> list[lease.Sighting]:
    """The broker's held (delivered, unacknowledged) task messages, with their lease age."""
    return [x for x in lease.sightings(app) if x.where == "held"]


class Lines(threading.Thread):
    """The lines of a child's stream as they come (a waiting client's status lines), read by a daemon thread."""

    def __init__(self, stream) -> None:
        super().__init__(daemon=True)
        self.stream, self.lines = stream, []
        self.start()

    def run(self) -> None:
        for line in self.stream:
            self.lines.append(line)

    def text(self) -> str:
        return "".join(self.lines)


@pytest.mark.slow
def test_sigkilled_worker_main_process_task_runs_again_and_wait_says_where_it_is(farm: Farm, workers) -> None:
    """A task outlives two visibility timeouts while another worker sweeps (the lease holds), then runs
    again soon after its worker main process is SIGKILLed; `retrain --wait -v` says running, lost, running.
    Both runs are held (farm/hold.py) until the test has seen what it waits for: no guess at a training's length."""
    vt = LEASE_TIMEOUT
    farm.env["MLGO_FARM_CELERY_VISIBILITY_TIMEOUT"] = str(vt)  # workers and the waiting client alike
    app = make_app(load_settings(env=farm.env))
    workers.extend([farm.worker("w1", prefork=True), farm.worker("w2", prefork=True)])  # the stack's pool
    farm.hold()
    client = farm.cli_background("-v", "vocab", "retrain", "--kind", "ir", "--wait", "--timeout", "600",
                                 *TINY_FLAGS)
    status = Lines(client.stderr)
    try:
        wait_until(farm.held, 60, "the training to start and be held")
        first = wait_until(lambda: next((w for w in workers if w.log_has("training ir vocabulary")), None), 10,
                           "the worker that trains")
        second = next(w for w in workers if w is not first)
        started = time.monotonic()

        def two_timeouts_held() -> bool:
            assert _held(app), "the held training's message left the broker"
            return time.monotonic() - started > 2 * vt

        wait_until(two_timeouts_held, 2 * vt + 30, "two visibility timeouts of training")
        held = _held(app)
        assert len(held) == 1 and held[0].age < vt, held
        assert not second.log_has("training ir vocabulary"), "redelivered while its first run was alive"
        assert not list((farm.tmp / "var" / "vocab" / "trained" / "ir").glob("*/manifest.json")), "finished"
        assert f"train running on {first.name}@" in status.text(), status.text()

        pool = _children(first.proc.pid)
        assert pool, "a prefork worker has a pool process"
        assert farm.held() == [pool[0]], "the training held is the pool process's"
        os.kill(first.proc.pid, signal.SIGKILL)  # the worker main process only, not its process group
        killed = time.monotonic()
        first.proc.wait(10)
        wait_until(lambda: not any(_alive(p) for p in pool), 10, "the orphaned pool process to die with its parent")
        wait_until(lambda: len(farm.held()) == 2, 120, "the task to run again (and be held)")
        rerun = time.monotonic() - killed
        assert second.log_has("training ir vocabulary")
        print(f"\nSIGKILL of the worker main process to the task running again: {rerun:.1f}s "
              f"(visibility timeout {vt}s, a live worker sweeping every {max(1, vt // 10)}s)")
        assert rerun < 120
        wait_until(lambda: f"train running on {second.name}@" in status.text(), 30, "the client to see the rerun")
        farm.release()
        client.wait(600)
        status.join(10)
        out, err = client.stdout.read(), status.text()
    finally:
        farm.release()
        if client.poll() is None:
            client.kill()
    assert client.returncode == 0, err[-3000:] + second.log()[-3000:]
    assert out.strip().endswith("(published)")
    statuses = re.findall(r"retrain [0-9a-f-]+: (.*)", err)
    steps = [f"train running on {first.name}@", f"train lost: its worker {first.name}@",
             f"train running on {second.name}@"]
    found = [next((i for i, s in enumerate(statuses) if s.startswith(step)), -1) for step in steps]
    assert -1 not in found and found == sorted(found), statuses
    assert len(VOCABULARIES.read_index(farm.store)) == 1


def test_a_chain_delivered_twice_at_once_publishes_one_version(farm: Farm, workers) -> None:
    """A redelivery while the first run still lives (its worker lost Redis for longer than the lease) is the
    same message twice: both runs train, stage apart, validate and publish, and make one version."""
    import redis

    enqueued = farm.cli("vocab", "retrain", "--kind", "ir", *TINY_FLAGS)
    assert enqueued.returncode == 0, enqueued.stderr
    broker = redis.Redis.from_url(make_app(load_settings(env=farm.env)).conf.broker_url)
    broker.rpush("celery", broker.lindex("celery", 0))  # kombu's own restore: the same message, id and tag
    assert broker.llen("celery") == 2
    workers.append(w := farm.worker("w1", concurrency=2))
    done = r"Task vocabgen\.tasks\.publish\[[0-9a-f-]+\] (succeeded|raised)"
    wait_until(lambda: len(re.findall(done, w.log())) == 2, 180, "both chains to publish")
    assert w.log().count("training ir vocabulary") == 2 and re.findall(done, w.log()) == ["succeeded"] * 2
    assert len(VOCABULARIES.read_index(farm.store)) == 1
    assert farm.store.list("vocab-staging/") == [], "each run removed its own staged files"


def test_wait_says_the_task_is_queued_with_no_worker(farm: Farm) -> None:
    res = farm.cli("vocab", "retrain", "--kind", "ir", "--wait", "--timeout", "2", *TINY_FLAGS)
    assert res.returncode == 1
    assert re.fullmatch(r"mlgo-farm: error: retrain did not finish within 2s: train queued \(no Celery worker is "
                        r"running\) \(task [0-9a-f-]+\)\n", res.stderr), res.stderr


def _retries(log: str, task: str) -> list[float]:
    """The delays of `task`'s retries, as the worker logged them ("... retry: Retry in 2.3s: ...")."""
    pattern = rf"Task vocabgen\.tasks\.{task}\[[0-9a-f-]+\] retry: Retry in ([0-9.]+)s"
    return [float(d) for d in re.findall(pattern, log)]


def test_store_outage_during_training_retries_the_staging_upload(farm: Farm, workers) -> None:
    workers.append(farm.worker("w1"))
    farm.hold()
    client = farm.cli_background("vocab", "retrain", "--kind", "ir", "--wait", "--timeout", "240", *TINY_FLAGS)
    wait_until(farm.held, 60, "the training to start and be held")
    # held after its first epoch, the training has told the waiting client where it is (farm/client.py STAGE)
    backend = make_app(load_settings(env=farm.env)).backend
    metas = [json.loads(backend.client.get(k)) for k in backend.client.keys("celery-task-meta-*")]
    assert [m["result"]["stage"] for m in metas if m["status"] == "STARTED"] == [
        {"name": "held-out training", "done": 1, "total": int(TINY_FLAGS[3])}]
    farm.proxy.stop()
    farm.release()  # the training ends while the store is down
    try:
        wait_until(lambda: _retries(workers[0].log(), "train"), 120, "the staging upload to fail and be retried")
    finally:
        farm.proxy.start()
    out, err = client.communicate(timeout=300)
    assert client.returncode == 0, err + workers[0].log()[-3000:]
    version = out.split()[1]
    store = farm.store
    assert json.loads(store.get("vocab/ir/latest.json"))["version"] == version
    assert store.exists(f"vocab/ir/{version}/vocab.json") and store.exists(f"vocab/ir/{version}/manifest.json")
    assert workers[0].log().count("training ir vocabulary") == 1, "the retry reuses the finished training"


def test_store_outage_during_publish_is_retried_with_growing_delays(farm: Farm, workers) -> None:
    """The endpoint goes down at the publish task's first upload of the version and comes back after three retries."""
    workers.append(farm.worker("w1"))
    farm.proxy.trip_on(b"PUT /mlgo-vocab/farm/vocab/ir/")
    client = farm.cli_background("-v", "vocab", "retrain", "--kind", "ir", "--wait", "--timeout", "120", *TINY_FLAGS)
    try:
        wait_until(lambda: len(_retries(workers[0].log(), "publish")) >= 3, 60, "three retries of the publish")
    finally:
        farm.proxy.start()
    out, err = client.communicate(timeout=120)
    log = workers[0].log()
    assert client.returncode == 0, err + log[-3000:]
    assert farm.proxy.tripped.is_set()
    assert re.search(r"retrain [0-9a-f-]+: publish retrying after put vocab/ir/", err), err[-3000:]
    delays = _retries(log, "publish")
    assert len(delays) == 3 and delays[0] < delays[1] < delays[2], delays
    assert re.search(r"tasks\.publish\[[0-9a-f-]+\] retry: Retry in [0-9.]+s: StoreError\('put vocab/ir/", log)
    assert not _retries(log, "train") and not _retries(log, "validate"), "the outage hit the publish task only"
    version = out.split()[1]
    store = farm.store
    index = VOCABULARIES.read_index(store)
    assert [v["version"] for v in index] == [version]
    assert json.loads(store.get("vocab/ir/latest.json"))["version"] == version
    assert sorted(store.list("vocab/")) == sorted(
        ["vocab/index.json", "vocab/ir/latest.json", f"vocab/ir/{version}/manifest.json",
         f"vocab/ir/{version}/vocab.json"])
    assert store.list("vocab-staging/") == []


def _crashing_llvm(tmp: Path, toolchain) -> Path:
    """The real LLVM, except that llvm-ir2vec dies of SIGSEGV."""
    bin_dir = tmp / "crashing-llvm" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in Path(toolchain.bin_dir).iterdir():
        (bin_dir / tool.name).symlink_to(tool)
    (bin_dir / "llvm-ir2vec").unlink()
    (bin_dir / "llvm-ir2vec").write_text("#!/bin/sh\nkill -SEGV $$\n")
    (bin_dir / "llvm-ir2vec").chmod(0o755)
    return bin_dir


def test_llvm_crash_in_validation_publishes_nothing_and_leaves_no_staging(farm: Farm, workers, toolchain) -> None:
    good = farm.worker("good")
    assert farm.cli("vocab", "retrain", "--kind", "ir", "--wait", "--timeout", "120", *TINY_FLAGS).returncode == 0
    stop(good.proc)
    store = farm.store
    before = {key: store.get(key) for key in store.list("vocab/")}
    assert "vocab/ir/latest.json" in before and "vocab/index.json" in before
    crashing = {"MLGO_FARM_LLVM_BIN_DIR": str(_crashing_llvm(farm.tmp, toolchain))}
    workers.append(farm.worker("crashing", extra_env=crashing))
    res = farm.cli("vocab", "retrain", "--kind", "ir", "--wait", "--timeout", "120", *TINY_FLAGS, "--seed", "1")
    assert res.returncode == 3, res.stderr + workers[0].log()[-3000:]
    # the steps done before it (farm/progress.py lines: train), then the one error line
    err = [ln for ln in res.stderr.strip().splitlines() if not progress.LINE.match(ln)]
    assert len(err) == 1 and err[0].startswith("mlgo-farm: error: llvm-ir2vec"), err
    assert store.list("vocab-staging/") == [], "a terminal failure removes the staged files"
    assert workers[0].log_has("dropping staged ir vocabulary")
    assert {key: store.get(key) for key in store.list("vocab/")} == before, "latest, index and versions unchanged"


def test_a_corrupt_index_fails_at_once_without_retries(farm: Farm, workers) -> None:
    workers.append(farm.worker("w1"))
    store = farm.store
    store.put("vocab/index.json", b"{not json")
    res = farm.cli("vocab", "retrain", "--kind", "ir", "--wait", "--timeout", "120", *TINY_FLAGS)
    log = workers[0].log()
    assert res.returncode == 4, res.stderr + log[-3000:]
    # the steps done before it (farm/progress.py lines), then the one error line
    assert [ln for ln in res.stderr.strip().splitlines() if not progress.LINE.match(ln)] == [
        "mlgo-farm: error: vocab/index.json in s3://mlgo-vocab/farm: invalid JSON: "
        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    ]
    assert not _retries(log, "publish")
    assert re.search(r"Task vocabgen\.tasks\.publish\[[0-9a-f-]+\] raised unexpected: CorruptObject", log), log[-3000:]
    assert store.list("vocab/") == ["vocab/index.json"] and store.get("vocab/index.json") == b"{not json"
    assert store.list("vocab-staging/") == []


def _stage(store, directory: str, staged_at: float | None) -> None:
    """What a train run leaves in the staging area (the marker only when `staged_at` is given)."""
    if staged_at is not None:
        store.put(f"{directory}/staged.json", json.dumps({"staged_at": staged_at}).encode())
    store.put(f"{directory}/vocab.json", b"{}")
    store.put(f"{directory}/manifest.json", b"{}")


def test_beat_cleans_staged_files_of_chains_that_are_gone_and_old(farm: Farm, workers) -> None:
    """Kept: a chain whose message a worker holds (a retry waiting for its countdown), and a recent one.
    Removed: an old one with no message left, and one of the older layout without a marker. The lease
    also covers the waiting retry: three visibility timeouts later it was delivered once."""
    store, sha, vt = farm.store, "ab" * 32, 4
    farm.env["MLGO_FARM_CELERY_VISIBILITY_TIMEOUT"] = str(vt)
    app = make_app(load_settings(env=farm.env))
    workers.append(w := farm.worker("w1"))
    waiting = app.send_task("vocabgen.tasks.validate", args=[{}], countdown=3600, ignore_result=True)  # held
    held_at = wait_until(lambda: [x for x in _held(app) if x.task_id == waiting.id] and time.monotonic(), 30,
                         "the worker to hold the retry")
    wait_until(lambda: time.monotonic() - held_at > 3 * vt, 3 * vt + 30, "three visibility timeouts")
    assert [x.age < vt for x in _held(app) if x.task_id == waiting.id] == [True]
    assert w.log().count(f"Task vocabgen.tasks.validate[{waiting.id}] received") == 1, "delivered again"
    now = time.time()
    dirs = {
        "active": f"vocab-staging/ir/{sha}/{waiting.id}/run1",
        "gone": f"vocab-staging/ir/{sha}/{'1' * 8}-gone/run1",
        "recent": f"vocab-staging/ir/{sha}/{'2' * 8}-recent/run1",
        "legacy": f"vocab-staging/mir/{sha}/{'3' * 8}-legacy",
    }
    two_days = 2 * 24 * 3600
    _stage(store, dirs["active"], now - two_days)
    _stage(store, dirs["gone"], now - two_days)
    _stage(store, dirs["recent"], now - 60)
    _stage(store, dirs["legacy"], None)
    done = app.send_task("vocabgen.tasks.clean_staging").get(timeout=60)  # what beat sends hourly
    assert done == {"removed": sorted([dirs["gone"], dirs["legacy"]]), "active": [dirs["active"]],
                    "recent": [dirs["recent"]]}
    left = set(store.list("vocab-staging/"))
    assert {k.rpartition("/")[0] for k in left} == {dirs["active"], dirs["recent"]}
    assert len(left) == 6
    assert "clean-staging" in app.conf.beat_schedule


def test_publish_lock_errors_never_show_the_redis_password(tmp_path: Path) -> None:
    """Against the stack's own Redis (requirepass): the lock uses the password, and no message shows it."""
    import redis

    from farm.errors import StoreError
    from farm.locks import LOCK_NAME, publish_lock
    from farm.objectstore import S3Store
    from farm.secrets import effective_redis_url, redis_password
    from master import stack
    from tests.servers import free_port

    port = free_port()
    s = load_settings(env={**os.environ, "MLGO_FARM_CELERY_BROKER_URL": f"redis://127.0.0.1:{port}/0",
                           "MLGO_FARM_CELERY_RESULT_BACKEND": f"redis://127.0.0.1:{port}/1"})
    store = S3Store("mlgo-vocab", "farm", "http://127.0.0.1:9")  # not a directory store: the Redis lock
    try:
        stack.redis_up(s)
        password = redis_password(s)
        assert password and password not in s.celery.broker_url
        with publish_lock(store, s.celery.broker_url, wait=1, settings=s):
            holder = redis.Redis.from_url(effective_redis_url(s.celery.broker_url, s))
            assert holder.get(LOCK_NAME), "taken with the generated password"
            with pytest.raises(StoreError) as busy, publish_lock(store, s.celery.broker_url, wait=0.2, settings=s):
                pass
            holder.close()
        assert str(busy.value) == f"the publish lock in Redis at redis://:***@127.0.0.1:{port}/0 is busy after 0.2s"
        wrong = f"redis://:not-{password}@127.0.0.1:{port}/0"
        with pytest.raises(StoreError) as refused, publish_lock(store, wrong, settings=s):
            pass
        message = str(refused.value)
        assert message.startswith(f"cannot take the publish lock in Redis at redis://:***@127.0.0.1:{port}/0: ")
        assert password not in message and "not-" not in message
    finally:
        stack.redis_down(s)


def test_retry_delays_grow_despite_the_jitter(monkeypatch: pytest.MonkeyPatch) -> None:
    from farm import celery_app as tasks

    def delays(jitter: float) -> list[float]:
        monkeypatch.setattr(tasks.random, "random", lambda: jitter)
        return [tasks.retry_delay(n) for n in range(tasks.RELIABLE["max_retries"])]

    low, high = delays(0.0), delays(0.999999)
    assert low[0] == 1.0 and high[-1] == tasks.RETRY_MAX
    for n in range(len(low) - 1):
        assert high[n] < low[n + 1] or low[n + 1] == tasks.RETRY_MAX, (n, high[n], low[n + 1])
