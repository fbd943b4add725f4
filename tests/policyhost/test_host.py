"""The policy host against the real clang-22: sessions, a dying compiler, a silent compiler."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from policyhost.host import Channel, HostError, process_tree_cpu, serve
from policyhost.launcher import interactive_flags
from policyhost.protocol import Observation
from policyhost.runnable import HeuristicPolicy
from tests.policyhost.conftest import CSRC


def start_clang(toolchain: Toolchain, channel: Channel, src: Path, out: Path) -> subprocess.Popen:
    args = ["-Oz", "-c", src, "-o", out, *interactive_flags(channel.base)]
    return toolchain.popen("clang", args, stderr=subprocess.PIPE)


class Counting(HeuristicPolicy):
    def __init__(self) -> None:
        self.n = 0

    def decide(self, obs: Observation) -> int:
        self.n += 1
        return super().decide(obs)


def test_serves_every_decision_and_channel_is_private(toolchain: Toolchain, tmp_path: Path) -> None:
    pol = Counting()
    with Channel() as ch:
        assert Path(f"{ch.base}.in").exists() and Path(f"{ch.base}.out").exists()
        proc = start_clang(toolchain, ch, CSRC / "hash.c", tmp_path / "hash.o")
        report = serve(ch, proc, pol, timeout=30)
        assert proc.wait() == 0
        channel_dir = ch.dir
    assert not channel_dir.exists()  # the FIFO pair is removed with its channel
    assert report.decisions == pol.n > 0
    assert report.sessions == 1 and report.truncated == 0
    assert len(report.response_times) == report.decisions
    assert report.header is not None and report.header.advice.name == "inlining_decision"


def test_compiler_dying_mid_session_returns_promptly(toolchain: Toolchain, tmp_path: Path) -> None:
    with Channel() as ch:
        proc = start_clang(toolchain, ch, CSRC / "sort.c", tmp_path / "sort.o")

        class KillAtFirst(HeuristicPolicy):
            def decide(self, obs: Observation) -> int:
                proc.send_signal(signal.SIGKILL)  # dies before reading our advice
                return super().decide(obs)

        t0 = time.monotonic()
        report = serve(ch, proc, KillAtFirst(), timeout=30)
        elapsed = time.monotonic() - t0
    assert proc.returncode == -signal.SIGKILL
    assert report.decisions == 1
    assert elapsed < 5, f"host took {elapsed:.1f}s to notice a dead compiler"


def test_silent_compiler_is_killed_after_timeout(toolchain: Toolchain, tmp_path: Path) -> None:
    with Channel() as ch:
        proc = start_clang(toolchain, ch, CSRC / "sort.c", tmp_path / "sort.o")

        class FreezeAtFirst(HeuristicPolicy):
            def decide(self, obs: Observation) -> int:
                proc.send_signal(signal.SIGSTOP)  # alive, silent, no CPU: a hung compiler
                return super().decide(obs)

        t0 = time.monotonic()
        with pytest.raises(HostError, match=r"stopped talking: no data and no CPU progress for 1s after 1 decisions"):
            serve(ch, proc, FreezeAtFirst(), timeout=1)
        elapsed = time.monotonic() - t0
    assert proc.poll() is not None, "the host must kill the stalled compiler"
    assert 1 <= elapsed < 10


def test_failing_policy_kills_compiler_with_clear_error(toolchain: Toolchain, tmp_path: Path) -> None:
    class Broken(HeuristicPolicy):
        name = "broken"

        def decide(self, obs: Observation) -> int:
            raise ValueError("model exploded")

    with Channel() as ch:
        proc = start_clang(toolchain, ch, CSRC / "sort.c", tmp_path / "sort.o")
        with pytest.raises(HostError, match=r"^policy broken failed on observation 0: model exploded$"):
            serve(ch, proc, Broken(), timeout=30)
    assert proc.poll() is not None


def test_compiler_that_never_opens_the_channel(toolchain: Toolchain, tmp_path: Path) -> None:
    with Channel() as ch:
        proc = start_clang(toolchain, ch, Path(__file__).parents[1] / "data/bad/syntax_error.c", tmp_path / "x.o")
        report = serve(ch, proc, HeuristicPolicy(), timeout=30)
        _, err = proc.communicate()
    assert proc.returncode == 1 and b"error:" in err
    assert report.decisions == 0 and report.sessions == 0


def test_process_tree_cpu_counts_a_busy_grandchild() -> None:
    # `sh` only waits; the CPU is burnt by its child, as with a driver running a separate cc1.
    import sys

    busy = subprocess.Popen(["sh", "-c", f"{sys.executable} -c 'while True: pass'; true"], start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        used = 0.0
        while used < 0.2 and time.monotonic() < deadline:
            used = process_tree_cpu(busy.pid)
            time.sleep(0.05)  # polling interval of a deadline loop, not synchronisation
        assert used >= 0.2
    finally:
        os.killpg(busy.pid, signal.SIGKILL)  # the session this test started: sh and its child
        busy.wait()
    assert process_tree_cpu(busy.pid) == 0  # reaped: nothing left to count


SILENT = r"^compiler \(pid \d+\) sent nothing on its channel for 2s .*after 0 decisions; killed it$"
STALLED = r"^compiler \(pid \d+\) stopped talking: no data and no CPU progress for 0.2s after 0 decisions; killed it$"


@pytest.mark.parametrize(("timeout", "max_silence", "said"), [
    (30.0, 2.0, SILENT),  # a busy compiler shows CPU progress within 30 s under any load: only the cap can fire
    # None: 10 x the timeout. A 0.2 s window of CPU progress is one a loaded machine may not give the spinner: then
    # the stall check fires first, and either way the compiler is stopped in one line
    (0.2, None, f"{SILENT}|{STALLED}")])
def test_compiler_spinning_after_the_header_is_stopped_at_max_silence(timeout: float, max_silence: float | None,
                                                                      said: str) -> None:
    """A compiler that opens the channel, sends a header and then loops on the CPU: not idle, yet stopped."""
    import sys

    from policyhost.protocol import Header, TensorSpec

    header = Header([TensorSpec("inlining_default", "int64_t", (1,))], TensorSpec("inlining_decision", "int64_t", (1,)))
    with Channel() as ch:
        spinner = (f"import os\nfd = os.open({ch.base + '.out'!r}, os.O_WRONLY)\nos.write(fd, {header.encode()!r})\n"
                   "while True:\n    pass\n")
        proc = subprocess.Popen([sys.executable, "-c", spinner])
        t0 = time.monotonic()
        with pytest.raises(HostError, match=said) as e:
            serve(ch, proc, HeuristicPolicy(), timeout=timeout, max_silence=max_silence)
        elapsed = time.monotonic() - t0
        assert process_tree_cpu(proc.pid) == 0 and proc.returncode is not None, "killed and reaped"
    if "sent nothing" in str(e.value):
        assert elapsed >= 2, "the cap counts from the header, read after the clock started"


def test_max_silence_spares_a_busy_compiler_that_never_opened_the_channel() -> None:
    """The cap counts from the compiler's last bytes: a busy compiler that never opened the channel runs on."""
    import sys

    with Channel() as ch:
        proc = subprocess.Popen([sys.executable, "-c", "import time\nt = time.monotonic()\n"
                                 "while time.monotonic() - t < 1.5:\n    pass\n"])
        # the stall check's window is 30 s, which a busy process shows CPU progress in under any load (a 0.5 s one
        # could pass without a tick on a loaded machine, and the test then saw the stall check, not the cap)
        report = serve(ch, proc, HeuristicPolicy(), timeout=30, max_silence=0.2)
    assert proc.returncode == 0 and report.sessions == 0


@pytest.mark.parametrize(("index", "why"), [(7, "outside the 4 candidates"), (-1, "outside the 4 candidates"),
                                            (1, "a candidate the compiler's mask excludes")])
def test_advice_the_mask_forbids_is_refused_for_any_policy(index: int, why: str) -> None:
    import sys

    from policyhost.protocol import Header, TensorSpec, encode_observation

    header = Header([TensorSpec("mask", "int64_t", (1, 4))], TensorSpec("index_to_evict", "int64_t", (1,)))
    stream = header.encode() + encode_observation(header, Observation(5, None, {"mask": (1, 0, 1, 1)}))

    class Answer:
        name = "fixed"

        def bind(self, header: Header) -> None:
            pass

        def decide(self, obs: Observation) -> int:
            return index

    with Channel() as ch:
        compiler = (f"import os\nout = os.open({ch.base + '.out'!r}, os.O_WRONLY)\nos.write(out, {stream!r})\n"
                    f"os.read(os.open({ch.base + '.in'!r}, os.O_RDONLY), 8)\nraise SystemExit(9)\n")
        proc = subprocess.Popen([sys.executable, "-c", compiler])
        with pytest.raises(HostError, match=rf"^policy fixed advised index {index} on observation 5, {why}"):
            serve(ch, proc, Answer(), timeout=30)
        assert proc.returncode == -signal.SIGKILL  # it never got the advice
