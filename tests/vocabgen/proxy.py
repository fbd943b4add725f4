"""A loopback TCP forwarder the tests stop and start to take an endpoint down without losing its data."""

from __future__ import annotations

import contextlib
import socket
import threading

from tests.servers import free_port


class TcpProxy:
    """Forwards 127.0.0.1:<port> to 127.0.0.1:<upstream>; `stop()` closes the port and every open connection.

    `trip_on(pattern)` takes the endpoint down at one precise request (say, the first PUT of a key).
    """

    def __init__(self, upstream: int, port: int | None = None) -> None:
        self.upstream = upstream
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._listener: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._trip: bytes | None = None
        self.tripped = threading.Event()

    def trip_on(self, pattern: bytes) -> None:
        """Go down (like `stop()`) the first time a client sends `pattern`, before forwarding it."""
        self.tripped.clear()
        self._trip = pattern

    def start(self) -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        sock.listen(64)
        self._listener = sock
        threading.Thread(target=self._accept, args=(sock,), daemon=True).start()

    def stop(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with self._lock:
            conns, self._conns = self._conns, set()
        for c in conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            c.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._conns |= {client, upstream}
            for a, b, outbound in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pump, args=(a, b, outbound), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, outbound: bool) -> None:
        seen = b""  # the end of the previous chunk, so a pattern split across two reads still trips
        try:
            while data := src.recv(65536):
                trip = self._trip if outbound else None
                if trip is not None and trip in seen + data:
                    self._trip = None
                    self.tripped.set()
                    self.stop()
                    return
                seen = data[-256:]
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)
