"""The farm's one progress facility (farm/progress.py): plain lines in a builder's log, a bar on a terminal.

Time is a fake clock handed to `Progress`, so no test sleeps or depends on the machine's speed.
"""

from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from farm import progress

ROOT = Path(__file__).resolve().parents[2]


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_line_per_interval_off_a_terminal_with_stage_done_total_elapsed_and_estimate() -> None:
    out, clock = Pipe(), Clock()
    p = progress.Progress(4, "triplets ir: modules", every=60.0, stream=out, is_failure=lambda r: isinstance(r, str),
                          clock=clock)
    for r in (None, "clang failed", None, None):
        clock.now += 45.0
        p.update(r)
    # 45 s: under the interval, nothing; 90 s: a line; 135 s: 45 s after the last line, nothing; the last item: no
    # line (the command's own summary follows)
    assert out.getvalue() == "triplets ir: modules: 2/4 done (1 failed), 1m30s, about 1m30s left\n"


def test_every_item_past_the_interval_prints_and_never_a_carriage_return() -> None:
    out, clock = Pipe(), Clock()
    p = progress.Progress(3, "corpus: translation units compiled", every=0.0, stream=out, clock=clock)
    for _ in range(3):
        clock.now += 61.0
        p.update()
    assert out.getvalue().splitlines() == ["corpus: translation units compiled: 1/3 done, 1m01s, about 2m02s left",
                                           "corpus: translation units compiled: 2/3 done, 2m02s, about 1m01s left"]
    assert "\r" not in out.getvalue()


def test_a_run_shorter_than_the_interval_prints_nothing() -> None:
    out, clock = Pipe(), Clock()
    p = progress.Progress(3, "corpus", every=3600.0, stream=out, clock=clock)
    for _ in range(3):
        clock.now += 1.0
        p.update()
    assert out.getvalue() == ""


def test_steps_print_a_line_per_step_the_last_one_too(monkeypatch) -> None:
    out = Pipe()
    with progress.steps(3, "policy train: package corpora built", stream=out, unit="pkg") as bar:
        for _ in range(3):
            bar.update()
    lines = out.getvalue().splitlines()
    assert [ln.split(",")[0] for ln in lines] == [f"policy train: package corpora built: {n}/3 done" for n in (1, 2, 3)]
    assert all(ln.split(", ")[1].endswith("s") for ln in lines)  # elapsed
    assert [ln.count("left") for ln in lines] == [1, 1, 0]  # an estimate while work is left


def test_a_tool_counting_for_itself_advances_and_may_change_its_total() -> None:
    out, clock = Pipe(), Clock()
    p = progress.Progress(100, "llvm-build: ninja", every=0.0, stream=out, clock=clock)
    clock.now += 10
    p.advance(25)
    clock.now += 10
    p.advance(50, total=200)
    assert out.getvalue().splitlines() == ["llvm-build: ninja: 25/100 done, 0m10s, about 0m30s left",
                                           "llvm-build: ninja: 50/200 done, 0m20s, about 1m00s left"]


def test_the_estimate_and_elapsed_read_hours() -> None:
    assert progress.elapsed(59) == "0m59s" and progress.elapsed(61) == "1m01s" and progress.elapsed(7322) == "2h02m"


def test_plain_mode_never_imports_tqdm() -> None:
    """Off a terminal the facility costs a comparison per item: tqdm (slow to import) is not loaded."""
    code = ("import io, sys\nfrom farm import progress\n"
            "p = progress.Progress(1000, 'x', every=0.0, stream=io.StringIO())\n"
            "for _ in range(1000): p.update()\n"
            "p.close()\nprint('tqdm' in sys.modules)\n")
    got = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert got.stdout == "False\n"


def test_say_goes_to_stdout_and_progress_to_stderr(capsys) -> None:
    with progress.steps(2, "policy train: training") as bar:
        progress.say("round 1/2: explored 3 modules")
        bar.update()
    got = capsys.readouterr()
    assert got.out == "round 1/2: explored 3 modules\n"
    assert got.err.startswith("policy train: training: 1/2 done, ")


def _in_a_terminal(code: str, columns: int = 100) -> str:
    """What `code` writes to a pseudo-terminal of `columns` (0: one that says no size, as `script` makes without a
    terminal around it), its stdout and stderr both, read until it exits."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: run the code with the terminal as its stdout and stderr
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 24 if columns else 0, columns, 0, 0))
        os.chdir(ROOT)
        os.execv(sys.executable, [sys.executable, "-c", code])
    chunks = []
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.waitpid(pid, 0)
    os.close(fd)
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize("columns", [100, 0])
def test_on_a_terminal_it_is_a_bar_with_stage_done_total_elapsed_and_estimate(columns: int) -> None:
    """A terminal that says it has no size got no bar at all (tqdm hides bars below a screen of no rows)."""
    text = _in_a_terminal("from farm import progress\n"
                          "with progress.steps(4, 'policy train: package corpora built', unit='pkg') as bar:\n"
                          "    for _ in range(4):\n"
                          "        bar.update()\n"
                          "        progress.say('a line of the verb')\n", columns)
    assert "policy train: package corpora built" in text
    assert "2/4" in text and "4/4" in text  # done/total, redrawn in place
    assert "\r" in text  # a bar, not lines
    assert "<" in text and "pkg/s" in text  # tqdm's [elapsed<left, rate]
    assert text.count("a line of the verb") == 4  # the verb's own lines are printed above the bar, not through it
    assert "done, " not in text  # no plain lines on a terminal


def test_line_tells_progress_lines_from_a_verbs_other_lines() -> None:
    out, clock = Pipe(), Clock()
    p = progress.Progress(3, "policy train: training (rounds and ES steps)", every=0.0, stream=out, clock=clock,
                          is_failure=bool, final=True)
    for r in (None, "failed", None):
        clock.now += 3700.0
        p.update(r)
    lines = out.getvalue().splitlines()
    assert lines[1] == "policy train: training (rounds and ES steps): 2/3 done (1 failed), 2h03m, about 1h01m left"
    assert [m["stage"] if (m := progress.LINE.match(ln)) else None for ln in lines] == [p.desc] * 3
    assert not progress.LINE.match("mlgo-farm: error: the held-out table has no ratio for gamma: 3 of 3 modules")
    assert not progress.LINE.match("round 1/2: explored 40 modules, 3 smaller (-0.49% .text)")
