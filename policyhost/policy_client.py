"""The compile side of `policy serve`: ask a running policy server for every decision.

Frames on the Unix socket: 4-byte little-endian length, one type byte, payload.
`H` + header JSON (reply `K` or `E` + message) binds a connection; `O` + raw features asks
for advice (reply `A` + raw advice tensor, or `E` + message).

`shared_server(model)` gives the launcher one server per model file and user: the first compile
that needs it starts `mlgo-farm policy serve --idle-exit` (under a lock, so parallel compiles
start one), the others connect; the server exits by itself once a build has stopped using it,
and stops any model run that outlives the starting compile's timeout (`--timeout`), so a model
that never returns fails its compile and leaves no server spinning.
A compile therefore never imports onnxruntime or numpy. Like the host, this module imports
only C modules of the standard library (`_socket` is what `socket` wraps in enums).
"""

from __future__ import annotations

import os
import struct
import sys
import time

from farm.errors import FarmError, InputError

try:
    from _socket import AF_UNIX, SOCK_STREAM
    from _socket import socket as _Socket
except ImportError:  # pragma: no cover
    from socket import AF_UNIX, SOCK_STREAM
    from socket import socket as _Socket

TYPE_CHECKING = False
if TYPE_CHECKING:
    from policyhost.protocol import Header, Observation

_LEN = struct.Struct("<I")
#: seconds a client waits beyond its timeout, so that a server stopping a model run at that same timeout
#: (`policy serve --timeout`) is heard with its reason instead of a bare "timed out"
ANSWER_GRACE = 1.0


def send_frame(sock, kind: bytes, payload: bytes) -> None:
    sock.sendall(_LEN.pack(len(payload) + 1) + kind + payload)


def recv_frame(sock) -> tuple[bytes, bytes]:
    """(type byte, payload); ConnectionError when the peer went away.

    Requests and answers strictly alternate, so one `recv` normally holds the whole frame.
    """
    data = sock.recv(1 << 16)
    while len(data) < _LEN.size:
        if not data:
            raise ConnectionError("policy server connection closed")
        data += _recv_exact(sock, _LEN.size - len(data))
    end = _LEN.size + _LEN.unpack_from(data)[0]
    if len(data) < end:
        data += _recv_exact(sock, end - len(data))
    elif len(data) > end:
        raise ConnectionError("peer sent a second frame without waiting for the answer")
    return data[_LEN.size:_LEN.size + 1], data[_LEN.size + 1:]


def _recv_exact(sock, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("policy server connection closed")
        buf += chunk
    return bytes(buf)


class RemotePolicy:
    """A policy that forwards each observation's raw bytes to a running `policy serve`."""

    def __init__(self, socket_path: str | os.PathLike, timeout: float = 60.0) -> None:
        self.path = os.fspath(socket_path)
        self.name = f"server {self.path}"
        self._sock = _Socket(AF_UNIX, SOCK_STREAM)
        self._sock.settimeout(timeout + ANSWER_GRACE)
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
        header = self._header
        assert header is not None
        raw = obs.raw if obs.raw is not None else b"".join(f.encode(obs.features[f.name]) for f in header.features)
        kind, payload = self._ask(b"O", raw)
        if kind != b"A" or len(payload) != header.advice.nbytes:
            raise FarmError(f"{self.name}: {payload.decode(errors='replace')}")
        return header.advice.decode(payload)

    def _ask(self, kind: bytes, payload: bytes) -> tuple[bytes, bytes]:
        try:
            send_frame(self._sock, kind, payload)
            return recv_frame(self._sock)
        except (OSError, ConnectionError) as e:
            raise FarmError(f"{self.name} failed: {e}") from None

    def close(self) -> None:
        self._sock.close()


def runtime_dir() -> str:
    """This user's private directory for shared policy servers (created 0700; refused if anyone else can write it)."""
    root = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"
    path = os.path.join(root, f"mlgo-farm-{os.getuid()}")
    try:  # noqa: SIM105 - no contextlib import on the compile path
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if st.st_uid != os.getuid() or st.st_mode & 0o077 or not os.path.isdir(path) or os.path.islink(path):
        raise InputError(f"policy server directory {path} is not a private directory of this user")
    return path


def shared_socket(model: str | os.PathLike) -> str:
    """The socket of the shared server for this version of the model file (device, inode, mtime, size)."""
    try:
        st = os.stat(model)
    except OSError:
        raise InputError(f"policy model {os.fspath(model)} not found") from None
    path = os.path.join(runtime_dir(), f"policy-{st.st_dev:x}-{st.st_ino:x}-{st.st_mtime_ns:x}-{st.st_size:x}.sock")
    if len(os.fsencode(path)) > 100:  # sun_path holds 108 bytes, with room for the launcher's suffixes
        raise InputError(f"policy server socket {path} is too long for a Unix socket: set XDG_RUNTIME_DIR shorter")
    return path


def shared_server(model: str | os.PathLike, timeout: float = 60.0) -> RemotePolicy:
    """A connection to the shared server of `model`, starting it first if no compile has."""
    import fcntl

    sock = shared_socket(model)
    try:
        return RemotePolicy(sock, timeout)
    except InputError:
        pass
    lock = os.open(f"{sock}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:  # another compile may be starting it: wait for its lock, within our deadline
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise FarmError(f"policy server for {model} did not start within {timeout:g}s") from None
                time.sleep(0.02)
        try:
            return RemotePolicy(sock, timeout)
        except InputError:
            pass
        return _start_server(os.path.realpath(model), sock, deadline, timeout)
    finally:
        os.close(lock)


def _start_server(model: str, sock: str, deadline: float, timeout: float) -> RemotePolicy:
    from policyhost.host import Process

    log = os.open(f"{sock}.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        devnull = os.open(os.devnull, os.O_RDONLY)
        try:
            argv = [sys.executable, "-P", "-m", "farm.cli", "policy", "serve", "--policy", model, "--socket", sock,
                    "--idle-exit", str(_idle_exit()), "--timeout", repr(timeout)]
            # its own session: a build's Ctrl-C does not kill it in the middle of another compile's answer
            server = Process(argv, stdin=devnull, stdout=log, stderr=log, setsid=True)
        finally:
            os.close(devnull)
    finally:
        os.close(log)
    while True:
        try:
            return RemotePolicy(sock, max(deadline - time.monotonic(), 1.0))
        except InputError:
            pass
        if server.poll() is not None:
            raise InputError(_server_failure(sock, server.returncode))
        if time.monotonic() > deadline:
            server.kill()
            server.wait()
            raise FarmError(f"policy server for {model} did not start in time (log: {sock}.log)")
        time.sleep(0.02)


def _idle_exit() -> int:
    from farm.config import load_settings  # only when a server starts, once per build

    return load_settings().policy.shared_idle_exit


def _server_failure(sock: str, returncode: int) -> str:
    """The server's own one-line error from its log, or its exit status."""
    try:
        with open(f"{sock}.log", "rb") as f:
            lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines() if ln.strip()]
    except OSError:
        lines = []
    for ln in reversed(lines):
        if ln.startswith("mlgo-farm: error: "):
            return ln.removeprefix("mlgo-farm: error: ")
    last = lines[-1][:300] if lines else "no output"
    return f"policy server exited with code {returncode}: {last}"
