"""One bounded HTTP(S) GET for artifacts named by URL (farm/artifacts/remote.py), whatever the server does.

The URL comes from a mail, a page or a command line, and the server may be anything that listens: so a
fetch has one total deadline (a server dripping a byte every few seconds never resets it, as a
per-read timeout would), a cap on the bytes it takes (streamed to the caller's file, never held in
memory), http and https only at every hop (a redirect to ftp:// or file:// is not followed), redirects only
within the URL's origin (its scheme, host and port: a server may move a file on itself, not send the farm to
another host, nor from https down to http, where the digest the farm then trusts could come from), a bounded
number of redirects (a loop is named as one), and every failure, from a bad URL to a server that speaks
SMTP, is one line: an InputError for the URL the user gave, a StoreError for what the server did.
(The name lookup before a connection is the system resolver's to bound: it cannot be cut like a socket.)
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import io
import ipaddress
import re
import socket
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import BinaryIO

from farm.errors import InputError, StoreError

#: Redirects followed before the fetch gives up (curl's and browsers' order of magnitude).
MAX_REDIRECTS = 10
#: The longest URL taken; the longest host name DNS allows.
MAX_URL, MAX_HOST = 4096, 253
CHUNK = 1 << 16
_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
_CONTROL = re.compile(r"[\x00-\x20\x7f]")
#: What a path or query keeps as is; anything else (non-ASCII letters above all) is percent-encoded, as browsers do.
_SAFE = "/%!$&'()*+,;=:@-._~?"


@dataclass(frozen=True)
class Target:
    """A checked http(s) URL: what the connection and the request line need."""

    scheme: str
    host: str
    port: int | None
    request: str


def _short(text: str, limit: int = 120) -> str:
    """A URL or a server's words in a message: quoted, control characters escaped, cut to `limit`."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


class _BadURL(Exception):
    """What is wrong with a URL, worded to follow it ("URL 'x': it ...", "redirected to 'x': it ...")."""


def check_url(url: str, error: type[InputError | StoreError] = InputError) -> Target:
    """`url` as a Target, or one line saying what is wrong with it (raised as `error`: InputError for a URL the user
    gave; a redirect's is the server's, see `get`)."""
    try:
        return _parse(url)
    except _BadURL as e:
        raise error(f"URL {_short(url)}: {e}") from None


def _parse(url: str) -> Target:
    """International host names become their ASCII (IDNA) form here, non-ASCII paths are percent-encoded; spaces
    and control characters are refused (a CR/LF would split the request, and urlsplit drops some silently)."""
    if len(url) > MAX_URL:
        raise _BadURL(f"it is longer than {MAX_URL} characters")
    if _CONTROL.search(url):
        raise _BadURL("it contains a space or a control character (percent-encode it, e.g. %20)")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise _BadURL(" ".join(str(e).split())) from None
    if parts.scheme.lower() not in ("http", "https"):
        raise _BadURL("only http and https URLs are fetched")
    host = _host(parts.hostname or "")
    path = urllib.parse.quote(parts.path or "/", safe=_SAFE)
    query = urllib.parse.quote(parts.query, safe=_SAFE)
    return Target(parts.scheme.lower(), host, port, path + (f"?{query}" if query else ""))


def _host(host: str) -> str:
    if not host:
        raise _BadURL("it names no host")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        ascii_host = ""
    labels = ascii_host.rstrip(".").split(".")
    if not ascii_host or len(ascii_host) > MAX_HOST or not all(_LABEL.fullmatch(la) for la in labels):
        raise _BadURL(f"{_short(host, 80)} is not a valid host name "
                      f"(labels of at most 63 letters, digits and '-', {MAX_HOST} characters in all)")
    return ascii_host


class _Deadline:
    """The one time limit of a fetch, over every hop, header and byte; a socket is cut when it passes, so a read
    blocked on a server that sends nothing (or its headers a byte at a time) ends too."""

    def __init__(self, url: str, seconds: float) -> None:
        self.url, self.seconds = url, seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise self.passed()
        return left

    def passed(self) -> StoreError:
        return StoreError(f"{self.url}: no complete answer within {self.seconds:g} s")

    def over(self) -> bool:
        return time.monotonic() >= self.end

    def watch(self, conn: http.client.HTTPConnection, held: list[socket.socket]) -> threading.Timer:
        """A timer that cuts the connection when the deadline passes: the socket the connection has then (the
        plain one during a TLS handshake) and the one `held` (http.client lets go of it after a "Connection:
        close" answer, while the answer is still being read through it)."""
        timer = threading.Timer(max(self.end - time.monotonic(), 0), _cut, (conn, held))
        timer.daemon = True
        timer.start()
        return timer


def _cut(conn: http.client.HTTPConnection, held: list[socket.socket]) -> None:
    """Shut the connection down under a blocked read (the plain socket's shutdown: TLS state is not touched)."""
    for sock in (conn.sock, *held):
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed: the fetch ended meanwhile
                socket.socket.shutdown(sock, socket.SHUT_RDWR)


def get(url: str, sink: BinaryIO, limit: int, timeout: float) -> None:
    """Stream `url`'s body into `sink`, at most `limit` bytes, all within `timeout` seconds (redirects included)."""
    target = check_url(url)
    deadline = _Deadline(url, timeout)
    seen = {_current(target)}
    for _ in range(MAX_REDIRECTS + 1):
        location = _exchange(url, target, deadline, sink, limit)
        if location is None:
            return
        where = urllib.parse.urljoin(_current(target), location)
        try:
            moved = _parse(where)
        except _BadURL as e:
            raise StoreError(f"{url}: redirected to {_short(where)}: {e}") from None
        if _origin(moved) != _origin(target):
            raise StoreError(f"{url}: redirected to {_short(where)}: another origin than {_origin(target)} "
                             "(only redirects within the URL's scheme, host and port are followed)")
        target = moved
        if _current(target) in seen:
            raise StoreError(f"{url}: redirect loop (back to {_short(where)})")
        seen.add(_current(target))
    raise StoreError(f"{url}: more than {MAX_REDIRECTS} redirects")


def _origin(t: Target) -> str:
    """scheme://host:port, the port spelled out (http://h and http://h:80 are one origin)."""
    host = f"[{t.host}]" if ":" in t.host else t.host
    return f"{t.scheme}://{host.lower()}:{t.port or (443 if t.scheme == 'https' else 80)}"


def _current(t: Target) -> str:
    host = f"[{t.host}]" if ":" in t.host else t.host
    return f"{t.scheme}://{host}{'' if t.port is None else f':{t.port}'}{t.request}"


def _exchange(url: str, t: Target, deadline: _Deadline, sink: BinaryIO, limit: int) -> str | None:
    """One request: the body into `sink` (None), or where a redirect points (not followed here)."""
    if t.scheme == "https":
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            t.host, t.port, timeout=deadline.left(), context=ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(t.host, t.port, timeout=deadline.left())
    held: list[socket.socket] = []
    timer = deadline.watch(conn, held)
    try:
        conn.connect()
        sock = conn.sock
        held.append(sock)
        conn.request("GET", t.request, headers={"User-Agent": "mlgo-farm", "Accept-Encoding": "identity"})
        r = conn.getresponse()
        if r.status in (301, 302, 303, 307, 308):
            location = r.getheader("Location")
            if not location:
                raise StoreError(f"{url}: HTTP {r.status} redirect without a Location")
            return location
        if r.status != 200:
            raise StoreError(f"{url}: HTTP {r.status} {' '.join(r.reason.split())[:80]}".rstrip())
        if r.length is not None and r.length > limit:
            raise StoreError(f"{url}: {r.length} bytes, more than the {limit} taken")
        got = 0
        while True:
            sock.settimeout(deadline.left())
            chunk = r.read1(CHUNK)
            if not chunk:
                break
            got += len(chunk)
            if got > limit:
                raise StoreError(f"{url}: more than the {limit} bytes taken")
            sink.write(chunk)
        if deadline.over():  # the cut socket's end of file, not the body's end
            raise deadline.passed()
        if r.length:  # what Content-Length announced and never came (or the deadline cut)
            raise deadline.passed() if deadline.over() else StoreError(f"{url}: the answer was cut after {got} bytes")
        return None
    except StoreError:
        raise
    except (OSError, http.client.HTTPException, ValueError) as e:
        if deadline.over():  # the cut socket's end of file, whatever http.client made of it
            raise deadline.passed() from None
        if isinstance(e, http.client.RemoteDisconnected):
            raise StoreError(f"{url}: {t.host} closed the connection without answering") from None
        if isinstance(e, http.client.BadStatusLine):
            said = e.args[0] if e.args and isinstance(e.args[0], str) else ""
            raise StoreError(f"{url}: {t.host} is not an HTTP server (it answered {_short(said, 80)})") from None
        raise StoreError(f"{url}: {_reason(e)}") from None
    finally:
        timer.cancel()
        conn.close()


def _reason(e: Exception) -> str:
    """An exception in a few words, on one line (ssl's and socket's messages carry errno numbers and newlines)."""
    text = (e.strerror if isinstance(e, OSError) and e.strerror else str(e)) or type(e).__name__
    return " ".join(text.split())[:300]


class _Hashing:
    """A sink that hashes what passes through it to the file beneath."""

    def __init__(self, f: BinaryIO) -> None:
        self.f, self.h = f, hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.h.update(data)
        return self.f.write(data)


def get_to(url: str, f: BinaryIO, limit: int, timeout: float) -> str:
    """`get` into the file `f`; the sha256 (hex) of what was written."""
    sink = _Hashing(f)
    get(url, sink, limit, timeout)  # type: ignore[arg-type]
    return sink.h.hexdigest()


def get_bytes(url: str, limit: int, timeout: float) -> bytes:
    """`get` for small answers (a `.sha256`, a manifest): the body itself."""
    buf = io.BytesIO()
    get(url, buf, limit, timeout)
    return buf.getvalue()
