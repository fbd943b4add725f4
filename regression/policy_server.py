"""A policy server for whole builds: load a model once, answer every compile's host over a Unix socket.

Each `policy-cc --server SOCKET` compile keeps its own FIFO pair and host, but forwards each
observation (LLVM's raw feature bytes) to this server and relays the advice, so a build pays
for importing onnxruntime and loading the model once instead of once per compile.

Frames on the socket: 4-byte little-endian length, one type byte, payload.
`H` + header JSON (reply `K` or `E` + message) binds a connection; `O` + raw features asks
for advice (reply `A` + raw advice tensor, or `E` + message).
"""

from __future__ import annotations

import contextlib
import copy
import os
import socket
import socketserver
import struct
import threading
from pathlib import Path

from farm.errors import FarmError, InputError
from regression.policies import Policy
from regression.protocol import Header, Observation

_LEN = struct.Struct("<I")


def send_frame(sock: socket.socket, kind: bytes, payload: bytes) -> None:
    sock.sendall(_LEN.pack(len(payload) + 1) + kind + payload)


def recv_frame(sock: socket.socket) -> tuple[bytes, bytes]:
    """(type byte, payload); ConnectionError when the peer went away."""
    head = _recv_exact(sock, _LEN.size)
    body = _recv_exact(sock, _LEN.unpack(head)[0])
    return body[:1], body[1:]


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("policy server connection closed")
        buf += chunk
    return bytes(buf)


def decode_features(header: Header, raw: bytes) -> dict[str, tuple]:
    if len(raw) != header.observation_size:
        raise InputError(f"observation of {len(raw)} bytes, the header says {header.observation_size}")
    out, pos = {}, 0
    for spec in header.features:
        out[spec.name] = spec.decode(raw[pos:pos + spec.nbytes])
        pos += spec.nbytes
    return out


class RemotePolicy:
    """The client side: a policy that asks a running `policy serve` for every decision."""

    def __init__(self, socket_path: str | os.PathLike, timeout: float = 60.0) -> None:
        self.path = str(socket_path)
        self.name = f"server {self.path}"
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(self.path)
        except OSError as e:
            self._sock.close()
            raise InputError(f"policy server at {self.path} is not reachable: {e.strerror or e}") from None
        self._header: Header | None = None

    def bind(self, header: Header) -> None:
        kind, payload = self._ask(b"H", header.encode())
        if kind != b"K":
            raise InputError(payload.decode(errors="replace"))
        self._header = header

    def decide(self, obs: Observation) -> tuple:
        assert self._header is not None
        raw = b"".join(f.encode(obs.features[f.name]) for f in self._header.features)
        kind, payload = self._ask(b"O", raw)
        if kind != b"A" or len(payload) != self._header.advice.nbytes:
            raise FarmError(f"{self.name}: {payload.decode(errors='replace')}")
        return self._header.advice.decode(payload)

    def _ask(self, kind: bytes, payload: bytes) -> tuple[bytes, bytes]:
        try:
            send_frame(self._sock, kind, payload)
            return recv_frame(self._sock)
        except (OSError, ConnectionError) as e:
            raise FarmError(f"{self.name} failed: {e}") from None

    def close(self) -> None:
        self._sock.close()


class _Handler(socketserver.BaseRequestHandler):
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
                    obs = Observation(0, None, decode_features(header, payload))
                    send_frame(self.request, b"A", header.advice.encode(policy.decide(obs)))
                else:
                    send_frame(self.request, b"E", b"expected a header first")
            except Exception as e:  # report to this client, keep serving the others
                send_frame(self.request, b"E", str(e).splitlines()[0][:300].encode() if str(e) else b"error")


class PolicyServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, socket_path: str | os.PathLike, policy: Policy) -> None:
        self.policy = policy
        path = Path(socket_path)
        if path.exists():
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as probe:
                probe.connect(str(path))
                raise InputError(f"a policy server already listens on {path}")
            path.unlink()
        super().__init__(str(path), _Handler)
        self.path = path

    def start(self) -> threading.Thread:
        t = threading.Thread(target=self.serve_forever, name="policy-server", daemon=True)
        t.start()
        return t

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.path.unlink(missing_ok=True)
