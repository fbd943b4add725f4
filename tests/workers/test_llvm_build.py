"""The LLVM build step: its commands, and a real git + CMake configure on a local repository.

A full LLVM build takes hours on two cores; CI checks the plan and runs the configure for real
on a small llvm-project-shaped repository. docs/datasets.md#llvm-at-tip-of-tree-workersllvm_buildpy documents
the full run.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from farm import progress
from farm.errors import FarmError, InputError
from farm.toolchain import Toolchain
from workers import llvm_build


def test_plan_builds_tools_with_embedded_bitcode(toolchain: Toolchain, tmp_path: Path) -> None:
    p = llvm_build.plan(tmp_path / "src", tmp_path / "build", "main", toolchain, jobs=2)
    tools = [c[0] for c in p.commands]
    assert tools == ["git", "git", "git", "cmake", "ninja"]
    cmake = p.commands[3]
    assert "-DCMAKE_C_FLAGS=-Xclang -fembed-bitcode=all" in cmake
    assert "-DCMAKE_CXX_FLAGS=-Xclang -fembed-bitcode=all" in cmake
    assert "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON" in cmake and "-DLLVM_APPEND_VC_REV=ON" in cmake
    assert f"-DCMAKE_C_COMPILER={toolchain.path('clang')}" in cmake
    assert p.commands[4][:5] == ["ninja", "-C", str(tmp_path / "build"), "-j", "2"]
    assert {"clang", "opt", "llc", "llvm-ir2vec"} <= set(p.commands[4])
    assert p.bin_dir == tmp_path / "build" / "bin"


@pytest.mark.parametrize("rev", ["", "-x", "main; rm -rf /", "a b"])
def test_bad_revision_is_refused(rev: str, toolchain: Toolchain, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="invalid git revision"):
        llvm_build.plan(tmp_path / "s", tmp_path / "b", rev, toolchain)


def _git(*args: str | Path, cwd: Path) -> str:
    return subprocess.run(["git", *map(str, args)], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _upstream(root: Path, probe: str = "int probe(void) { return 42; }\n") -> tuple[Path, str]:
    """A local llvm-project-shaped repository tagged farm-rev, and its commit."""
    upstream = root / "upstream"
    (upstream / "llvm").mkdir(parents=True)
    (upstream / "llvm" / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(LLVM C CXX)\nadd_library(probe STATIC probe.c)\n"
    )
    (upstream / "llvm" / "probe.c").write_text(probe)
    _git("init", "-q", "-b", "main", cwd=upstream)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "add", ".", cwd=upstream)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first", cwd=upstream)
    _git("tag", "farm-rev", cwd=upstream)
    return upstream, _git("rev-parse", "HEAD", cwd=upstream).strip()


def test_configure_for_real_on_a_local_repository(toolchain: Toolchain, tmp_path: Path) -> None:
    upstream, commit = _upstream(tmp_path)
    p = llvm_build.plan(tmp_path / "src", tmp_path / "build", "farm-rev", toolchain, repo=upstream.as_uri())
    logged: list[str] = []
    llvm_build.run(p, configure_only=True, log=logged.append)
    assert logged[0].startswith("+ git checkout farm-rev of ") and logged[1] == f"  at commit {commit}"
    assert logged[2].startswith("+ cmake ") and len(logged) == 3, "ninja must not run"
    assert _git("rev-parse", "HEAD", cwd=tmp_path / "src").strip() == commit
    cache = (tmp_path / "build" / "CMakeCache.txt").read_text()
    assert "CMAKE_C_FLAGS:STRING=-Xclang -fembed-bitcode=all" in cache
    entries = json.loads((tmp_path / "build" / "compile_commands.json").read_text())
    assert "-fembed-bitcode=all" in entries[0]["command"]


def test_the_build_streams_ninja_and_a_failed_compile_is_one_line(toolchain: Toolchain, tmp_path: Path,
                                                                   monkeypatch, capsys) -> None:
    monkeypatch.setattr(progress, "PROGRESS_EVERY", 0.0)  # a progress line for every edge
    upstream, _ = _upstream(tmp_path, "int probe(void) { return 42 }\n")
    p = llvm_build.plan(tmp_path / "src", tmp_path / "build", "farm-rev", toolchain, repo=upstream.as_uri(),
                        targets=("probe",), jobs=1)
    logged: list[str] = []
    with pytest.raises(FarmError) as e:
        llvm_build.run(p, log=logged.append)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("building LLVM at farm-rev failed at CMakeFiles/probe.dir/probe.c.o")
    assert "expected ';'" in msg
    # Ninja's other lines stream as they come; its `[n/m]` lines are the progress, on stderr
    assert any(ln.startswith("FAILED: ") for ln in logged) and not any(ln.startswith("[1/2]") for ln in logged)
    assert capsys.readouterr().err.splitlines() == ["llvm-build: ninja edges: 1/2 done, 0m00s, about 0m00s left"]


def test_ninja_progress_is_stage_done_total_elapsed_and_estimate(capsys) -> None:
    """Ninja's `[n/m]` lines as the progress of one stage (a bar on a terminal, tests/farm/test_progress.py), Ninja's
    total followed when it changes; other lines to the log; nothing on a builder's log faster than the interval."""
    clock = iter(range(0, 10_000, 61))  # a minute and a second per call
    logged: list[str] = []
    with llvm_build.NinjaProgress(logged.append, clock=lambda: float(next(clock))) as echo:
        for line in ("[1/4] Building C object a.o", "warning: unused", "[2/4] Building C object b.o",
                     "[3/5] Building C object c.o", "[5/5] Linking probe"):
            echo(line)
    assert logged == ["warning: unused"]
    assert capsys.readouterr().err.splitlines() == [
        "llvm-build: ninja edges: 1/4 done, 1m01s, about 3m03s left",
        "llvm-build: ninja edges: 2/4 done, 2m02s, about 2m02s left",
        "llvm-build: ninja edges: 3/5 done, 3m03s, about 2m02s left"]


def test_a_revision_the_repository_does_not_have_is_one_line(toolchain: Toolchain, tmp_path: Path) -> None:
    upstream, _ = _upstream(tmp_path)
    p = llvm_build.plan(tmp_path / "src", tmp_path / "build", "no-such-rev", toolchain, repo=upstream.as_uri())
    with pytest.raises(InputError, match=r"^git revision 'no-such-rev' does not exist in file://"):
        llvm_build.run(p, log=lambda _: None)
    assert not (tmp_path / "build").exists()
