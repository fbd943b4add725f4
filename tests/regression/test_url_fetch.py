"""Artifacts named by URL (`regress run --policy URL`, farm/artifacts/remote.py) against real misbehaving servers on
loopback: a body dripped a byte at a time, headers dripped likewise, redirects to ftp:// and file://, a redirect
loop, a server that speaks SMTP, URLs no server should see, a body over the cap, a manifest naming a hostile
version. Each ends within the fetch's one deadline as one line; nothing is left in the cache."""

from __future__ import annotations

import hashlib
import http.server
import json
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from farm.artifacts import remote
from farm.cli import main
from farm.errors import InputError, StoreError
from regression.lineage import fetch_urls, vocab_version
from regression.request import RunRequest

MODEL = b"not really onnx, only bytes to check\n" * 8
DIGEST = hashlib.sha256(MODEL).hexdigest()
DEADLINE = 1.0  # seconds: the whole fetch in these tests
CSRC = Path(__file__).resolve().parents[1] / "data" / "csrc"


class _Handler(http.server.BaseHTTPRequestHandler):
    """The routes of the misbehaving dashboard; `server.stop` ends the slow ones at teardown."""

    server: _Server

    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, body: bytes, status: int = 200, **headers: str) -> None:
        self.send_response(status)
        for k, v in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _drip(self, data: bytes) -> None:
        """A byte every 0.25 s, for at most 4 s (a per-read timeout never fires; the deadline must)."""
        for b in data[:16]:
            if self.server.stop.wait(0.25):
                return
            self.wfile.write(bytes([b]))
            self.wfile.flush()

    def do_GET(self) -> None:  # http.server calls it by this name
        where, _, name = self.path.rpartition("/")
        if name == "manifest.json":
            version = "../../../../tmp/x" if where == "/hostile" else "20990101-v1"
            return self._send(json.dumps({"sha256": DIGEST, "version": version}).encode())
        if name == "model.onnx.sha256":
            return self._send(f"{DIGEST}  model.onnx\n".encode())
        if where in ("/good", "/hostile", "/mod%C3%A8l"):
            return self._send(MODEL)
        if where in ("/drip", "/drip-unsized"):  # the body's end announced, or only the connection's close
            self.send_response(200)
            if where == "/drip":
                self.send_header("Content-Length", str(len(MODEL)))
            self.end_headers()
            return self._drip(MODEL)
        if where == "/drip-headers":
            return self._drip(b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx")
        if where == "/ftp":
            return self._send(b"", 302, Location=f"ftp://127.0.0.1:{self.server.ftp_port}/model.onnx")
        if where == "/file":
            return self._send(b"", 302, Location="file:///etc/passwd")
        if where == "/moved":  # within the origin: followed
            return self._send(b"", 301, Location="/good/model.onnx")
        if where == "/elsewhere":  # the same server under another name: another origin all the same
            return self._send(b"", 302, Location=f"http://localhost:{self.server.server_port}/good/model.onnx")
        if where == "/loop":
            return self._send(b"", 301, Location="/loop2/model.onnx")
        if where == "/loop2":
            return self._send(b"", 307, Location=f"http://127.0.0.1:{self.server.server_port}/loop/model.onnx")
        if where == "/big":  # no Content-Length: only counting what arrives can stop it
            self.send_response(200)
            self.end_headers()
            try:
                for _ in range(64):
                    self.wfile.write(b"x" * 65536)
            except OSError:
                pass  # the client stopped reading: what it should do
            return None
        if where == "/big-declared":
            self.send_response(200)
            self.send_header("Content-Length", str(2 << 30))
            self.end_headers()
            return None
        return self._send(b"no such thing\n", 404)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    stop: threading.Event
    ftp_port: int


class _SMTP(socketserver.BaseRequestHandler):
    """A mail server's greeting and its answer to whatever is said: no HTTP at all."""

    def handle(self) -> None:
        self.request.sendall(b"220 mail.example.org ESMTP ready\r\n")
        self.request.recv(4096)
        self.request.sendall(b"500 5.5.2 Error: bad syntax\r\n")


@pytest.fixture
def servers() -> Iterator[tuple[str, str, socket.socket]]:
    """The dashboard-like server's base URL, the SMTP-like server's, and a listener that counts as the ftp server
    (nothing may connect to it)."""
    ftp = socket.create_server(("127.0.0.1", 0))
    ftp.setblocking(False)
    web = _Server(("127.0.0.1", 0), _Handler)
    web.stop, web.ftp_port = threading.Event(), ftp.getsockname()[1]
    smtp = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _SMTP)
    smtp.daemon_threads = True
    threads = [threading.Thread(target=s.serve_forever, args=(0.05,), daemon=True) for s in (web, smtp)]
    for t in threads:
        t.start()
    try:
        yield (f"http://127.0.0.1:{web.server_port}", f"http://127.0.0.1:{smtp.server_address[1]}", ftp)
    finally:
        web.stop.set()
        for s in (web, smtp):
            s.shutdown()
            s.server_close()
        ftp.close()


def _fetch(url: str, where: Path, **kw) -> tuple[Path, dict | None]:
    return remote.fetch(url, DIGEST, where / "cache", "model.onnx", timeout=DEADLINE, **kw)


def _nothing_kept(where: Path) -> None:
    cache = where / "cache"
    assert not cache.exists() or not any(p.is_file() for p in cache.rglob("*")), sorted(cache.rglob("*"))


def test_a_good_url_and_a_non_ascii_path_are_fetched_checked_and_cached(servers, tmp_path: Path) -> None:
    web, _, _ = servers
    path, manifest = _fetch(f"{web}/good/model.onnx", tmp_path)
    assert path == tmp_path / "cache" / DIGEST / "model.onnx" and path.read_bytes() == MODEL
    assert manifest is not None and manifest["version"] == "20990101-v1"
    path, _ = remote.fetch(f"{web}/good/model.onnx", None, tmp_path / "by-sha-file", "model.onnx", timeout=DEADLINE)
    assert path.read_bytes() == MODEL  # the .sha256 beside it trusted
    path, _ = _fetch(f"{web}/modèl/model.onnx", tmp_path / "accented")  # percent-encoded, as browsers do
    assert path.read_bytes() == MODEL


@pytest.mark.parametrize("route", ["drip", "drip-unsized", "drip-headers"])
def test_a_dripping_server_meets_one_deadline_for_the_whole_fetch(servers, tmp_path: Path, route: str) -> None:
    web, _, _ = servers
    url = f"{web}/{route}/model.onnx"
    start = time.monotonic()
    with pytest.raises(StoreError) as e:
        _fetch(url, tmp_path)
    took = time.monotonic() - start
    assert str(e.value) == f"{url}: no complete answer within {DEADLINE:g} s"
    assert DEADLINE <= took < DEADLINE + 1.5, took
    _nothing_kept(tmp_path)


@pytest.mark.parametrize(("route", "target", "why"), [
    ("ftp", "ftp://127.0.0.1:{ftp}/model.onnx", "only http and https URLs are fetched"),
    ("file", "file:///etc/passwd", "only http and https URLs are fetched"),
])
def test_a_redirect_is_followed_to_http_and_https_only(servers, tmp_path: Path, route: str, target: str,
                                                       why: str) -> None:
    web, _, ftp = servers
    url = f"{web}/{route}/model.onnx"
    with pytest.raises(StoreError) as e:
        _fetch(url, tmp_path)
    target = target.format(ftp=ftp.getsockname()[1])
    assert str(e.value) == f"{url}: redirected to {target!r}: {why}"
    with pytest.raises(BlockingIOError):
        ftp.accept()  # nobody connected: the fetch has returned, so a connection would be waiting here
    _nothing_kept(tmp_path)


def test_a_redirect_is_followed_within_its_origin_only(servers, tmp_path: Path) -> None:
    """Issue 47, item 14: a redirect to another host (here the same server under its other name, which would answer)
    is refused in one line, and nothing is fetched or kept; one on the same origin is followed."""
    web, _, _ = servers
    path, _ = _fetch(f"{web}/moved/model.onnx", tmp_path / "moved")
    assert path.read_bytes() == MODEL
    url = f"{web}/elsewhere/model.onnx"
    with pytest.raises(StoreError) as e:
        _fetch(url, tmp_path)
    port = web.rsplit(":", 1)[1]
    assert str(e.value) == (f"{url}: redirected to 'http://localhost:{port}/good/model.onnx': another origin than "
                            f"http://127.0.0.1:{port} (only redirects within the URL's scheme, host and port are "
                            "followed)")
    _nothing_kept(tmp_path)


def test_a_redirect_loop_is_named_in_one_line(servers, tmp_path: Path) -> None:
    web, _, _ = servers
    url = f"{web}/loop/model.onnx"
    with pytest.raises(StoreError) as e:
        _fetch(url, tmp_path)
    assert str(e.value) == f"{url}: redirect loop (back to {url!r})"


def test_a_server_that_speaks_smtp_is_one_line(servers, tmp_path: Path) -> None:
    _, smtp, _ = servers
    with pytest.raises(StoreError) as e:
        _fetch(f"{smtp}/model.onnx", tmp_path)
    assert str(e.value) == (f"{smtp}/model.onnx: 127.0.0.1 is not an HTTP server "
                            "(it answered '220 mail.example.org ESMTP ready\\r\\n')")


@pytest.mark.parametrize(("route", "message"), [
    ("big", "more than the 200000 bytes taken"),
    ("big-declared", f"{2 << 30} bytes, more than the 200000 taken"),
])
def test_a_body_over_the_cap_is_refused_and_never_kept(servers, tmp_path: Path, route: str, message: str) -> None:
    web, _, _ = servers
    url = f"{web}/{route}/model.onnx"
    with pytest.raises(StoreError) as e:
        _fetch(url, tmp_path, limit=200_000)
    assert str(e.value) == f"{url}: {message}"
    _nothing_kept(tmp_path)


def test_a_hostile_version_in_a_manifest_is_refused_or_ignored(servers, tmp_path: Path) -> None:
    """Served beside a URL's artifact: refused, as `--version ../x` is. Beside a cached copy (an older farm kept
    it) or a local vocabulary: not a version, never reaching the report or the history."""
    web, _, _ = servers
    url = f"{web}/hostile/model.onnx"
    with pytest.raises(InputError, match=r"manifest\.json: version: invalid version name '\.\./\.\./\.\./\.\./tmp/x'"):
        fetch_urls(RunRequest(policy=url, policy_sha256=DIGEST))
    hostile = json.dumps({"sha256": DIGEST, "version": "../../../../tmp/x"})
    cached = tmp_path / "cache" / DIGEST
    cached.mkdir(parents=True)
    (cached / "model.onnx").write_bytes(MODEL)
    (cached / "manifest.json").write_text(hostile)
    _, manifest = _fetch(f"{web}/good/model.onnx", tmp_path)
    assert manifest is not None and manifest["version"] == "20990101-v1"  # asked again, and replaced
    assert json.loads((cached / "manifest.json").read_text())["version"] == "20990101-v1"
    (cached / "manifest.json").write_text(hostile)
    assert vocab_version(cached / "model.onnx") == f"sha256-{DIGEST[:12]}"


def _bad_urls(web: str) -> list[tuple[str, str]]:
    long_labels = ".".join(["a" * 60] * 5)
    return [
        (f"{web}/good/model onnx", "contains a space or a control character"),
        (f"{web}/good/model.onnx\r\nX-Injected: 1", "contains a space or a control character"),
        (f"{web}/good/model.onnx\n", "contains a space or a control character"),
        ("http://" + "a" * 300 + "/model.onnx", "is not a valid host name"),
        (f"http://{long_labels}/model.onnx", "is not a valid host name"),
        ("http://" + "ä" * 64 + ".example/model.onnx", "is not a valid host name"),
        ("http://exa_mple..org/model.onnx", "is not a valid host name"),
        ("http://127.0.0.1:99999/model.onnx", "Port out of range"),
        ("http://[::1/model.onnx", "Invalid IPv6 URL"),
        ("http:///model.onnx", "names no host"),
        (f"{web}/good/" + "x" * 5000, "is longer than 4096 characters"),
    ]


def test_bad_urls_are_one_line_from_regress_run(servers, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture) -> None:
    """Through the verb a mail's command runs: each bad URL, and each misbehaving server, is one line of stderr."""
    web, smtp, _ = servers
    monkeypatch.setattr(remote, "TIMEOUT", DEADLINE)
    monkeypatch.setattr(remote, "MAX_BYTES", 200_000)
    cases = [*((u, 2, m) for u, m in _bad_urls(web)),
             (f"{smtp}/model.onnx", 4, "is not an HTTP server"),
             (f"{web}/drip/model.onnx", 4, f"no complete answer within {DEADLINE:g} s"),
             (f"{web}/ftp/model.onnx", 4, "only http and https URLs are fetched"),
             (f"{web}/loop/model.onnx", 4, "redirect loop"),
             (f"{web}/big/model.onnx", 4, "more than the 200000 bytes taken"),
             (f"{web}/hostile/model.onnx", 2, "invalid version name '../../../../tmp/x'")]
    for url, code, message in cases:
        got = main(["regress", "run", "--bench-dir", str(CSRC), "--policy", url, "--policy-sha256", DIGEST,
                    "--advisor", "inline", "--repeats", "0", "--no-callgrind", "--no-publish"])
        err = capsys.readouterr().err.strip().splitlines()
        assert (got, len(err)) == (code, 1) and err[0].startswith("mlgo-farm: error: "), (url, got, err)
        assert message in err[0], (url, err)
