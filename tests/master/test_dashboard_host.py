"""The standalone policy host on the dashboard: served at a stable URL with its sha256, and named by the "Use it"
commands of every inliner policy page (URLs from `web_url`, flags from policyhost/advisors.py). The commands
themselves are run against a live dashboard by tests/policyhost/test_standalone.py."""

from __future__ import annotations

import hashlib
import html
import subprocess
from pathlib import Path

import pytest

from farm.config import load_settings
from policyhost import advisors
from policyhost.standalone import SOURCE
from tests.master.test_dashboard import V2
from tests.master.test_dashboard_policies import VB, client  # noqa: F401 - the fixture

WEB_URL = "https://farm.example.org/mlgo/"


def pre(page: str, pre_id: str) -> str:
    return html.unescape(page.split(f'<pre id="{pre_id}">')[1].split("</pre>")[0])


def test_the_host_file_is_served_with_its_sha256(client, tmp_path: Path) -> None:  # noqa: F811
    c, _, _ = client
    resp = c.get("/policies/host/mlgo-cc.py")
    assert resp.status_code == 200 and resp.data == SOURCE.read_bytes()
    assert resp.headers["Cache-Control"] == "no-cache" and resp.content_type.startswith("text/x-python")
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    assert resp.headers["ETag"] == f'"{digest}"'
    assert c.get("/policies/host/mlgo-cc.py", headers={"If-None-Match": f'"{digest}"'}).status_code == 304
    line = c.get("/policies/host/mlgo-cc.py.sha256").data
    assert line == f"{digest}  mlgo-cc.py\n".encode()
    (tmp_path / "mlgo-cc.py").write_bytes(resp.data)  # what a user checks it with
    (tmp_path / "mlgo-cc.py.sha256").write_bytes(line)
    check = subprocess.run(["sha256sum", "-c", "mlgo-cc.py.sha256"], cwd=tmp_path, capture_output=True, text=True)
    assert check.returncode == 0 and check.stdout == "mlgo-cc.py: OK\n"
    assert c.post("/policies/host/mlgo-cc.py").status_code == 405


def test_a_policy_page_says_how_to_use_it_without_the_farm(client, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WEB_URL", WEB_URL)
    settings = load_settings()
    c, _, _ = client
    c.application.config["FARM"].settings = settings
    page = c.get(f"/policies/inline/{VB}/", headers={"Host": "evil.example.net"}).get_data(as_text=True)
    assert "evil.example.net" not in page
    url = settings.buildbot.dashboard
    fetch = pre(page, "use-fetch").splitlines()
    model, vocab, host = (url(f"store/policies/inline/{VB}/model.onnx"), url(f"store/vocab/ir/{V2}/vocab.json"),
                          url("policies/host/mlgo-cc.py"))
    assert host.startswith(WEB_URL)
    assert fetch[:6] == [f"curl -fsSLO {u}{ext}" for u in (model, vocab, host) for ext in ("", ".sha256")]
    assert fetch[6] == "sha256sum -c model.onnx.sha256 vocab.json.sha256 mlgo-cc.py.sha256"
    assert fetch[7].startswith("python3 -m venv venv && venv/bin/pip install numpy onnxruntime")
    launcher = "$mlgo/venv/bin/python $mlgo/mlgo-cc.py --model $mlgo/model.onnx --vocab $mlgo/vocab.json --"
    assert pre(page, "use-make") == f'make CC="{launcher} clang-22" CFLAGS=-Oz'
    assert pre(page, "use-cmake").splitlines() == [
        f'cmake -S . -B build -DCMAKE_C_COMPILER=clang-22 -DCMAKE_C_FLAGS=-Oz '
        f'-DCMAKE_C_COMPILER_LAUNCHER="{launcher.replace(" ", ";")}"', "cmake --build build"]
    flags = html.unescape(page.split('<code id="use-flags">')[1].split("</code>")[0])
    assert flags == " ".join(advisors.get("inline").flags("BASE", "vocab.json"))
    assert 'id="host" href="/policies/host/mlgo-cc.py"' in page


def test_a_policy_without_a_vocabulary_gets_no_vocab_flags(client) -> None:  # noqa: F811
    c, _, _ = client
    page = c.get("/policies/inline/P1/").get_data(as_text=True)  # a bare manifest: no vocabulary, no LLVM version
    fetch = pre(page, "use-fetch")
    assert "vocab" not in fetch and "sha256sum -c model.onnx.sha256 mlgo-cc.py.sha256" in fetch
    assert pre(page, "use-make") == ('make CC="$mlgo/venv/bin/python $mlgo/mlgo-cc.py --model $mlgo/model.onnx -- '
                                     'clang" CFLAGS=-Oz')
    flags = html.unescape(page.split('<code id="use-flags">')[1].split("</code>")[0])
    assert flags == " ".join(advisors.get("inline").flags("BASE"))
