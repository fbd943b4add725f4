"""Real Buildbot master and worker on free loopback ports: forced, changed and triggered builds,
who may control the farm over HTTP, what a force may set, and which requests Buildbot may merge."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from farm.cli import main
from farm.config import load_settings
from farm.errors import FarmError
from master import buildbot_worker, control
from master.forcing import form_fields
from master.layout import PASSWORD_ENV, users_file, worker_password
from master.procs import farm_env, run, venv_tool
from master.registry import DEBIAN_PACKAGES, REGISTRY, loop_trials
from master.rest import MasterAPI
from tests.master.triggered import PIPELINE
from tests.servers import free_port, stop_all, stop_master, wait_until

REPO = Path(__file__).resolve().parents[2]
FORBIDDEN = {"code": -32600, "message": "you need to have role 'operator'"}


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mailbox):
    """Start a master (config file chosen by the test) and one local worker; stop both afterwards.

    The API it returns logs in as the generated web admin for control calls.
    """
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_PB_PORT", str(free_port()))
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WWW_PORT", str(free_port()))
    monkeypatch.setenv("MLGO_FARM_SMTP_PORT", str(mailbox.port))
    monkeypatch.setenv("MLGO_FARM_SMTP_RECIPIENTS", "farm-ops@example.org")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    started: list = []


    def start(config_file: Path = control.MASTER_CFG) -> MasterAPI:
        s = load_settings()
        control.start(s, config_file)
        started.append(lambda: stop_master(s))
        wdir = buildbot_worker.create(s)
        buildbot_worker.start(s, wdir)
        started.append(lambda: buildbot_worker.stop(s, wdir))
        api = MasterAPI.for_settings(s)
        api.wait_workers(["local"], timeout=60)
        return api

    yield start, mailbox
    stop_all(started)  # every part is stopped even when an earlier one fails to


def _pipeline_cfg(tmp_path: Path) -> Path:
    """The test pipeline, its dataset steps saying their results and linking their pages as the farm's do."""
    cfg = tmp_path / "pipeline.cfg"
    cfg.write_text(
        "import dataclasses\nfrom master import outputs\nfrom master.buildmaster import build_config\n"
        "from tests.master.triggered import PIPELINE\n"
        "SAID = {'corpus': {'summary': outputs.CORPUS_SAID}, 'triplets': {'summary': outputs.TRIPLETS_SAID},\n"
        "        'publish': {'summary': outputs.PUBLISHED_SAID, 'links': outputs.DATASET_LINKS}}\n"
        "def said(b):\n"
        "    steps = tuple(dataclasses.replace(s, **SAID.get(s.name, {})) for s in b.steps)\n"
        "    return dataclasses.replace(b, steps=steps)\n"
        "from master.registry import Builder, IfSet, Step\n"
        "ARGS = ('regress', 'run', '--bench', 'no-such-bench', IfSet('build_url', ('--build-url', '{build_url}')))\n"
        "TELLS = Builder(name='tells-build-url', description='t', notify=(), steps=(Step('regress', ARGS),))\n"
        "BuildmasterConfig = build_config(registry=(*(said(b) for b in PIPELINE), TELLS))\n")
    return cfg


def _wait_for(what: str, check, timeout: float = 60):
    return wait_until(check, timeout, what)


def _wait_for_build(api: MasterAPI, builder: str, after: int, timeout: float = 120):
    def done():
        return [b for b in api.builds_after(after) if b.builder == builder and b.result != "running"]

    return _wait_for(f"a finished {builder} build", done, timeout)[0]


def _properties(api: MasterAPI, buildid: int) -> dict:
    (props,) = api.get(f"builds/{buildid}/properties")["properties"]
    return {k: v[0] for k, v in props.items()}


def _anonymous(api: MasterAPI, path: str, method: str, **params) -> tuple[int, dict]:
    """A JSON-RPC control call with no session, as anyone who reaches the web port could send it."""
    body = json.dumps({"jsonrpc": "2.0", "method": method, "id": 1, "params": params}).encode()
    req = urllib.request.Request(f"{api.base}api/v2/{path}", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_real_master_cfg_runs_forced_and_on_change_builds(live, toolchain):
    start, _ = live
    api = start()
    assert "farm-selftest" in api.builders() and "llvm-tot" in api.builders()
    api.force("farm-selftest")
    assert api.logged_in
    api.wait_idle(timeout=120, poll=0.25)
    (build,) = api.builds_after(0)
    assert (build.builder, build.result) == ("farm-selftest", "success")
    assert ("toolchain", "success") in build.steps
    log = api.step_log_tail(build.buildid, "toolchain", lines=200)
    assert "argv: [b'mlgo-farm', b'-v', b'toolchain']" in log
    assert f'"llvm_version": "{toolchain.version}"' in log
    assert _properties(api, build.buildid)["owner"] == "admin"  # the login, not what the client claimed

    s = load_settings()
    run([venv_tool("buildbot"), "sendchange", "--master", f"127.0.0.1:{s.buildbot.pb_port}",
         "--auth", f"change:{worker_password(s)}", "--project", "mlgo-farm", "--who", "test",
         "--comments", "farm code changed", "master/registry.py"], farm_env(s), "buildbot sendchange")
    changed = _wait_for_build(api, "farm-selftest", after=build.buildid)
    assert changed.result == "success"
    assert _properties(api, changed.buildid)["scheduler"] == "change-farm-selftest"


def test_anonymous_users_look_but_cannot_control_and_forms_offer_only_choices(live, capsys, monkeypatch):
    start, _ = live
    api = start()
    api.force("farm-selftest")
    api.wait_idle(timeout=120, poll=0.25)
    (build,) = api.builds_after(0)
    (request,) = api.get("buildrequests")["buildrequests"]
    (worker,) = api.get("workers")["workers"]

    # force, stop, rebuild, cancel, pause: each refused before it reaches the endpoint
    for path, method, params in (
        ("forceschedulers/force-triplets-ir", "force", {"corpus_input": "zlib"}),
        (f"builds/{build.buildid}", "stop", {}),
        (f"builds/{build.buildid}", "rebuild", {}),
        (f"buildrequests/{request['buildrequestid']}", "cancel", {}),
        (f"workers/{worker['workerid']}", "pause", {}),
    ):
        assert _anonymous(api, path, method, **params) == (403, {"jsonrpc": "2.0", "id": 1, "error": FORBIDDEN}), path
    assert len(api.get("buildsets")["buildsets"]) == 1 and len(api.get("builds")["builds"]) == 1
    assert MasterAPI(api.base).get(f"builds/{build.buildid}")["builds"][0]["results"] == 0  # reading stays open
    with pytest.raises(FarmError, match="refused the login of 'admin'"):
        MasterAPI(api.base, user="admin", password="not-the-password").force("farm-selftest")

    # the force forms, as the master describes them: no toolchain or path, fixed choices, checked text
    forced = {s["name"].removeprefix("force-") for s in api.get("forceschedulers")["forceschedulers"]}
    forms = {b: form_fields(api.force_form(b)) for b in sorted(forced)}
    # every builder can be forced except the shard builders, which only their parent's fan-out starts, and the trial
    # builders, which only their loop's build starts (master/loop.py)
    trials = loop_trials(REGISTRY)
    assert trials and forced == {b for b in api.builders() if not b.endswith("-shard") and b not in trials}
    assert all("llvm_bin" not in f for f in forms.values()), forms
    ir = forms["triplets-ir"]
    assert (ir["corpus_source"].choices, ir["corpus_source"].strict) == (("debian", "llvm"), True)
    assert ir["corpus_input"].choices == (*DEBIAN_PACKAGES, "llvm-project") and ir["corpus_input"].strict
    assert forms["regression-inliner-size"]["bench"].choices == ("lua", "zlib", "bzip2", "gperf", "minisat", "tcc")
    assert forms["regression-inliner-size"]["policy"].choices == ("store:latest", "heuristic", "never", "always")
    assert forms["regression-regalloc-speed"]["policy"].choices == ("store:latest", "spill")
    assert forms["llvm-tot"]["rev"].regex and not forms["llvm-tot"]["rev"].choices

    # refused by `master force` before anything is submitted: one line, exit 2
    url = ["--url", api.base]
    for argv, message in (
        (["triplets-ir", "-p", "corpus_source=--help"], "triplets-ir: corpus_source='--help': a value may not"),
        (["triplets-ir", "-p", "corpus_source=sources"], "corpus_source='sources' is not one of: debian"),
        (["triplets-ir", "-p", "corpus_input=/tmp/mine"], "corpus_input='/tmp/mine' is not one of: zlib, "),
        (["triplets-ir", "-p", "llvm_bin=/tmp/mine/bin"], "property 'llvm_bin' is not a parameter of triplets-ir"),
        (["farm-selftest", "triplets-ir", "-p", "bench=zlib"], "property 'bench' is not a parameter of"),
        (["llvm-tot", "-p", "rev=main..x"], "rev='main..x' does not match"),
        (["regression-inliner-size", "-p", "policy=/tmp/model.onnx"], "policy='/tmp/model.onnx' is not one of"),
    ):
        assert main(["master", "force", *argv, *url]) == 2, argv
        line = _one_error_line(capsys)
        assert line.startswith("mlgo-farm: error: ") and message in line, line
    assert len(api.get("buildsets")["buildsets"]) == 1
    # and by the master itself, logged in or not, for a client that does not check first
    with pytest.raises(FarmError, match=r"HTTP 400: .*corpus_source.*does not belong to list of available choices"):
        api.rpc("forceschedulers/force-triplets-ir", "force", corpus_source="--help")
    with pytest.raises(FarmError, match=r"HTTP 400: .*rev.*does not match pattern"):
        api.rpc("forceschedulers/force-llvm-tot", "force", rev="--upload-pack=/tmp/mine")
    # a JSON client's number, list or object where the form sends text: the same 400, never a 500
    for value in (123, [1], {"a": 1}):
        with pytest.raises(FarmError, match=r"HTTP 400: .*rev.*expected text, got "):
            api.rpc("forceschedulers/force-llvm-tot", "force", rev=value)
    assert len(api.get("buildsets")["buildsets"]) == 1

    # an operator adds a login: a line in the users file, then reconfig; it logs in from the environment
    users = users_file(load_settings())
    users.write_text("alice\n")  # a bad users file: reconfig fails saying why, the master runs on unchanged
    users.chmod(0o600)
    assert main(["master", "reconfig"]) != 0
    line = _one_error_line(capsys)
    assert f"{users}:1: expected name:password" in line, line
    users.write_text("alice:alice-secret\n")
    users.chmod(0o600)
    assert main(["master", "reconfig"]) == 0
    monkeypatch.setenv(PASSWORD_ENV, "alice-secret")
    assert main(["master", "force", "farm-selftest", "--user", "alice", "--url", api.base]) == 0
    assert "alice-secret" not in capsys.readouterr().out
    (forced,) = [bs for bs in api.get("buildsets")["buildsets"] if bs["bsid"] != 1]
    assert api.get(f"buildsets/{forced['bsid']}/properties")["properties"][0]["owner"][0] == "alice"
    api.wait_idle(timeout=120, poll=0.25)


def test_pipeline_captures_publishes_triggers_and_mails_failures(live, tmp_path, capsys):
    start, mailbox = live
    api = start(_pipeline_cfg(tmp_path))
    assert sorted(api.builders()) == sorted([*(b.name for b in PIPELINE), "tells-build-url"])
    # --wait follows the forced buildsets and the build they trigger, and fails with the failing one
    assert main(["master", "force", "make-dataset", "always-fails", "--wait", "--url", api.base]) == 1
    out = capsys.readouterr().out
    for line in ("make-dataset #1: success", "use-dataset #1: success", "always-fails #1: failure"):
        assert line in out, out
    builds = {b.builder: b for b in api.builds_after(0)}
    assert builds["make-dataset"].result == "success", builds["make-dataset"].steps
    assert builds["use-dataset"].result == "success"
    assert builds["always-fails"].result == "failure"
    assert "/nonexistent/mlgo-farm-src" in api.step_log_tail(builds["always-fails"].buildid, "corpus")

    latest = json.loads((load_settings().var_dir / "store" / "datasets" / "ir" / "latest.json").read_text())
    made = _properties(api, builds["make-dataset"].buildid)
    used = _properties(api, builds["use-dataset"].buildid)
    assert made["dataset"] == latest["id"] == used["dataset"]
    assert f"=> dataset = {latest['id']}" in out
    assert used["upstream_worker"] == "local" == used["workername"]

    # each step says its result (from the dataset it made) and links its page on the master's own dashboard
    made_steps = {st["name"]: st for st in api.get(f"builds/{builds['make-dataset'].buildid}/steps")["steps"]}
    manifest = json.loads((load_settings().var_dir / "store" / "datasets" / "ir" / latest["id"] / "manifest.json")
                          .read_text())
    assert re.fullmatch(rf"{manifest['corpus']['modules']:,} modules, \d+ skipped",
                        made_steps["corpus"]["state_string"]), made_steps["corpus"]
    assert made_steps["triplets"]["state_string"] == (f"{manifest['triplets']['unique']:,} unique triplets "
                                                      f"({len(manifest['skipped'])} skipped)")
    assert made_steps["publish"]["state_string"] == f"published {latest['id']}"
    assert made_steps["publish"]["urls"] == [
        {"name": "dataset", "url": f"{api.base}plugins/wsgi_dashboards/farm/datasets/ir/{latest['id']}/"}]
    with urllib.request.urlopen(made_steps["publish"]["urls"][0]["url"], timeout=30) as page:
        body = page.read()  # the link leads to the real page of the dataset the real verb published
        assert page.status == 200 and b"<html" in body.lower() and latest["id"].encode() in body
    (failed,) = [st for st in api.get(f"builds/{builds['always-fails'].buildid}/steps")["steps"]
                 if st["name"] == "corpus"]
    # a failure says why: the verb's one error line
    assert failed["state_string"] == "source /nonexistent/mlgo-farm-src does not exist (failure)", failed
    assert failed["urls"] == []

    # a step that names {build_url} gets its own build's page, as the regression steps pass it to the alert
    last = max(b.buildid for b in api.builds_after(0))
    api.force("tells-build-url")
    told = _wait_for_build(api, "tells-build-url", after=last)
    url = f"{api.base}#/builders/{api.builders()['tells-build-url']}/builds/{told.number}"
    assert f"b'--build-url', b'{url}'" in api.step_log_tail(told.buildid, "regress", lines=200)

    _wait_for("a failure mail", lambda: mailbox.messages)
    subjects = [m["Subject"] for m in mailbox.messages]
    assert any("always-fails" in s for s in subjects), subjects
    assert all("make-dataset" not in s for s in subjects)
    assert mailbox.messages[0]["To"] == "farm-ops@example.org"


def test_requests_with_different_properties_all_run_and_wait_reports_a_merged_one(live, tmp_path):
    start, _ = live
    api = start(_pipeline_cfg(tmp_path))
    (worker,) = api.get("workers")["workers"]
    wid = worker["workerid"]
    # a paused worker takes no build: every request below stays pending until it is unpaused
    api.rpc(f"workers/{wid}", "pause", reason="queue the requests")
    _wait_for("the paused worker", lambda: api.get(f"workers/{wid}")["workers"][0]["paused"])

    waiter = subprocess.Popen(
        [str(Path(sys.executable).with_name("mlgo-farm")), "master", "force", "flavoured", "-p", "flavour=a",
         "--wait", "--timeout", "120", "--url", api.base],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        (first,) = _wait_for("the waiting command's buildset", lambda: api.get("buildsets")["buildsets"])
        others = [api.force("flavoured", {"flavour": f}) for f in ("b", "c", "a")]
        api.rpc(f"workers/{wid}", "unpause")
        out, _ = waiter.communicate(timeout=180)
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    api.wait_idle(timeout=120, poll=0.25)

    def requests(bsid: int) -> list[tuple[int, list[int]]]:
        """(result, build ids) of each request of buildset `bsid`."""
        out = []
        for br in api.get("buildrequests", buildsetid=bsid)["buildrequests"]:
            builds = api.get("builds", buildrequestid=br["buildrequestid"])["builds"]
            out.append((br["results"], [b["buildid"] for b in builds]))
        return out

    # the three different requests each ran; only the identical older one was merged into the newest
    assert [r for r, _ in requests(first["bsid"])] == [3] and requests(first["bsid"])[0][1] == []
    ran = [requests(bsid) for bsid in others]
    assert all(len(r) == 1 and r[0][0] == 0 and len(r[0][1]) == 1 for r in ran), ran
    assert [_properties(api, r[0][1][0])["flavour"] for r in ran] == ["b", "c", "a"]

    assert waiter.returncode == 1, out
    assert f"(buildset {first['bsid']}) SKIPPED: Buildbot merged it into a newer request" in out, out
    assert "flavoured #" not in out, "--wait must not report another request's build as its own"


def test_force_wait_prints_each_step_as_it_ends(live, tmp_path):
    """A build whose second step waits on the store's publish lock, which this test holds: the first step's line
    must be out while the build still runs (on any machine's speed), the second's once the lock is released."""
    import fcntl
    import queue
    import threading

    cfg = tmp_path / "held.cfg"
    cfg.write_text(
        "from master.buildmaster import build_config\nfrom master.registry import Builder, Step\n"
        "HELD = Builder(name='held', description='a quick step, then one waiting on the publish lock', notify=(),\n"
        "               steps=(Step('toolchain', ('toolchain',)),\n"
        "                      Step('promote', ('vocab', 'promote', 'ir', 'nope', '--reason', 'held'))))\n"
        "BuildmasterConfig = build_config(registry=(HELD,))\n")
    start, _ = live
    api = start(cfg)
    lock = load_settings().var_dir / "store" / ".vocab-publish.lock"  # farm.locks.publish_lock, FileStore
    lock.parent.mkdir(parents=True, exist_ok=True)
    lines: queue.Queue = queue.Queue()
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        waiter = subprocess.Popen(
            [str(Path(sys.executable).with_name("mlgo-farm")), "master", "force", "held", "--wait", "--timeout", "300",
             "--url", api.base], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        reader = threading.Thread(target=lambda: [lines.put(ln) for ln in waiter.stdout] and None, daemon=True)
        reader.start()
        try:
            seen: list[str] = []

            def step_printed() -> bool:
                while not lines.empty():
                    seen.append(lines.get().rstrip("\n"))
                return any(ln.startswith("held #1 toolchain: success") for ln in seen)

            wait_until(step_printed, 120, "the first step's line while the build runs")
            (build,) = api.get("builds")["builds"]
            assert not build["complete"], "the line must come before the build ends"
            assert not any(" promote: " in ln for ln in seen), seen
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
    try:
        waiter.wait(timeout=180)
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    reader.join(timeout=30)  # every line read up to EOF
    out = seen + [lines.get().rstrip("\n") for _ in range(lines.qsize())]
    assert waiter.returncode == 1, out
    promote = [ln for ln in out if ln.startswith("held #1 promote: failure")]
    assert len(promote) == 1 and out.index(promote[0]) > out.index(next(ln for ln in out if " toolchain: " in ln))
    assert sum(" toolchain: " in ln for ln in out) == 1, out  # once, not again in the final summary
    assert any(ln.startswith("held #1: failure") for ln in out), out
