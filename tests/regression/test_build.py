"""Building with a variant: a compile that overruns its time limit is stopped without leaving anything behind."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from policyhost.cc import launcher_command
from regression import build
from tests.policyhost.conftest import CSRC, process_running

# A "compiler" that ignores SIGTERM and spins on the CPU (so the host's own stall check never fires).
SLOW_CLANG = """#!/bin/sh
echo $$ > "$(dirname "$0")/pid"
trap '' TERM
while :; do :; done
"""


@pytest.mark.parametrize("through_launcher", [True, False])
def test_timed_out_compile_leaves_no_compiler_and_no_channel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             toolchain: Toolchain, through_launcher: bool) -> None:
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "clang").write_text(SLOW_CLANG)
    (fake / "clang").chmod(0o755)
    channels = tmp_path / "tmp"
    channels.mkdir()
    monkeypatch.setenv("TMPDIR", str(channels))
    monkeypatch.setenv("MLGO_FARM_LLVM_BIN_DIR", str(fake))
    monkeypatch.setattr(build, "STOP_GRACE", 1.0)  # the launcher unwinds in milliseconds
    variant = build.policy_variant("heuristic", timeout=60) if through_launcher else build.heuristic_variant()
    assert ("--bin-dir" in variant.launcher) == through_launcher
    t0 = time.monotonic()
    try:
        result = build.compile_object(Toolchain(fake), variant, "sort.c", ["-Oz", "-c", str(CSRC / "sort.c")],
                                      tmp_path / "out" / "sort.o", timeout=2)
        elapsed = time.monotonic() - t0
        pid = int((fake / "pid").read_text())
        left = process_running(pid, str(fake))
    finally:
        if (fake / "pid").is_file() and process_running(int((fake / "pid").read_text()), str(fake)):
            os.kill(int((fake / "pid").read_text()), signal.SIGKILL)  # the fake compiler this test started
    assert result.obj is None and result.error == "compile timed out after 2s"
    assert not left, "the compiler was stopped and reaped"
    assert list(channels.iterdir()) == [], "no mlgo-channel-* directory (FIFO pair) is left"
    assert 2 <= elapsed < 10
    # and a compile that finishes in time is untouched by the process-group handling
    ok = build.compile_object(toolchain, build.heuristic_variant(), "sort.c", ["-Oz", "-c", str(CSRC / "sort.c")],
                              tmp_path / "ok" / "sort.o", timeout=60)
    assert ok.error is None and ok.obj.is_file()


def test_launcher_command_passes_the_silence_limit() -> None:
    prefix = launcher_command("heuristic", timeout=5, max_silence=12.5)
    assert prefix[prefix.index("--max-silence") + 1] == "12.5"
    assert "--max-silence" not in launcher_command("heuristic", timeout=5)
