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


def _processes_naming(marker: str) -> list[int]:
    """The live processes whose command line has `marker` (a compile of this test's corpus)."""
    return [int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit() and process_running(int(d.name), marker)]


def test_sigterm_ends_regress_run_without_compiling_the_queued_modules(tmp_path: Path, toolchain: Toolchain) -> None:
    """A Buildbot stop (SIGTERM) of `regress run` waited for every queued compile: the pool's shutdown ran them all
    (401 files took 22.7 s to stop; 20,000 kept compiling for minutes). Now the queued compiles are dropped and the
    running compilers' process groups stopped: far fewer objects than modules exist when it exits 143, and no
    compiler of the run is left. The real command on a real -Oz corpus of many modules (copies of one module)."""
    import json
    import shutil
    import subprocess
    import sys

    from farm import progress
    from workers.corpus import from_sources

    src = tmp_path / "src"
    src.mkdir()
    (src / "m.c").write_text("int f(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * x; return s; }\n")
    corpus = from_sources(src, tmp_path / "many", toolchain, jobs=1, level="Oz").path
    n = 400
    desc = json.loads((corpus / "corpus_description.json").read_text())
    for i in range(n):
        shutil.copy(corpus / "m.c.bc", corpus / f"m{i}.bc")
    desc["modules"] = [f"m{i}" for i in range(n)]
    (corpus / "corpus_description.json").write_text(json.dumps(desc))
    # the real command, with a progress line for every compile (farm/progress.py prints one a minute off a terminal)
    cmd = [sys.executable, "-c", "import sys; from farm import cli, progress; progress.PROGRESS_EVERY = 0.0; "
           "sys.argv[0] = 'mlgo-farm'; cli.console()", "regress", "run", "--corpus", str(corpus), "--opt=-Oz",
           "--no-publish", "--repeats", "0", "--no-callgrind", "--jobs", "2", "--run-id", "stopped"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        for line in p.stderr:  # the first compile done: the build is under way
            seen.append(line)
            if progress.LINE.match(line.strip()):
                break
        assert p.poll() is None, "".join(seen)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)  # a bound for a hang, not a measure
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    lines = [ln for ln in err.splitlines() if not progress.LINE.match(ln)]
    assert p.returncode == 143 and lines == ["mlgo-farm: error: terminated"], err
    objects = list((tmp_path / "var").rglob("*.o"))
    assert 0 < len(objects) < n // 2, f"{len(objects)} of {n} modules compiled: the queued ones went on after the stop"
    assert _processes_naming(str(corpus)) == [], "no compiler of the run outlives it"
