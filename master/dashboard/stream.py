"""A download sent in chunks, read from the store only as fast as the client takes it, without holding a
thread of the master's reactor pool while the client is slow.

Reading a whole object per request made 50 concurrent downloads of a 52 MB model grow the master to
2.85 GB. Streaming alone is not enough under Buildbot: its `wsgi_dashboards` plugin runs the app in
Twisted's WSGIResource, whose `write` hands each chunk to the transport without waiting for the client
(twisted/web/wsgi.py says so), so a slow client would still have the whole object queued in memory.
And the WSGI threads are the reactor's thread pool, which Buildbot's REST API also uses (every JSON
answer is written through `deferToThread`, buildbot/www/rest.py): a pool thread that waits on a slow
client delays every REST answer behind it.

So under Twisted, once the response has started (status, headers and the first chunk through WSGI), a
download from a local file is handed to the reactor: Twisted's FileSender, registered as the request's
producer, reads a chunk only when the transport has sent the previous one (what twisted.web.static
does for files), the WSGI thread returns at once, and the reactor finishes the request. A reader that
may block (an S3 body) stays in its WSGI thread, which then waits while the transport is paused. Either
way memory per download is a chunk plus the transport's buffer, and a client that takes nothing for
STALLED seconds is disconnected (nothing waits forever). Elsewhere (Flask's test client, any other WSGI
server) it is a plain iterator of chunks.

No byte leaves unchecked: the body is read through Checked, which hashes what it gives and holds back the last
chunk until the whole digest is known; bytes that do not hash to the ETag the response announced (a bit flipped on
disk in place keeps the file's inode, size and modification time, so the digest remembered for them says nothing)
never get their last chunk, and the connection is cut: the client sees a transfer broken short of its
Content-Length, which neither curl, a browser nor a cache takes for a good copy, instead of a complete body under a
digest it does not have. The response's status and headers went out first (the digest of a large object is known
only at its end); the next request finds the digest forgotten, hashes the bytes before it answers, and is refused.

The server's request is reached through the write callable `start_response` returns (a bound method of
Twisted's WSGI response, PEP 3333's `write`): the ReadOnly middleware keeps it in the environ under WRITE.
"""

from __future__ import annotations

import hashlib
import io
import threading
import weakref
from collections.abc import Callable
from typing import Any, BinaryIO

from farm.objectstore import CorruptObject

#: Bytes read from the store and written per step.
CHUNK = 64 * 1024
#: Seconds a client may take nothing before the download is cut.
STALLED = 120.0
#: The environ key under which the middleware keeps the server's WSGI write callable.
WRITE = "mlgo_farm.wsgi_write"


class _Flow:
    """A Twisted streaming producer: paused while the transport's buffer is full (called in the reactor thread)."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.go.set()
        self.stopped = False
        _FLOWS.add(self)

    def pauseProducing(self) -> None:  # Twisted's IPushProducer
        self.go.clear()

    def resumeProducing(self) -> None:
        self.go.set()

    def stopProducing(self) -> None:
        self.stopped = True
        self.go.set()


#: The downloads whose WSGI thread may be waiting for its client (stop_all ends them).
_FLOWS: weakref.WeakSet[_Flow] = weakref.WeakSet()


def stop_all() -> None:
    """End every download waiting for its client (the master is shutting down: its threads must not wait on)."""
    for flow in list(_FLOWS):
        flow.stopProducing()


class Checked:
    """A reader of bytes that must hash to `expected`: it reads one chunk ahead, and when the chunk it would give is
    the last one and the digest of everything is not `expected`, it gives nothing more, marks itself `rotten` and
    calls `on_rot` (once). So whoever sends what it reads never sends the whole of bytes that are not the ones
    announced."""

    def __init__(self, reader: BinaryIO, expected: str, on_rot: Callable[[], None]) -> None:
        self.inner = reader
        self.expected = expected
        self.on_rot = on_rot
        self.rotten = False
        self._hash = hashlib.sha256()
        self._ahead: bytes | None = None

    @property
    def closed(self) -> bool:
        return self.inner.closed

    def close(self) -> None:
        self.inner.close()

    def read(self, size: int | None = CHUNK) -> bytes:
        if size is None or size < 0:
            return b"".join(iter(lambda: self.read(CHUNK), b""))
        if self.rotten:
            return b""
        if self._ahead is None:
            self._ahead = self.inner.read(size)
        chunk = self._ahead
        self._ahead = self.inner.read(size) if chunk else b""
        self._hash.update(chunk)
        if not self._ahead and self._hash.hexdigest() != self.expected:
            self.rotten = True
            self.on_rot()
            return b""
        return chunk


def _local(reader: BinaryIO) -> bool:
    """A reader whose reads never block the reactor: a local file, or bytes in memory."""
    return isinstance(getattr(reader, "inner", reader), io.BufferedReader | io.BytesIO)


def _twisted(environ: dict[str, Any]) -> tuple[Any, Any, Any] | None:
    """(reactor, request, WSGI response) when the server is Twisted's WSGIResource, else None."""
    response = getattr(environ.get(WRITE), "__self__", None)
    request, reactor = getattr(response, "request", None), getattr(response, "reactor", None)
    if request is None or reactor is None or not hasattr(request, "registerProducer"):
        return None
    return reactor, request, response


def _abort(request: Any) -> None:
    """Drop a client's connection (reactor thread): loseConnection would wait for it to read our buffer."""
    transport = getattr(request.channel, "transport", None)
    if transport is not None:
        transport.abortConnection()


def _send_in_reactor(reactor: Any, request: Any, reader: BinaryIO) -> None:
    """The rest of `reader` to `request` by the reactor, as fast as the client reads; the reactor finishes it."""
    from twisted.protocols.basic import FileSender

    sent = [0]

    class Sender(FileSender):
        CHUNK_SIZE = CHUNK

        def resumeProducing(self) -> None:
            sent[0] += 1
            super().resumeProducing()

    lost: list[Any] = []
    request.notifyFinish().addErrback(lost.append)

    def watch(seen: int) -> None:
        if reader.closed:
            return
        if sent[0] == seen:
            _abort(request)
        else:
            reactor.callLater(STALLED, watch, sent[0])

    def sent_all(_: Any) -> None:
        reader.close()
        if getattr(reader, "rotten", False):
            _abort(request)  # its last chunk held back: the client sees the transfer cut short
        elif not lost and request.channel is not None:
            request.finish()

    def stopped(_: Any) -> None:
        """The connection is going (the client left, or was cut): nothing to finish, only the file to close."""
        reader.close()

    Sender().beginFileTransfer(reader, request).addCallbacks(sent_all, stopped)
    reactor.callLater(STALLED, watch, 0)


class Stream:
    """The WSGI body of one download: `reader`'s bytes in CHUNK pieces; closes `reader` when done."""

    def __init__(self, reader: BinaryIO, environ: dict[str, Any]) -> None:
        self.reader = reader
        self.environ = environ
        self.server: tuple[Any, Any, Any] | None = None  # known once the response has started
        self._flow: _Flow | None = None
        self._sent = 0
        self._handed_over = False

    def __iter__(self) -> Stream:
        return self

    def _hand_over(self) -> bool:
        """Give the rest to the reactor (a local file only: its reads do not block the reactor); False: keep it."""
        reactor, request, response = self.server  # type: ignore[misc]
        from twisted.internet.threads import blockingCallFromThread

        def hand_over() -> str:
            finished = getattr(response, "_requestFinished", None)
            if finished is None:
                return "keep"  # a Twisted without the flag: stream from this thread
            if finished:
                return "gone"  # the client has gone
            response._requestFinished = True  # the WSGI thread stops here; the reactor finishes the request
            _send_in_reactor(reactor, request, self.reader)
            return "handed"

        outcome = blockingCallFromThread(reactor, hand_over)
        self._handed_over = outcome == "handed"
        return outcome != "keep"

    def _wait_for_client(self) -> bool:
        """False when the client is gone or took nothing for STALLED seconds (then its connection is cut)."""
        reactor, request, _ = self.server  # type: ignore[misc]
        if self._flow is None:
            from twisted.internet.threads import blockingCallFromThread

            flow = self._flow = _Flow()

            def register() -> None:
                if request.channel is None:  # the client has gone
                    flow.stopProducing()
                    return
                request.registerProducer(flow, True)
                request.notifyFinish().addBoth(lambda _: flow.stopProducing())

            blockingCallFromThread(reactor, register)
        if not self._flow.go.wait(STALLED):
            reactor.callFromThread(_abort, request)
            return False
        return not self._flow.stopped

    def __next__(self) -> bytes:
        if not self._sent:
            self.server = _twisted(self.environ)  # start_response has been called: its write is known
        elif self.server is not None:
            if _local(self.reader) and self._hand_over():
                raise StopIteration
            if not self._wait_for_client():
                raise StopIteration
        chunk = self.reader.read(CHUNK)
        if not chunk:
            if getattr(self.reader, "rotten", False):
                self._cut()
            raise StopIteration
        self._sent += 1
        return chunk

    def _cut(self) -> None:
        """End a response whose bytes are not the ones announced, short of its length: under Twisted the
        connection is aborted (and the WSGI thread finishes nothing); any other server is told by an exception,
        which makes it drop the connection (werkzeug's) or the caller see it (Flask's test client)."""
        if self.server is None:
            raise CorruptObject(f"{self.environ.get('PATH_INFO', '')}: its bytes changed since their digest was "
                                "computed")
        reactor, request, response = self.server
        from twisted.internet.threads import blockingCallFromThread

        def cut() -> None:
            response._requestFinished = True
            _abort(request)

        blockingCallFromThread(reactor, cut)

    def close(self) -> None:
        if self._handed_over:
            return  # the reactor closes the reader when it is done
        self.reader.close()
        if self._flow is not None:
            from twisted.internet.threads import blockingCallFromThread

            reactor, request, _ = self.server  # type: ignore[misc]

            def unregister() -> None:
                if request.channel is not None:  # None once the connection is gone
                    request.unregisterProducer()

            blockingCallFromThread(reactor, unregister)
