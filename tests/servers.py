"""Real servers on loopback for the tests: redis-server, an S3 endpoint (moto), SMTP (aiosmtpd).

Each starts on a free 127.0.0.1 port, is waited for by polling its port (readiness, not a
sleep), and is stopped by the fixture that started it.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from pathlib import Path


def _ephemeral_ports() -> range:
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    return range(low, high + 1)


_EPHEMERAL = _ephemeral_ports()
_HANDED_OUT: set[int] = set()
#: One lock file per port handed out, held (flock) for the life of the test process: another test suite on the
#: machine (a second `make test` beside this one) skips a port this one reserved, even before its server binds it.
_RESERVATIONS = Path("/tmp/mlgo-farm-test-ports")
_HELD: list[int] = []  # the descriptors holding them (closed when the process ends, releasing the locks)


def _reserve(port: int) -> bool:
    """Whether this process now holds port `port`'s machine-wide reservation (False: another process does)."""
    import fcntl
    import os

    _RESERVATIONS.mkdir(mode=0o1777, exist_ok=True)
    fd = os.open(_RESERVATIONS / f"{port}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _HELD.append(fd)
    return True


def free_port() -> int:
    """A loopback port nothing listens on, for a server a test starts next.

    Not one the kernel picks (`bind(port 0)`): those come from the ephemeral range, where every
    outgoing connection on the machine also takes its local port, so between this call and the
    server's own bind another process's connection could take it and the server fail with "Address
    already in use". Below that range only servers bind, and a port is never handed out twice: not by
    this process (`_HANDED_OUT`), nor by another test process on the machine (`_reserve`).
    """
    candidates = [p for p in range(10000, _EPHEMERAL.start) if p not in _HANDED_OUT]
    for port in random.sample(candidates, min(len(candidates), 200)):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        if not _reserve(port):
            continue
        _HANDED_OUT.add(port)
        return port
    raise RuntimeError("no free loopback port below the ephemeral range")


def wait_for_port(port: int, proc: subprocess.Popen | None = None, timeout: float = 30) -> None:
    """Block until something accepts on 127.0.0.1:port, or fail if the process died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {port}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_redis(workdir: Path, port: int, persistent: bool = False) -> subprocess.Popen:
    """redis-server on 127.0.0.1:`port`, listening when this returns. `persistent`: with the stack's
    persistence (an append-only file, fsync on every write), so a SIGKILLed server started again on
    the same `workdir` has everything it acknowledged."""
    exe = shutil.which("redis-server") or "/usr/bin/redis-server"
    workdir.mkdir(parents=True, exist_ok=True)
    aof = ["--appendonly", "yes", "--appendfsync", "always"] if persistent else ["--appendonly", "no"]
    proc = subprocess.Popen(
        [exe, "--bind", "127.0.0.1", "--port", str(port), "--save", "", *aof, "--dir", str(workdir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
    except BaseException:
        stop(proc)
        raise
    return proc


@contextlib.contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A real redis-server on loopback; yields its URL."""
    port = free_port()
    proc = start_redis(workdir, port)
    try:
        yield f"redis://127.0.0.1:{port}"
    finally:
        stop(proc)


@dataclass
class S3Endpoint:
    url: str
    proc: subprocess.Popen
    port: int

    def stop(self) -> None:
        stop(self.proc)


def start_s3() -> S3Endpoint:
    """moto's S3 server mode: a real HTTP S3 endpoint on loopback."""
    port = free_port()
    exe = Path(sys.executable).with_name("moto_server")
    proc = subprocess.Popen(
        [str(exe), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    wait_for_port(port, proc)
    return S3Endpoint(f"http://127.0.0.1:{port}", proc, port)


@dataclass
class MailBox:
    """Messages received by the loopback SMTP server."""

    host: str
    port: int
    messages: list[Message] = field(default_factory=list)


@contextlib.contextmanager
def smtp_server(answer_after: float = 0.0, never_answer: bool = False) -> Iterator[MailBox]:
    """A real aiosmtpd server on loopback that keeps every message it receives; `answer_after`: it acknowledges a
    message that many seconds after it has it (a slow server, the behaviour under test, not synchronisation);
    `never_answer`: it keeps the message and never acknowledges it."""
    import asyncio

    from aiosmtpd.controller import Controller

    box = MailBox("127.0.0.1", free_port())

    class Handler:
        async def handle_DATA(self, server, session, envelope):
            box.messages.append(message_from_bytes(envelope.content))
            if never_answer:
                await asyncio.Event().wait()  # cancelled when the controller stops
            if answer_after:
                await asyncio.sleep(answer_after)
            return "250 OK"

    controller = Controller(Handler(), hostname="127.0.0.1", port=box.port)
    controller.start()
    try:
        yield box
    finally:
        controller.stop()


@dataclass
class Silent:
    """A server that accepts connections and never says a word (a mail server that hangs before its greeting)."""

    sock: socket.socket
    port: int
    taken: list[socket.socket] = field(default_factory=list)

    def connections(self) -> int:
        """How many clients have connected so far (the kernel completed their handshakes; nobody answers them)."""
        self.sock.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            while True:
                self.taken.append(self.sock.accept()[0])
        return len(self.taken)


@contextlib.contextmanager
def silent_server() -> Iterator[Silent]:
    """A loopback port whose connections are accepted by the kernel and never answered."""
    sock = socket.socket()
    port = free_port()
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    silent = Silent(sock, port)
    try:
        yield silent
    finally:
        for s in (*silent.taken, sock):
            s.close()


def wait_until(predicate, timeout: float, what: str, poll: float = 0.1):
    """Poll `predicate` until it returns something true (returned); TimeoutError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")


def stop_all(stops) -> None:
    """Call every stop function, newest first, even when one fails; then raise the first failure."""
    errors = []
    for stop in reversed(stops):
        try:
            stop()
        except Exception as e:
            errors.append(e)
    if errors:
        raise errors[0]


def stop_master(settings) -> None:
    """`buildbot stop`; a master that does not go away (a build stuck in shutdown) is killed, never left behind."""
    import os
    import signal

    from master import control

    pid = control.running(settings)
    try:
        control.stop(settings)
    finally:
        if pid is not None and control.running(settings) == pid:
            os.kill(pid, signal.SIGKILL)


def sigint_default() -> None:
    """A child's SIGINT as a terminal delivers it (`preexec_fn`), even under a runner started with it ignored: a
    POSIX shell ignores SIGINT in its background jobs (`cmd &`), children inherit that, and Python then keeps it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def end_with_signal(proc: subprocess.Popen, sig: int, timeout: float = 30) -> tuple[str, str]:
    """Send `sig` to a started process and collect its output; one that outlives `timeout` is killed (never left
    behind) and the test fails on communicate's TimeoutExpired."""
    try:
        proc.send_signal(sig)
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
