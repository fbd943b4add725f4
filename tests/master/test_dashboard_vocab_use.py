"""Every command a vocabulary page shows (IR and MIR), taken from the rendered page and run for real: `curl` from
the dashboard served over HTTP, `sha256sum -c`, then each "Use it" line with LLVM 22 on a small C file and a
vocabulary trained by the farm's own code. The commands come from the page, so page and test cannot drift (an
`llc -print-mir2vec` line, which crashes in LLVM 22.1, failed here)."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from farm.objectstore import FileStore
from farm.toolchain import Toolchain
from policyhost.host import Channel, serve
from policyhost.runnable import ConstantPolicy
from vocabgen.params import TrainParams

SOURCE = "int f(int a, int b) { return a + b; }\nint g(int x) { return f(x, 3) * x; }\n"
VERSIONS = {"ir": "20260101-llvm22.1.8-ir-d8-aaaaaaaaaaaa", "mir": "20260101-llvm22.1.8-mir-d8-bbbbbbbbbbbb"}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> Path:
    """A store holding one tiny IR and one tiny MIR vocabulary, trained from the triplets of SOURCE."""
    from vocabgen.build import train_vocabulary
    from vocabgen.dataset import load_dataset
    from workers import corpus
    from workers.triplets import build_dataset

    root = tmp_path_factory.mktemp("vocab-use")
    os.environ.setdefault("PYSTOW_HOME", str(root / "pystow"))
    (root / "src").mkdir()
    (root / "src" / "a.c").write_text(SOURCE)
    corpus.from_sources(root / "src", root / "corpus", toolchain)
    store, entries = FileStore(root / "store"), []
    for kind, version in VERSIONS.items():
        ds = build_dataset(root / "corpus", root / f"ds-{kind}", kind, toolchain)
        data, manifest = train_vocabulary(load_dataset(ds), TrainParams(dim=8, epochs=5, batch_size=64))
        manifest = {**manifest, "kind": kind, "version": version, "published_at": "2026-01-01T00:00:00Z"}
        store.put(f"vocab/{kind}/{version}/vocab.json", data)
        store.put(f"vocab/{kind}/{version}/manifest.json", json.dumps(manifest).encode())
        store.put(f"vocab/{kind}/latest.json", json.dumps({"kind": kind, "version": version}).encode())
        entries.append({"kind": kind, "version": version, "sha256": manifest["sha256"], "state": "latest",
                        "published_at": manifest["published_at"]})
    store.put("vocab/index.json", json.dumps({"format": 1, "versions": entries}).encode())
    return root


@pytest.fixture
def dashboard(trained: Path, monkeypatch: pytest.MonkeyPatch):
    """The dashboard over HTTP on loopback, at the path the master mounts it on, its web_url pointing there."""
    from tests.master.served import dashboard_app

    with dashboard_app(monkeypatch, FileStore(trained / "store"), trained / "history.sqlite") as served:
        yield served


def page_commands(page: str) -> list[str]:
    """The shell lines of a vocabulary page: its download block, then each "Use it" row's code."""
    fetch = html.unescape(page.split("<pre>")[1].split("</pre>")[0]).splitlines()
    use = page.split("<h2>Use it</h2>")[1].split("<h2>")[0]
    return fetch + [html.unescape(c) for c in re.findall(r"<code>(.*?)</code>", use, re.S)]


def _run(cmd: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """One page line through the shell; a line naming BASE (the ML inliner's channel) gets a policy host there."""
    if "BASE" not in cmd:
        return subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    with Channel() as channel:
        proc = subprocess.Popen(["bash", "-c", cmd.replace("BASE", channel.base)], cwd=cwd, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        serve(channel, proc, ConstantPolicy("never", 0), timeout=60)
        out, err = proc.communicate(timeout=60)
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.mark.parametrize("kind", ["ir", "mir"])
def test_every_command_a_vocabulary_page_shows_runs_with_llvm_22(kind: str, dashboard, toolchain: Toolchain,
                                                                  tmp_path: Path) -> None:
    base, app = dashboard
    page = app.test_client().get(f"/vocab/{kind}/{VERSIONS[kind]}/").get_data(as_text=True)
    commands = page_commands(page)
    assert any(c.startswith("curl ") and c.endswith("/vocab.json") for c in commands), commands
    assert all(base in c for c in commands if c.startswith("curl "))
    (tmp_path / "in.c").write_text(SOURCE)
    env = {**os.environ, "PATH": f"{toolchain.bin_dir}:{os.environ['PATH']}"}
    embedded = []
    for cmd in commands:
        got = _run(cmd, tmp_path, env)
        assert got.returncode == 0, f"{cmd!r} exited {got.returncode}: {got.stderr[-2000:]}"
        text = got.stdout + got.stderr
        if "mbedding" in text:  # a printer: LLVM says which function, and the vector is not all zero
            assert re.search(r"\bf\b", text) and re.search(r"[1-9]", text.split("vector", 1)[-1]), text[:2000]
            embedded.append(cmd)
    assert len(embedded) >= 1, f"no line of the {kind} page printed an embedding: {commands}"
    assert (tmp_path / f"vocab-{kind}-{VERSIONS[kind]}.json").is_file()
