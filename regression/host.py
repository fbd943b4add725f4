"""The policy host: one per compiler process, answering LLVM's interactive channel.

The host owns a private FIFO pair `BASE.in` (host to compiler) and `BASE.out` (compiler to
host). Both ends are opened read-write and non-blocking before the compiler starts, so neither
side can block on `open`, and a compiler that never opens the channel (a syntax error, `-O0`)
costs nothing. The host never waits without a deadline: it polls the channel in short ticks,
watches the compiler process, and gives up when the compiler neither talks nor uses CPU for
`timeout` seconds (it is then killed).
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from farm.errors import FarmError
from regression.policies import Policy
from regression.protocol import Header, StreamDecoder

_TICK_MS = 50
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class HostError(FarmError):
    """The session failed on the host's side: the compiler stalled, or the policy could not answer."""


@dataclass
class HostReport:
    """What happened on one channel."""

    decisions: int = 0
    sessions: int = 0
    header: Header | None = None
    #: seconds from reading a complete observation to writing its advice, per decision
    response_times: list[float] = field(default_factory=list)
    #: bytes of an incomplete message left when the compiler exited (it died mid-session)
    truncated: int = 0


class Channel:
    """A FIFO pair in its own temporary directory, with the host's ends already open."""

    def __init__(self, parent: str | os.PathLike | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="mlgo-channel-", dir=parent))
        self.base = self.dir / "channel"
        inbound, outbound = Path(f"{self.base}.in"), Path(f"{self.base}.out")
        os.mkfifo(inbound, 0o600)
        os.mkfifo(outbound, 0o600)
        # O_RDWR on a FIFO never blocks on Linux and keeps the pipe alive between sessions.
        self.to_compiler = os.open(inbound, os.O_RDWR)
        self.from_compiler = os.open(outbound, os.O_RDWR | os.O_NONBLOCK)

    def close(self) -> None:
        for fd in (self.to_compiler, self.from_compiler):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def process_tree_cpu(pid: int) -> float:
    """CPU seconds used so far by `pid` and its live descendants (0 if it is gone)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
            for tid in os.listdir(f"/proc/{p}/task"):
                stack += [int(c) for c in Path(f"/proc/{p}/task/{tid}/children").read_text().split()]
        except (OSError, IndexError, ValueError):
            continue
    return total / _CLOCK_TICKS


def kill(proc: subprocess.Popen) -> None:
    """Kill the compiler (it may be stopped) and reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()


def serve(channel: Channel, proc: subprocess.Popen, policy: Policy, timeout: float = 60.0) -> HostReport:
    """Answer every observation the compiler sends until it exits.

    Raises ProtocolError on a malformed stream and HostError when the compiler stalls
    (no bytes and no CPU progress for `timeout` seconds) or the policy fails; in both cases
    the compiler has been killed. A compiler that dies mid-session is not an error here: the
    caller reads `proc.returncode` and `HostReport.truncated`.
    """
    report = HostReport()
    decoder = StreamDecoder()
    poller = select.poll()
    poller.register(channel.from_compiler, select.POLLIN)
    exit_fd = _pidfd(proc.pid)  # wakes the poll the moment the compiler exits
    if exit_fd is not None:
        poller.register(exit_fd, select.POLLIN)
    window_start, cpu_at_start = time.monotonic(), process_tree_cpu(proc.pid)
    try:
        while True:
            ready = {fd for fd, _ in poller.poll(_TICK_MS)}
            if channel.from_compiler in ready:
                t_read = time.perf_counter()
                data = _read_available(channel.from_compiler)
                if data:
                    window_start = time.monotonic()
                    _answer(decoder, data, t_read, channel, policy, report)
                    continue
            if proc.poll() is not None:
                _answer(decoder, _read_available(channel.from_compiler), time.perf_counter(), channel, policy, report)
                report.truncated = decoder.pending
                return report
            now = time.monotonic()
            if now - window_start > timeout:
                cpu = process_tree_cpu(proc.pid)
                if cpu <= cpu_at_start:
                    raise HostError(
                        f"compiler (pid {proc.pid}) stopped talking: no data and no CPU progress for "
                        f"{timeout:g}s after {report.decisions} decisions; killed it"
                    )
                window_start, cpu_at_start = now, cpu
    except BaseException:
        kill(proc)
        raise
    finally:
        if exit_fd is not None:
            os.close(exit_fd)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None  # old kernel: the poll tick still notices the exit


def _read_available(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _answer(
    decoder: StreamDecoder, data: bytes, t_read: float, channel: Channel, policy: Policy, report: HostReport
) -> None:
    """Decode `data` (read at `t_read`) and write the policy's advice for each complete observation."""
    for obs in decoder.feed(data):
        header = decoder.header
        assert header is not None
        if header != report.header:
            policy.bind(header)
            report.header = header
        report.sessions = decoder.sessions
        try:
            advice = header.advice.encode(policy.decide(obs))
        except FarmError:
            raise
        except Exception as e:  # a model that fails at inference must not leave the compiler waiting
            raise HostError(f"policy {policy.name} failed on observation {obs.index}: {e}") from None
        os.write(channel.to_compiler, advice)
        report.response_times.append(time.perf_counter() - t_read)
        t_read = time.perf_counter()
        report.decisions += 1
    report.sessions = decoder.sessions
