"""The policy host: one per compiler process, answering LLVM's interactive channel.

The host owns a private FIFO pair `BASE.in` (host to compiler) and `BASE.out` (compiler to
host). Both ends are opened read-write and non-blocking before the compiler starts, so neither
side can block on `open`, and a compiler that never opens the channel (a syntax error, `-O0`)
costs nothing. The host never waits without a deadline: it polls the channel in short ticks,
watches the compiler process, and gives up when the compiler neither talks nor uses CPU for
`timeout` seconds, or, once it has opened the channel, sends nothing for `max_silence` seconds even
while it uses CPU (a compiler looping forever); it is then killed. When the session header has a
`mask` feature (regalloc eviction), every advice must index a candidate whose mask is 1: a policy
answering another index fails the compile with one line instead of crashing the compiler.

Every compile of a policy build runs this module, so it uses `os`, `select` and `time` only
(no subprocess, tempfile, shutil or pathlib imports: each costs milliseconds per compile).
`serve` accepts a `subprocess.Popen` or the launcher's own `Process` (`posix_spawn`).
"""

from __future__ import annotations

import os
import select
import time

from farm.errors import FarmError
from policyhost.advisors import MASK_FEATURES
from policyhost.protocol import StreamDecoder

try:
    from _signal import SIGKILL, SIGPIPE, SIGXFSZ  # the `signal` module adds only enums (and an `enum` import)
except ImportError:  # pragma: no cover - an interpreter without the C module
    from signal import SIGKILL, SIGPIPE, SIGXFSZ

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from policyhost.protocol import Header, Observation, TensorSpec
    from policyhost.runnable import Policy

_TICK_MS = 50
SILENCE_FACTOR = 10  # default `max_silence`: this many times `timeout`
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class HostError(FarmError):
    """The session failed on the host's side: the compiler stalled, or the policy could not answer."""


class HostReport:
    """What happened on one channel."""

    def __init__(self) -> None:
        self.decisions = 0
        self.sessions = 0
        self.header: Header | None = None
        #: offset and spec of the session's candidate mask, when its advisor has one
        self.mask_at: tuple[int, TensorSpec] | None = None
        #: seconds from reading a complete observation to writing its advice, per decision
        self.response_times: list[float] = []
        #: bytes of an incomplete message left when the compiler exited (it died mid-session)
        self.truncated = 0


def private_dir(prefix: str, parent: str | os.PathLike | None = None) -> str:
    """A new directory only this user can enter (what `tempfile.mkdtemp` does, without its imports)."""
    root = os.fspath(parent) if parent is not None else os.environ.get("TMPDIR") or "/tmp"
    for _ in range(100):
        path = os.path.join(os.path.abspath(root), f"{prefix}{os.urandom(6).hex()}")
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free directory name for {prefix}* in {root}")


class Channel:
    """A FIFO pair in its own temporary directory, with the host's ends already open."""

    def __init__(self, parent: str | os.PathLike | None = None) -> None:
        self.path = private_dir("mlgo-channel-", parent)
        self.base = os.path.join(self.path, "channel")
        os.mkfifo(f"{self.base}.in", 0o600)
        os.mkfifo(f"{self.base}.out", 0o600)
        # O_RDWR on a FIFO never blocks on Linux and keeps the pipe alive between sessions.
        self.to_compiler = os.open(f"{self.base}.in", os.O_RDWR | os.O_NONBLOCK)  # written within a deadline
        self.from_compiler = os.open(f"{self.base}.out", os.O_RDWR | os.O_NONBLOCK)

    @property
    def dir(self) -> Path:
        from pathlib import Path

        return Path(self.path)

    def close(self) -> None:
        for fd in (self.to_compiler, self.from_compiler):
            try:  # noqa: SIM105 - contextlib is an import this module avoids
                os.close(fd)
            except OSError:
                pass
        try:
            for entry in os.scandir(self.path):  # the FIFOs, and whatever the launcher kept beside them
                os.unlink(entry.path)
            os.rmdir(self.path)
        except OSError:
            pass

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Process:
    """A child started with `posix_spawn`: the part of `subprocess.Popen` the host uses, without its imports."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, stdin: int | None = None,
                 stdout: int | None = None, stderr: int | None = None, setsid: bool = False) -> None:
        actions = [(os.POSIX_SPAWN_DUP2, fd, target)
                   for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)) if fd is not None]
        self.args = list(argv)
        self.returncode: int | None = None
        # Python ignores SIGPIPE and SIGXFSZ; the child gets the defaults back, as Popen gives them.
        self.pid = os.posix_spawn(self.args[0], self.args, os.environ if env is None else env,
                                  file_actions=actions, setsigdef=(SIGPIPE, SIGXFSZ), setsid=setsid)

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:  # reaped elsewhere
                self.returncode = -1
                break
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            os.kill(self.pid, SIGKILL)  # not yet reaped: the pid is still ours


def process_tree_cpu(pid: int) -> float:
    """CPU seconds used so far by `pid` and its live descendants (0 if it is gone)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children", "rb") as f:
                    stack += [int(c) for c in f.read().split()]
        except (OSError, IndexError, ValueError):
            continue
    return total / _CLOCK_TICKS


def kill(proc) -> None:
    """Kill the compiler (it may be stopped) and everything it started, and reap it.

    The launchers start it in a session of its own, so its pid names its process group: killing the pid
    alone would leave its children (a driver's jobs, a wrapper's real compiler) running with nobody to stop
    them. Unreaped, the pid and so the group are still ours; a compiler started in its parent's group leads
    none, and `killpg` then finds no group (ESRCH) rather than another's."""
    if proc.poll() is None:
        for send in (lambda: os.killpg(proc.pid, SIGKILL), proc.kill):
            try:  # noqa: SIM105 - contextlib is an import this module avoids
                send()
            except ProcessLookupError:
                pass
        proc.wait()


def serve(channel: Channel, proc, policy: Policy, timeout: float = 60.0,
          max_silence: float | None = None) -> HostReport:
    """Answer every observation the compiler sends until it exits.

    `proc` is a `subprocess.Popen` or a `Process`. Raises ProtocolError on a malformed stream and
    HostError when the compiler stalls (no bytes and no CPU progress for `timeout` seconds), sends
    nothing for `max_silence` seconds (default `SILENCE_FACTOR` x `timeout`) after it opened the
    channel, whatever its CPU use, or the policy fails or advises a masked-out candidate; in every
    case the compiler has been killed. A compiler that dies mid-session is not an error here: the
    caller reads `proc.returncode` and `HostReport.truncated`.
    """
    max_silence = SILENCE_FACTOR * timeout if max_silence is None else max_silence
    report = HostReport()
    decoder = StreamDecoder()
    poller = select.poll()
    poller.register(channel.from_compiler, select.POLLIN)
    exit_fd = _pidfd(proc.pid)  # wakes the poll the moment the compiler exits
    if exit_fd is not None:
        poller.register(exit_fd, select.POLLIN)
    window_start, cpu_at_start = time.monotonic(), process_tree_cpu(proc.pid)
    talked_at = None  # when the compiler last sent bytes (None: it has not opened the channel)
    try:
        while True:
            ready = {fd for fd, _ in poller.poll(_TICK_MS)}
            if channel.from_compiler in ready:
                t_read = time.perf_counter()
                data = _read_available(channel.from_compiler)
                if data:
                    window_start = talked_at = time.monotonic()
                    _answer(decoder, data, t_read, channel, policy, report, timeout, proc.pid)
                    continue
            if proc.poll() is not None:
                _answer(decoder, _read_available(channel.from_compiler), time.perf_counter(), channel, policy, report,
                        timeout, proc.pid)
                report.truncated = decoder.pending
                return report
            now = time.monotonic()
            if talked_at is not None and now - talked_at > max_silence:
                raise HostError(
                    f"compiler (pid {proc.pid}) sent nothing on its channel for {max_silence:g}s (the limit even "
                    f"while it uses CPU: --max-silence) after {report.decisions} decisions; killed it"
                )
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


def _check_mask(obs: Observation, index: int, mask_at: tuple[int, TensorSpec], policy: Policy) -> None:
    """HostError unless the advised `index` is a candidate the compiler's mask allows.

    LLVM 22.1.8's release build trusts the index (its checks are asserts): a masked-out or out-of-range index
    crashes the greedy allocator with SIGSEGV at the first such answer, and "no eviction" (the last index) for a
    range that must evict ends the compile with "ran out of registers" (docs/policies.md, tests/policyhost/
    test_evict_channel.py). The host refuses rather than corrects: a corrected answer would put into a trajectory
    a decision the model never took and hide the model's bug, while a refusal names the policy, the observation and
    the index in one line before the compiler reads it. Score-giving models never reach this: `masked_argmax` only
    picks masked-in candidates; what gets here is an integer advice a policy chose itself."""
    pos, spec = mask_at
    mask = spec.decode(obs.raw[pos:pos + spec.nbytes]) if obs.raw is not None else obs.features[spec.name]
    if not 0 <= index < len(mask):
        why = f"outside the {len(mask)} candidates"
    elif mask[index] != 1:
        why = "a candidate the compiler's mask excludes"
    else:
        return
    raise HostError(f"policy {policy.name} advised index {index} on observation {obs.index}, {why}; "
                    "stopped the compile")


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None  # old kernel: the poll tick still notices the exit


def _read_available(fd: int, limit: int = 1 << 20) -> bytes:
    """What the compiler has written, at most about `limit` bytes: the decoder refuses a stream it cannot split
    (protocol.MAX_LINE) before it grows further, even from a compiler that never stops writing."""
    chunks, total = [], 0
    while total < limit:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _answer(
    decoder: StreamDecoder, data: bytes, t_read: float, channel: Channel, policy: Policy, report: HostReport,
    timeout: float = 60.0, pid: int = 0
) -> None:
    """Decode `data` (read at `t_read`) and write the policy's advice for each complete observation, each within
    `timeout` seconds (`_write`)."""
    for obs in decoder.feed(data):
        header = decoder.header
        assert header is not None
        if header != report.header:
            policy.bind(header)
            report.header = header
            # the candidate mask this session's advisor declares (policyhost.advisors), if the compiler sends it
            report.mask_at = None if header.advice.is_float else next(
                (header.offsets[m] for m in MASK_FEATURES if m in header.offsets), None)
        report.sessions = decoder.sessions
        try:
            advice = header.advice.encode(policy.decide(obs))
        except FarmError:
            raise
        except Exception as e:  # a model that fails at inference must not leave the compiler waiting
            raise HostError(f"policy {policy.name} failed on observation {obs.index}: {e}") from None
        if report.mask_at is not None:
            _check_mask(obs, header.advice.decode(advice)[0], report.mask_at, policy)
        _write(channel.to_compiler, advice, timeout, pid, report.decisions)
        report.response_times.append(time.perf_counter() - t_read)
        t_read = time.perf_counter()
        report.decisions += 1
    report.sessions = decoder.sessions


def _write(fd: int, data: bytes, timeout: float, pid: int, decisions: int) -> None:
    """Write `data` to the compiler's non-blocking FIFO within `timeout` seconds, else HostError: a compiler that
    sends observations and reads no advice filled the FIFO, and a blocking write then waited for ever, deaf to
    --timeout (a signal still interrupts the wait: its handler raises)."""
    deadline, poller = time.monotonic() + timeout, None
    while data:
        try:
            data = data[os.write(fd, data):]
            continue
        except BlockingIOError:
            pass
        left = deadline - time.monotonic()
        if left <= 0:
            raise HostError(f"compiler (pid {pid}) read no advice for {timeout:g}s after {decisions} decisions; "
                            "killed it")
        if poller is None:
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
        poller.poll(left * 1000)
