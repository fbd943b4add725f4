"""A policy server for whole builds: load a model once, answer every compile's host over a Unix socket.

Each compile keeps its own FIFO pair and host, but forwards each observation (LLVM's raw feature
bytes) to this server and relays the advice, so a build pays for importing onnxruntime and
loading the model once instead of once per compile. A model's run is bounded (`OnnxPolicy.time_limit`,
set by `policy serve --timeout`): one that never returns is stopped, its client gets the error, and
the other connections are not held up. The wire format and the client side
(`RemotePolicy`, the launcher's shared servers) are in `policyhost.policy_client`.
"""

from __future__ import annotations

import contextlib
import copy
import os
import socket
import socketserver
import threading
import time
from pathlib import Path

from farm.errors import InputError
from policyhost.policy_client import RemotePolicy, recv_frame, send_frame
from policyhost.protocol import Header, Observation, decode_features
from policyhost.runnable import Policy

__all__ = ["PolicyServer", "RemotePolicy", "decode_features", "recv_frame", "send_frame"]


class _Handler(socketserver.BaseRequestHandler):
    server: PolicyServer

    def setup(self) -> None:
        self.server.connection_opened()

    def finish(self) -> None:
        self.server.connection_closed()

    def handle(self) -> None:
        policy: Policy | None = None
        header: Header | None = None
        while True:
            try:
                kind, payload = recv_frame(self.request)
            except (ConnectionError, OSError):
                return
            try:
                if kind == b"H":
                    header = Header.parse(payload)
                    policy = copy.copy(self.server.policy)  # shares the loaded model, binds its own view
                    policy.bind(header)
                    send_frame(self.request, b"K", b"")
                elif kind == b"O" and policy is not None and header is not None:
                    if len(payload) != header.observation_size:
                        raise InputError(f"observation of {len(payload)} bytes, the header says "
                                         f"{header.observation_size}")
                    obs = Observation(0, None, None, payload, header)
                    send_frame(self.request, b"A", header.advice.encode(policy.decide(obs)))
                else:
                    send_frame(self.request, b"E", b"expected a header first")
            except Exception as e:  # report to this client, keep serving the others
                try:
                    send_frame(self.request, b"E", str(e).splitlines()[0][:300].encode() if str(e) else b"error")
                except OSError:  # the client gave up waiting (a model run stopped at the deadline)
                    return


class PolicyServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, socket_path: str | os.PathLike, policy: Policy) -> None:
        self.policy = policy
        self._lock = threading.Lock()
        self._active = 0
        self._last_close = time.monotonic()
        path = Path(socket_path)
        if path.exists():
            if not path.is_socket():
                raise InputError(f"cannot listen on {path}: it exists and is not a socket")
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as probe:
                probe.connect(str(path))
                raise InputError(f"a policy server already listens on {path}")
        try:
            if path.is_socket():
                path.unlink()  # a stale socket nobody listens on
            super().__init__(str(path), _Handler)
        except OSError as e:  # no such directory, no permission, a path too long for a Unix socket
            raise InputError(f"cannot listen on {path}: {e.strerror or e}") from None
        self.path = path
        self._inode = path.stat().st_ino

    def connection_opened(self) -> None:
        with self._lock:
            self._active += 1

    def connection_closed(self) -> None:
        with self._lock:
            self._active -= 1
            self._last_close = time.monotonic()

    def idle_for(self) -> float:
        """Seconds since the last connection closed, 0 while any is open."""
        with self._lock:
            return 0.0 if self._active else time.monotonic() - self._last_close

    def start(self) -> threading.Thread:
        t = threading.Thread(target=self.serve_forever, name="policy-server", daemon=True)
        t.start()
        return t

    def retire(self) -> None:
        """Remove the socket path (if it is still ours) so new clients start another server; keep serving."""
        with contextlib.suppress(OSError):
            if self.path.stat().st_ino == self._inode:
                self.path.unlink()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.retire()
