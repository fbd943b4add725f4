"""A real Buildbot master and two real workers on loopback: a fanned-out build starts one build per shard on
the workers, merges their parts from the store and publishes the very bytes of an unsharded build; a shard
that fails leaves the merge refusing, in one line, and nothing published."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from farm.cli import main
from farm.config import load_settings
from master import buildbot_worker, control
from master.rest import MasterAPI
from tests.conftest import CSRC, DATA
from tests.master.sharded import NAME
from tests.servers import free_port, stop_all, stop_master, wait_until

REPO = Path(__file__).resolve().parents[2]
WORKERS = ("local", "second")


def _until(what: str, check, timeout: float = 60):
    return wait_until(check, timeout, what)


@pytest.fixture
def farm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """A master running the test registry with two workers, `local` (2 build slots: one for a waiting build,
    one for a shard) and `second` (1 slot); everything started is stopped afterwards."""
    src = tmp_path / "src"
    src.mkdir()
    for f in [*CSRC.glob("*.c"), DATA / "bad" / "syntax_error.c"]:  # one source that fails: a listed skip
        shutil.copy(f, src / f.name)
    cfg = tmp_path / "sharded.cfg"
    cfg.write_text("from master.buildmaster import build_config\nfrom tests.master.sharded import registry\n"
                   f"BuildmasterConfig = build_config(registry=registry({str(src)!r}))\n")
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_PB_PORT", str(free_port()))
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WWW_PORT", str(free_port()))
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WORKERS", "local::2,second::1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    s = load_settings()
    stops: list = []


    try:
        control.start(s, cfg)
        stops.append(lambda: stop_master(s))
        dirs = {}
        for name in WORKERS:
            dirs[name] = buildbot_worker.create(s, name=name)
            buildbot_worker.start(s, dirs[name])
            stops.append(lambda d=dirs[name]: buildbot_worker.stop(s, d))
        api = MasterAPI.for_settings(s)
        api.wait_workers(list(WORKERS), timeout=60)
        yield api, s, dirs
    finally:
        stop_all(stops)  # every part is stopped even when an earlier one fails to


def _store(s) -> Path:
    return s.var_dir / "store"


def _published(s) -> tuple[str, dict[str, bytes]]:
    latest = json.loads((_store(s) / "datasets/ir/latest.json").read_bytes())
    folder = _store(s) / "datasets/ir" / latest["id"]
    return latest["id"], {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _build_props(api: MasterAPI, buildid: int) -> dict:
    (props,) = api.get(f"builds/{buildid}/properties")["properties"]
    return {k: v[0] for k, v in props.items()}


def _force(api: MasterAPI, capsys, *props: str) -> tuple[int, str]:
    argv = ["master", "force", NAME, *(a for p in props for a in ("-p", p)), "--wait", "--timeout", "120",
            "--url", api.base]
    code = main(argv)
    return code, capsys.readouterr().out


def test_shards_on_two_workers_merge_to_the_unsharded_bytes_and_a_failed_shard_publishes_nothing(
        farm, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    api, s, dirs = farm
    code, out = _force(api, capsys)  # shards=1: one build, no fan-out
    assert code == 0, out
    one_id, one = _published(s)
    assert f"{NAME}-shard" not in out and f"=> dataset = {one_id}" in out
    assert json.loads(one["manifest.json"])["skipped"][0]["module"] == "syntax_error.c"

    code, out = _force(api, capsys, "shards=2")
    assert code == 0, out
    # --wait followed the shard builds too; each request ran (none merged into another: `shard` differs)
    assert f"{NAME}-shard #1: success" in out and f"{NAME}-shard #2: success" in out and "SKIPPED" not in out, out
    assert _published(s) == (one_id, one), "the merged dataset is the unsharded one, byte for byte"
    builds = {(b.builder, b.number): b for b in api.builds_after(0)}
    parent = builds[(NAME, 2)]
    ran = dict(parent.steps)
    assert [ran[n] for n in ("corpus", "triplets", "fan-out", "merge", "publish", "drop-shards")] == [
        "skipped", "skipped", "success", "success", "success", "success"], parent.steps
    assert ran["locks_acquire"] == "success", "a waiting build takes the fan-out-waiting lock"
    shard_props = [_build_props(api, builds[(f"{NAME}-shard", n)].buildid) for n in (1, 2)]
    assert sorted(p["shard"] for p in shard_props) == ["1/2", "2/2"]
    run = _build_props(api, parent.buildid)["shard_run"]
    assert run.startswith(f"{NAME}-b{parent.buildid}-") and {p["shard_run"] for p in shard_props} == {run}
    # the waiting build can only hold local's second slot; the shards overlap, one on each worker
    assert _build_props(api, parent.buildid)["workername"] == "local"
    assert {p["workername"] for p in shard_props} == set(WORKERS)
    assert not any((_store(s) / "datasets/shards").rglob("*.*")), "drop-shards emptied the run's folder"
    assert not [d for w in dirs.values() for d in w.glob(f"{NAME}-shard/shard-*")], "shard builds clean up"

    # `second` comes back with an LLVM that is not there: every shard it runs fails
    buildbot_worker.stop(s, dirs["second"])
    _until("second disconnected", lambda: "second" not in api.connected_workers())
    monkeypatch.setenv("MLGO_FARM_LLVM_BIN_DIR", "/nonexistent/llvm/bin")
    buildbot_worker.start(s, dirs["second"])
    monkeypatch.delenv("MLGO_FARM_LLVM_BIN_DIR")
    api.wait_workers(["second"], timeout=60)
    (lid,) = [w["workerid"] for w in api.get("workers")["workers"] if w["name"] == "local"]
    last = api.last_buildid()
    bsid = api.force(NAME, {"shards": "2"})
    # once the waiting build runs on local, local takes no more builds: both shards go to `second`
    _until("the waiting build", lambda: [b for b in api.builds_after(last) if b.builder == NAME])
    api.rpc(f"workers/{lid}", "pause", reason="shards to second")
    try:
        _until("the fanned-out build to end", lambda: api.get(f"buildsets/{bsid}")["buildsets"][0]["complete"], 120)
    finally:
        api.rpc(f"workers/{lid}", "unpause")
    (failed,) = [b for b in api.builds_after(last) if b.builder == NAME]
    assert failed.result == "failure"
    steps = dict(failed.steps)
    assert (steps["fan-out"], steps["merge"], steps["drop-shards"]) == ("failure", "failure", "success"), failed.steps
    assert "publish" not in steps, "the build halted at the merge; only the clean-up ran after it"
    tail = api.step_log_tail(failed.buildid, "merge").splitlines()
    (line,) = [ln for ln in tail if ln.startswith("mlgo-farm: error:")]
    # (a shard may have reached local's free slot before the pause: it then succeeded, and is not named)
    shard_builds = [b for b in api.builds_after(last) if b.builder == f"{NAME}-shard"]
    lost = sorted(_build_props(api, b.buildid)["shard"] for b in shard_builds if b.result == "failure")
    assert lost and all(_build_props(api, b.buildid)["workername"] == "second"
                        for b in shard_builds if b.result == "failure")
    assert f"shard {', '.join(lost)} missing" in line and "nothing merged" in line, tail
    assert not any((_store(s) / "datasets/shards").rglob("*.*")), "the parts that did arrive were dropped"
    assert _published(s) == (one_id, one), "nothing published"
