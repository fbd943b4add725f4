"""The policy chain for real: redis-server, `celery worker` subprocesses, moto's S3 server, the real LLVM."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from farm import hold
from farm.artifacts import POLICIES, VOCABULARIES
from farm.objectstore import S3Store
from farm.toolchain import Toolchain
from tests import servers
from tests.policyhost.callgraph import write_sources
from tests.policyhost.conftest import CSRC, publish_vocab
from tests.servers import stop, wait_until

ROOT = Path(__file__).resolve().parents[2]
MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))
TINY_VOCAB = ["--dim", "8", "--epochs", "5", "--batch-size", "64"]


@dataclass
class Worker:
    proc: subprocess.Popen
    logfile: Path

    def log(self) -> str:
        return self.logfile.read_text() if self.logfile.exists() else ""

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


@dataclass
class Farm:
    env: dict[str, str]
    tmp: Path
    sources: Path
    store: S3Store
    workers: list[Worker] = field(default_factory=list)

    def worker(self, name: str, concurrency: int = 1, extra_env: dict[str, str] | None = None,
               prefork: bool = False) -> Worker:
        """A worker; `prefork`: the farm's own pool even for one process (Celery's time limits need it)."""
        log = self.tmp / f"{name}.log"
        pool = ["--pool=prefork", f"--concurrency={concurrency}"] if concurrency > 1 or prefork else ["--pool=solo"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "farm.celery_app", "worker", *pool, "--loglevel=INFO",
             "-n", f"{name}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat", f"--logfile={log}"],
            cwd=ROOT, env={**self.env, **(extra_env or {})}, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        w = Worker(proc, log)
        self.workers.append(w)
        wait_until(lambda: "ready." in w.log() or proc.poll() is not None, 60, f"worker {name} ready")
        assert proc.poll() is None, w.log()
        return w

    def cli(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run([MLGO_FARM, *args], env=self.env, capture_output=True, text=True, timeout=timeout,
                              cwd=self.tmp)

    def cli_background(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen([MLGO_FARM, *args], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=self.tmp)


@pytest.fixture
def farm(redis_url: str, tmp_path: Path, toolchain: Toolchain, monkeypatch: pytest.MonkeyPatch) -> Iterator[Farm]:
    """Redis, S3 and a published IR dataset made from generated C sources (the policy's training corpus)."""
    import redis

    from workers.corpus import from_sources
    from workers.dataset import publish as publish_dataset
    from workers.triplets import build_dataset

    redis.Redis.from_url(redis_url).flushall()
    s3 = servers.start_s3()
    env = {
        "MLGO_FARM_CELERY_BROKER_URL": f"{redis_url}/0",
        "MLGO_FARM_CELERY_RESULT_BACKEND": f"{redis_url}/1",
        "MLGO_FARM_STORE_URL": "s3://mlgo-policy/farm",
        "MLGO_FARM_STORE_ENDPOINT_URL": s3.url,
        "MLGO_FARM_STORE_ACCESS_KEY_ID": "testing",
        "MLGO_FARM_STORE_SECRET_ACCESS_KEY": "testing",
        "PYSTOW_HOME": str(tmp_path / "pystow"),
        # the size gate builds the tests' own small program (a real benchmark is a Debian download)
        "MLGO_FARM_GATE_POLICY_BENCHMARKS": str(CSRC),
        "MLGO_FARM_GATE_POLICY_SIZE": "true",
        # these tests are about the chain, not about beating LLVM on a toy program: any size passes,
        # unless a test asks for more (a 50 % margin nothing reaches)
        "MLGO_FARM_GATE_POLICY_MARGIN": "-100",
        "MLGO_FARM_GATE_POLICY_SIZE_TOLERANCE": "1000",
        # the smallest training that runs every stage, on small packages of generated C
        "MLGO_FARM_POLICY_RECIPE": "smoke",
        **_policy_packages(tmp_path, toolchain),
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    store = S3Store("mlgo-policy", "farm", s3.url, access_key_id="testing", secret_access_key="testing")
    store.ensure_bucket()
    sources = write_sources(tmp_path / "callgraph")
    for c in CSRC.glob("*.c"):  # their opcodes take the vocabulary past the promotion gate's coverage floor
        shutil.copy(c, sources / c.name)
    corpus = from_sources(sources, tmp_path / "corpus", toolchain, jobs=2, level="Oz")
    publish_dataset(build_dataset(corpus.path, tmp_path / "dataset", "ir", toolchain), store)
    f = Farm({**os.environ}, tmp_path, sources, store)
    try:
        yield f
    finally:
        for w in f.workers:
            stop(w.proc)
        s3.stop()


def _policy_packages(tmp: Path, toolchain: Toolchain) -> dict[str, str]:
    """[policy] train, validation and evaluation: one small package of generated C each."""
    from workers.corpus import from_sources

    env = {}
    for split, seed in (("train", 21), ("validation", 22), ("evaluation", 23)):
        src = write_sources(tmp / f"{split}-src", files=3, per_file=10, seed=seed)
        corpus = from_sources(src, tmp / f"{split}-corpus", toolchain, jobs=2, level="Oz")
        env[f"MLGO_FARM_POLICY_{split.upper()}"] = f"{split}pkg={corpus.path}"
    return env


def _task_seconds(log: str) -> list[float]:
    return [float(x) for x in re.findall(r"Task policyhost\.tasks\.retrain\[[^\]]+\] succeeded in ([0-9.]+)s", log)]


def test_a_vocabulary_publish_retrains_validates_and_publishes_the_policy(farm: Farm) -> None:
    w = farm.worker("w1")
    done = farm.cli("vocab", "retrain", "--kind", "ir", "--wait", "--timeout", "300", *TINY_VOCAB)
    assert done.returncode == 0, done.stderr + w.log()[-3000:]
    vocab = done.stdout.split()[1]
    # it passed its own rules and waits for the policy retrained with it: the publish started that chain
    assert done.stdout.startswith(f"ir {vocab} (published, awaiting policy_size; latest stays at none"), done.stdout
    assert VOCABULARIES.read_latest(farm.store, "ir") is None
    latest = wait_until(lambda: POLICIES.read_latest(farm.store, "inline"), 600, "the policy chain to publish")
    # nothing was in force: the vocabulary's own checks decide once its policy is settled (the policy passes too)
    assert wait_until(lambda: (VOCABULARIES.read_latest(farm.store, "ir") or {}).get("version") == vocab, 120,
                      "the size check to promote the vocabulary")
    manifest = POLICIES.show(farm.store, "inline", latest["version"])
    assert manifest["vocab_version"] == vocab and latest["vocab_version"] == vocab
    assert {"callee_embedding", "caller_embedding"} <= set(manifest["features"])
    assert manifest["training"]["corpus_source"] == str(farm.sources)  # the corpus the vocabulary's dataset came from
    assert manifest["training"]["dataset_id"].startswith("ir-")
    assert manifest["validation"]["ok"] and manifest["validation"]["inputs_match_llvm"]
    assert manifest["training"]["splits"] == {"train": ["callgraph", "trainpkg"], "validation": ["validationpkg"],
                                              "evaluation": ["evaluationpkg"]}
    assert manifest["metrics"]["validation_ratio"] > 0 and manifest["metrics"]["heldout"][0]["package"] == \
        "evaluationpkg"
    assert "-inline-ir2vec-" in latest["version"]
    # the native host's weights are the version's: in its signed manifest, and stored with that sha256
    weights = farm.store.get(f"policies/inline/{latest['version']}/model.weights")
    assert manifest["weights"] == {"file": "model.weights", "sha256": hashlib.sha256(weights).hexdigest(),
                                   "format_version": 1}
    wait_until(lambda: _task_seconds(w.log()), 60, "the task's result in the log")
    print(f"policy chain after the vocabulary: {_task_seconds(w.log())[0]:.1f}s")  # measured wall time (-s)
    listed = farm.cli("policy", "list")
    assert latest["version"] in listed.stdout and vocab in listed.stdout


def test_two_identical_requests_publish_one_version(farm: Farm, ir2vec_vocab: Path) -> None:
    w = farm.worker("w1", concurrency=2)
    vocab = publish_vocab(ir2vec_vocab.read_bytes())  # in-process: no publish task, so no third request
    args = ("policy", "retrain", "--vocab", vocab, "--corpus", str(farm.sources), "--wait", "--timeout", "600")
    clients = [farm.cli_background(*args) for _ in range(2)]
    outs = [c.communicate(timeout=660) for c in clients]
    assert all(c.returncode == 0 for c in clients), [o[1] for o in outs] + [w.log()[-3000:]]
    lines = sorted(o[0].strip() for o in outs)
    versions = {line.split()[2] for line in lines}
    assert len(versions) == 1, lines
    assert re.search(r"\(already published at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, size check passed: "
                     r"\.text against the heuristic: csrc ", lines[0]), lines
    assert "(published, size check passed: .text against the heuristic: csrc " in lines[1], lines
    assert lines[1].endswith(f"; now latest; vocabulary ir {vocab} latest)"), lines
    assert len(_task_seconds(w.log())) == 2  # both ran; the second reused the first's model
    assert [v["version"] for v in POLICIES.read_index(farm.store)] == list(versions)


def test_bad_requests_are_one_line(farm: Farm) -> None:
    farm.worker("w1")
    res = farm.cli("policy", "retrain", "--vocab", "no-such-version", "--wait", "--timeout", "120")
    assert res.returncode != 0 and res.stderr.strip().splitlines() == [
        "mlgo-farm: error: no ir vocabulary version no-such-version in s3://mlgo-policy/farm"]
    res = farm.cli("policy", "retrain", "--vocab", "../x")
    assert res.returncode == 2 and "invalid version name" in res.stderr and len(res.stderr.splitlines()) == 1
    assert farm.store.list("policies/") == []


def test_a_retrain_on_splits_sharing_code_is_refused_before_it_trains(farm: Farm, ir2vec_vocab: Path,
                                                                       have_apt_source: bool) -> None:
    """The Celery retrain checks its splits as `policy train` does (policytrain/overlap.py): with pcre2 training and
    pcre3, its older series, held out, the request fails in one line and nothing is trained or published."""
    if not have_apt_source:
        pytest.skip("needs apt-get source")
    w = farm.worker("w1", extra_env={"MLGO_FARM_POLICY_TRAIN": "pcre2", "MLGO_FARM_POLICY_EVALUATION": "pcre3"})
    vocab = publish_vocab(ir2vec_vocab.read_bytes())
    res = farm.cli("policy", "retrain", "--vocab", vocab, "--corpus", str(farm.sources), "--wait", "--timeout", "600",
                   timeout=660)
    assert res.returncode != 0, res.stdout + w.log()[-3000:]
    assert res.stderr.strip().splitlines() == [
        "mlgo-farm: error: package splits: 1 pair(s) of packages share code with no decision in "
        "policytrain/data/splits.toml [overlap]: pcre2 and pcre3"], res.stderr
    assert farm.store.list("policies/") == []
    trained = farm.tmp / "var" / "policy" / "trained"
    assert not list(trained.rglob("model.json")) and not (trained.parent / "corpus" / "debian-pcre3").exists()


def test_worker_killed_mid_training_is_redelivered(farm: Farm, ir2vec_vocab: Path) -> None:
    """The training is held after its first epoch (farm/hold.py) until the kill: no guess at its length."""
    gate = farm.tmp / "hold-training"
    fast = {"MLGO_FARM_CELERY_VISIBILITY_TIMEOUT": "3", hold.ENV: str(gate)}
    gate.touch()
    first = farm.worker("doomed", extra_env=fast)
    vocab = publish_vocab(ir2vec_vocab.read_bytes())
    client = farm.cli_background("policy", "retrain", "--vocab", vocab, "--corpus", str(farm.sources),
                                 "--wait", "--timeout", "900")
    wait_until(lambda: hold.held_marker(gate).exists(), 300, "the training to start and be held")
    assert "training the inline policy" in first.log()
    first.kill()
    gate.unlink()
    assert not POLICIES.read_index(farm.store), "the killed worker must not have published"
    rescuer = farm.worker("rescuer", extra_env=fast)
    out, err = client.communicate(timeout=960)
    assert client.returncode == 0, err + rescuer.log()[-3000:]
    assert "(published, size check passed" in out, out
    assert "training the inline policy" in rescuer.log()
    assert POLICIES.read_latest(farm.store, "inline")["vocab_version"] == vocab


def test_a_retrain_past_its_time_limit_stops_and_its_vocabulary_is_told_why(farm: Farm, ir2vec_vocab: Path) -> None:
    """The training is held (farm/hold.py) until long past a 2 s `[policy] retrain_time_limit`: Celery's soft limit
    stops it wherever it is, the client gets one line, nothing is published, and the vocabulary that waited for the
    policy is settled with the reason instead of waiting for ever: with another vocabulary in force it stays a
    candidate (a failure is no evidence; vocabgen/gate.py `no_policy_trained`). No guess at the training's length:
    held, it cannot finish first."""
    gate = farm.tmp / "hold-training"
    gate.touch()
    w = farm.worker("w1", prefork=True,
                    extra_env={"MLGO_FARM_POLICY_RETRAIN_TIME_LIMIT": "2", hold.ENV: str(gate)})
    in_force = publish_vocab(json.dumps(json.loads(ir2vec_vocab.read_bytes()), indent=1).encode())
    waiting = publish_vocab(ir2vec_vocab.read_bytes(), awaiting_policy=True)
    res = farm.cli("policy", "retrain", "--vocab", waiting, "--corpus", str(farm.sources), "--wait", "--timeout", "600",
                   timeout=660)
    gate.unlink()
    why = "the training passed its time limit ([policy] retrain_time_limit, 2 s)"
    assert res.returncode == 1, res.stdout + res.stderr + w.log()[-3000:]
    assert res.stderr.strip().splitlines() == [f"mlgo-farm: error: policy retrain stopped: {why}"], res.stderr
    assert "Soft time limit (2s) exceeded" in w.log()
    assert farm.store.list("policies/") == []
    held = next(v for v in VOCABULARIES.read_index(farm.store) if v["version"] == waiting)
    assert held["state"] == "candidate" and held["gate"]["pending"] == [], held["gate"]
    assert held["gate"]["reasons"] == [f"policy_size: no policy could be trained with it: {why}; {in_force} stays "
                                       "in force"], held["gate"]
    assert VOCABULARIES.read_latest(farm.store, "ir")["version"] == in_force
    assert not list((farm.tmp / "var" / "policy" / "trained").rglob("model.json"))


def test_a_policy_larger_than_the_one_in_force_fails_the_gate_but_does_not_hold_back_its_vocabulary(
        farm: Farm, ir2vec_vocab: Path) -> None:
    """The second policy must shrink the benchmark by half (margin 50 %): it cannot, so it stays a
    candidate, `latest` stays on the first, and `policy retrain --wait` exits 12 with the sizes, so its
    builder fails and mails. The vocabulary it was trained with does not wait for a policy that beats
    the heuristic: its held-out numbers are not worse than the in-force vocabulary's policy's (within
    the tests' tolerance), so it becomes `latest`."""
    first = publish_vocab(ir2vec_vocab.read_bytes())
    common = ("--corpus", str(farm.sources), "--wait", "--timeout", "600")
    w = farm.worker("w1")
    done = farm.cli("-v", "policy", "retrain", "--vocab", first, *common)
    assert done.returncode == 0, done.stderr + w.log()[-3000:]
    # the waiting client (the builder's step) shows the training's progress as it goes
    assert re.search(r"retrain [0-9a-f-]+: retrain: round 1/1: explored \d+ modules, \d+ smaller", done.stderr), \
        done.stderr
    in_force = done.stdout.split()[2]
    stop(w.proc)
    waiting = publish_vocab(ir2vec_vocab.read_bytes().replace(b"0.", b"0.1", 50), awaiting_policy=True)
    assert VOCABULARIES.read_latest(farm.store, "ir")["version"] == first
    w = farm.worker("w2", extra_env={"MLGO_FARM_GATE_POLICY_MARGIN": "50"})
    done = farm.cli("policy", "retrain", *common)  # the newest vocabulary: the one waiting for its policy
    assert done.returncode == 12, done.stdout + done.stderr + w.log()[-3000:]
    line = done.stdout.strip()
    assert len(done.stdout.splitlines()) == 1 and "size check FAILED: .text against the heuristic: csrc " in line
    assert f", policy {in_force} " in line and "not below 0.5000x" in line and f"latest stays at {in_force}" in line
    assert line.endswith(f"vocabulary ir {waiting} latest)"), line
    new = line.split()[2]
    states = {v["version"]: v["state"] for v in POLICIES.read_index(farm.store)}
    assert states == {in_force: "latest", new: "candidate"}, states
    assert POLICIES.read_latest(farm.store, "inline")["version"] == in_force
    promoted = next(v for v in VOCABULARIES.read_index(farm.store) if v["version"] == waiting)
    assert promoted["state"] == "latest" and promoted["gate"]["passed"], promoted["gate"]
    detail = next(c["detail"] for c in promoted["gate"]["checks"] if c["rule"] == "policy_size")
    assert detail.startswith(f"policy {new} trained with {waiting}: held-out geomean ") and \
        f"for policy {in_force} trained with {first} (evaluationpkg " in detail and "not worse than it" in detail
    assert VOCABULARIES.read_latest(farm.store, "ir")["version"] == waiting
    again = farm.cli("policy", "retrain", "--vocab", waiting, *common)  # settled: not measured again
    assert again.returncode == 12
    assert re.sub(r"\(already published at [^,]+ UTC,", "(published,", again.stdout) == done.stdout, again.stdout
