"""The REST client against a real master that is SIGKILLed while `master force --wait` waits on its build:
the client rides out the restart and reports the build Buildbot retried, not the outage; a master that does
not come back within `[buildbot] client_reconnect` is one line and exit 1. A read cut short is asked again."""

from __future__ import annotations

import http.server
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from farm.config import load_settings
from master import control
from master.rest import CUT_SHORT_RETRIES, MasterAPI, MasterUnreachable
from tests.master.test_master_live import live  # noqa: F401  (the live master fixture)
from tests.servers import free_port, wait_until

MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))


def _gated_cfg(tmp_path: Path, gate: Path) -> Path:
    """The test pipeline, every step waiting for `gate/open` (and saying so in `gate/reached`) before it runs."""
    hold = (f'touch {gate}/reached; while [ ! -e {gate}/open ]; do sleep 0.1; done; exec mlgo-farm -v "$@"')
    cfg = tmp_path / "gated.cfg"
    cfg.write_text("from master.buildmaster import build_config\nfrom tests.master.triggered import PIPELINE\n"
                   f"BuildmasterConfig = build_config(registry=PIPELINE, farm_command=('sh', '-c', {hold!r}, "
                   "'mlgo-farm'))\n")
    return cfg


def test_force_wait_rides_out_a_sigkilled_master_and_reports_the_retried_build(live, tmp_path):  # noqa: F811
    start, _ = live
    gate = tmp_path / "gate"
    gate.mkdir()
    cfg = _gated_cfg(tmp_path, gate)
    api = start(cfg)
    s = load_settings()
    err = tmp_path / "client.err"
    with open(err, "w") as errf:
        client = subprocess.Popen([MLGO_FARM, "master", "force", "flavoured", "--wait", "--timeout", "600",
                                   "--url", api.base], stdout=subprocess.PIPE, stderr=errf, text=True)
    try:
        wait_until(lambda: (gate / "reached").exists(), 120, "the build's step to run")
        os.kill(control.running(s), signal.SIGKILL)
        wait_until(lambda: "reconnecting for up to 180s" in err.read_text(), 60, "the client to lose the master")
        (gate / "open").touch()
        control.start(s, cfg)  # what the stack's supervisor does within a second
        out, _ = client.communicate(timeout=600)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    said = err.read_text()
    assert client.returncode == 0, out + said
    builds = api.get("builds", order="buildid")["builds"]
    assert [(b["number"], b["results"]) for b in builds] == [(1, 5), (2, 0)], builds  # RETRY, then success
    # the outcome is the retried build's; the first build shows only as the steps it ran (printed as they end,
    # however many the client saw before the kill), never as a result of its own
    assert out.splitlines()[-1].startswith("flavoured #2: success") and "flavoured #1:" not in out, out
    assert "answers again after" in said, said


def test_a_master_that_stays_away_is_one_line_after_the_reconnect_limit(live):  # noqa: F811
    start, _ = live
    api = start()
    s = load_settings()
    os.kill(control.running(s), signal.SIGKILL)
    wait_until(lambda: control.running(s) is None, 30, "the master to die")
    with pytest.raises(MasterUnreachable) as e:
        MasterAPI(api.base, reconnect=2).get("builds")
    line = str(e.value)
    assert "\n" not in line and line.startswith(f"buildbot master at {api.base} is not reachable: "), line
    assert line.endswith("of reconnecting; [buildbot] client_reconnect = 2)"), line


class _CutShort(http.server.BaseHTTPRequestHandler):
    """Promises a JSON body and closes the connection before it, `cut` times; then answers in full."""

    cut = 0

    def do_GET(self):
        body = b'{"builds": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        served = type(self).served = type(self).served + 1
        if served <= type(self).cut:
            self.close_connection = True
            return
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("cut", [CUT_SHORT_RETRIES, CUT_SHORT_RETRIES + 1])
def test_a_read_cut_short_is_asked_again_a_few_times_then_is_one_line(cut):
    handler = type("Handler", (_CutShort,), {"cut": cut, "served": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        api = MasterAPI(f"http://127.0.0.1:{server.server_port}/")  # reconnect 0: the master answers, it is up
        if cut <= CUT_SHORT_RETRIES:
            assert api.get("builds") == {"builds": []} and handler.served == cut + 1
        else:
            with pytest.raises(MasterUnreachable) as e:
                api.get("builds")
            assert str(e.value) == f"buildbot master at {api.base} cut its answer short: 0 of 14 bytes"
            assert handler.served == CUT_SHORT_RETRIES + 1
            handler.cut += 1
            with pytest.raises(MasterUnreachable):  # a control call is never sent twice
                api._fetch(urllib.request.Request(f"{api.base}api/v2/forceschedulers/x", data=b"{}"))
            assert handler.served == CUT_SHORT_RETRIES + 2
    finally:
        server.shutdown()
        server.server_close()
