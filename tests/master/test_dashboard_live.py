"""The farm's dashboard served by a real Buildbot master (buildbot-wsgi-dashboards in Twisted) on a loopback port,
as a careless or hostile client reaches it: over-long names, link loops and links out of their prefix are one-line
404s with nothing in the master's log, links ignore the Host header, and clients that stop reading a large
download keep neither the master's memory (it reads no further ahead than the socket takes) nor its REST API
(the reactor's thread pool, which Buildbot's REST answers share, stays free)."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import select
import signal
import socket
import urllib.request
from pathlib import Path

import pytest

from farm.config import DASHBOARD_PATH, load_settings
from farm.objectstore import FileStore, store_from_settings
from master import control
from master.dashboard.mount import DOWNLOAD_THREADS
from tests.master.test_dashboard import V1, fill_history, populate
from tests.servers import free_port, wait_until

REPO = Path(__file__).resolve().parents[2]
WEB_URL = "https://farm.example.org/ci/"
DASH = "/" + DASHBOARD_PATH
BIG = "regression/regression-inliner-size/r3/big.bin"
BIG_SIZE = 32 * 1024 * 1024
#: How far the master may read ahead of a client that reads nothing: the kernel's send buffer (tcp_wmem's
#: maximum is 4 MiB on Linux's defaults) plus Twisted's buffer and a chunk, far below the object's size.
READ_AHEAD = 8 * 1024 * 1024


def _run_master(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], fill):
    """A real master (no worker: the dashboard needs none) over a store `fill(settings)` populates; stopped after."""
    port = free_port()
    for name, value in {"MLGO_FARM_BUILDBOT_PB_PORT": str(free_port()), "MLGO_FARM_BUILDBOT_WWW_PORT": str(port),
                        "MLGO_FARM_BUILDBOT_WEB_URL": WEB_URL, **env,
                        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}.items():
        monkeypatch.setenv(name, value)
    s = load_settings()
    root = fill(s)
    fill_history(s.var_dir / "regression" / "history.sqlite")
    basedir = control.start(s)
    pid = control.running(s)
    try:
        wait_until(lambda: _get(port, DASH + "index.json")[0] == 200, 60, "the farm dashboard on the master")
        yield port, pid, root, Path(basedir)
    finally:
        try:
            control.stop(s)
        finally:
            if pid is not None and control.running(s) == pid:
                os.kill(pid, signal.SIGKILL)


def _populated(s) -> Path:
    populate(s.var_dir / "store")
    return s.var_dir / "store"


@pytest.fixture
def master(monkeypatch: pytest.MonkeyPatch):
    yield from _run_master(monkeypatch, {}, _populated)


@pytest.fixture
def s3_master(monkeypatch: pytest.MonkeyPatch, s3_endpoint, tmp_path: Path):
    """The master with moto's S3 server as its store, holding what `populate` writes and one large object."""
    env = {"MLGO_FARM_STORE_URL": "s3://farm/pre", "MLGO_FARM_STORE_ENDPOINT_URL": s3_endpoint.url,
           "MLGO_FARM_STORE_ACCESS_KEY_ID": "test", "MLGO_FARM_STORE_SECRET_ACCESS_KEY": "test"}

    def fill(s) -> Path:
        populate(tmp_path / "made")
        store, made = store_from_settings(s), FileStore(tmp_path / "made")
        store.ensure_bucket()
        for key in made.list():
            store.put(key, made.get(key))
        store.put(BIG, os.urandom(BIG_SIZE))
        return tmp_path / "made"

    yield from _run_master(monkeypatch, env, fill)


def _get(port: int, path: str, headers: dict | None = None) -> tuple[int, bytes, http.client.HTTPResponse]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read(), resp
    finally:
        conn.close()


def test_bad_paths_hostile_hosts_and_links_out_of_their_prefix_on_the_live_master(master):
    port, _, root, basedir = master
    (root / "vocab" / "ir" / "loop.json").symlink_to("loop.json")
    report = root / "regression" / "b" / "r9"
    report.mkdir(parents=True)
    (report / "index.html").symlink_to(root / f"vocab-staging/ir/{'0' * 64}/chain/run/vocab.json")
    deep = "/".join(["b" * 200] * 25)
    for path in (f"{DASH}store/vocab/ir/{'a' * 300}/vocab.json", f"{DASH}store/regression/{deep}",
                 f"{DASH}vocab/ir/{'a' * 300}/", f"{DASH}store/vocab/ir/loop.json",
                 f"{DASH}store/regression/b/r9/index.html"):
        status, body, resp = _get(port, path)
        text = body.decode()
        assert status == 404 and text.startswith("404 Not Found: ") and text.count("\n") == 1, (path[:80], text[:200])
        assert resp.getheader("Content-Type").startswith("text/plain") and "secret-ish" not in text
    log = (basedir / "twistd.log").read_text(errors="replace")
    assert "Traceback" not in log and "WSGI application error" not in log

    status, body, _ = _get(port, DASH + "index.json", {"Host": "evil.example"})
    assert status == 200 and b"evil.example" not in body
    v1 = json.loads(body)["vocab"]["ir"]["versions"][0]
    assert v1["url"] == f"{WEB_URL}{DASHBOARD_PATH}store/vocab/ir/{V1}/vocab.json"
    assert v1["sha256_url"].startswith(WEB_URL) and v1["manifest_url"].startswith(WEB_URL)


def _positions(pid: int, path: Path) -> list[int]:
    """The file offsets of every descriptor the master holds open on `path`."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
                out.append(int(info.split("pos:")[1].split()[0]))
        except (FileNotFoundError, IndexError):
            continue  # closed meanwhile
    return out


def _request(port: int, path: str) -> socket.socket:
    """A client that asks for `path` and reads nothing (a small receive buffer)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
    sock.settimeout(30)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    return sock


def _stalled_download(port: int, path: str) -> socket.socket:
    """A client that asks for `path`, takes the headers and then reads nothing."""
    sock = _request(port, path)
    assert sock.recv(12).startswith(b"HTTP/1.1 200")
    return sock


def test_stalled_downloads_hold_neither_memory_nor_the_rest_api(master):
    port, pid, root, basedir = master
    data = os.urandom(BIG_SIZE)
    FileStore(root).put(BIG, data)
    path = (root / BIG).resolve()

    # a client that reads everything gets every byte, and the sha256 as ETag
    status, body, resp = _get(port, f"{DASH}store/{BIG}")
    assert status == 200 and body == data and resp.getheader("ETag") == f'"{hashlib.sha256(data).hexdigest()}"'

    # more stalled clients than Twisted's pool has threads (10)
    clients: list[socket.socket] = []
    try:
        for _ in range(12):
            clients.append(_stalled_download(port, f"{DASH}store/{BIG}"))
        wait_until(lambda: len(_positions(pid, path)) == len(clients), 60, "the master streaming to every client")
        # the REST API and the dashboard still answer, while every download waits for its client
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/masters", timeout=30) as r:
            assert r.status == 200 and json.load(r)["masters"]
        assert _get(port, DASH + "index.json")[0] == 200
        positions = _positions(pid, path)
        assert len(positions) == len(clients) and max(positions) <= READ_AHEAD, positions
    finally:
        for c in clients:
            c.close()
    wait_until(lambda: not _positions(pid, path), 60, "the master closing the files of the clients that left")
    log = (basedir / "twistd.log").read_text(errors="replace")
    assert "Traceback" not in log and "Unhandled Error" not in log, log[-3000:]


def test_rot_in_place_is_cut_short_by_the_reactor_not_served_whole_as_good(master):
    """Issue 47, item 1, on the master's own path: after its first chunk a local file is sent by the reactor
    (stream.py's FileSender), which must hold its last chunk back when the bytes no longer hash to the ETag the
    response announced (a bit flipped in place keeps the inode, size and mtime the remembered digest is keyed by)."""
    from tests.master.test_dashboard_corrupt import _rot_in_place

    port, _, root, basedir = master
    data = os.urandom(1024 * 1024 + 3)
    key = "regression/regression-inliner-size/r4/big.bin"
    FileStore(root).put(key, data)
    status, body, resp = _get(port, f"{DASH}store/{key}")
    assert status == 200 and body == data and resp.getheader("ETag") == f'"{hashlib.sha256(data).hexdigest()}"'

    _rot_in_place(root / key, len(data) - 1)
    with pytest.raises((http.client.IncompleteRead, ConnectionResetError)) as cut:  # cut short, or reset (RST)
        _get(port, f"{DASH}store/{key}")
    assert len(getattr(cut.value, "partial", b"")) < len(data)
    # the remembered digest was dropped: hashed again before the answer, which now names the bytes it sends (a
    # report has no manifest to refuse them by; a version's file is refused, tests/master/test_dashboard_corrupt.py)
    status, body, resp = _get(port, f"{DASH}store/{key}")
    rotten = (root / key).read_bytes()
    assert status == 200 and body == rotten and resp.getheader("ETag") == f'"{hashlib.sha256(rotten).hexdigest()}"'
    assert resp.getheader("Cache-Control") == "no-cache"
    log = (basedir / "twistd.log").read_text(errors="replace")
    assert "download cut short" in log and "Traceback" not in log and "Unhandled Error" not in log, log[-3000:]


def test_downloads_waiting_on_their_clients_never_hold_up_the_rest_api(s3_master):
    """An S3 body is read in the WSGI thread (its reads may block: never in the reactor), which waits while the
    client reads nothing. Those threads are the dashboard's own (master/dashboard/mount.py): on the reactor's pool,
    ten such clients would hold every thread Buildbot's REST answers need."""
    port, _, _, basedir = s3_master
    clients: list[socket.socket] = []
    try:
        for _ in range(12):  # more than the reactor's pool has threads (10)
            clients.append(_request(port, f"{DASH}store/{BIG}"))

        def answered() -> int:
            return len(select.select(clients, [], [], 0)[0])

        wait_until(lambda: answered() >= DOWNLOAD_THREADS, 60, "the dashboard's threads each sending a download")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/masters", timeout=30) as r:
            assert r.status == 200 and json.load(r)["masters"]
    finally:
        for c in clients:
            c.close()
    wait_until(lambda: _get(port, DASH + "index.json")[0] == 200, 60, "the dashboard once the clients left")
    log = (basedir / "twistd.log").read_text(errors="replace")
    assert "Traceback" not in log and "Unhandled Error" not in log, log[-3000:]
