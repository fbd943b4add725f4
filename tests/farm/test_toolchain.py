"""The toolchain module against the real LLVM 22 install."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from farm.errors import ToolError
from farm.toolchain import Toolchain, describe_failure


def test_version_and_description(toolchain: Toolchain) -> None:
    d = toolchain.describe()
    assert d["llvm_version"].split(".")[0] == "22"
    assert d["bin_dir"] == str(toolchain.bin_dir)
    assert "clang version 22" in d["clang"]


def test_distribution_build_has_no_commit(toolchain: Toolchain) -> None:
    assert Toolchain(toolchain.bin_dir).commit is None  # Debian's clang banner and VCSRevision.h name none


def test_source_build_commit_from_vcs_revision_header(toolchain: Toolchain, tmp_path: Path) -> None:
    """A build tree's `include/llvm/Support/VCSRevision.h` names the commit when clang's banner does not."""
    bin_dir = tmp_path / "build" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("clang", "llvm-config"):
        (bin_dir / tool).symlink_to(toolchain.path(tool))
    header = tmp_path / "build" / "include" / "llvm" / "Support" / "VCSRevision.h"
    header.parent.mkdir(parents=True)
    rev = "0123456789abcdef0123456789abcdef01234567"
    header.write_text(f'#define LLVM_REVISION "{rev}"\n#define LLVM_REPOSITORY "https://github.com/llvm/llvm-project"\n')
    tc = Toolchain(bin_dir)
    assert tc.commit == rev
    assert tc.describe()["llvm_commit"] == rev


def test_missing_tool_is_one_clear_line(tmp_path: Path) -> None:
    tc = Toolchain(tmp_path)
    with pytest.raises(ToolError, match=r"'llvm-ir2vec' not found in .*MLGO_FARM_LLVM_BIN_DIR"):
        tc.path("llvm-ir2vec")


def test_too_old_llvm_is_refused(toolchain: Toolchain) -> None:
    with pytest.raises(ToolError, match="too old: need 99 or newer"):
        Toolchain(toolchain.bin_dir, min_major=99).check()


def test_failing_tool_names_error_line(toolchain: Toolchain, tmp_path: Path) -> None:
    src = tmp_path / "bad.c"
    src.write_text("int f(void) { return ; }\nint g(int x) { return x +; }\n")
    with pytest.raises(ToolError) as e:
        toolchain.run("clang", ["-c", src, "-o", tmp_path / "bad.o"], subject=src.name)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("clang exited with code 1: ") and msg.endswith("on bad.c")
    assert "error" in msg


def test_timeout_is_reported(toolchain: Toolchain, tmp_path: Path) -> None:
    fifo = tmp_path / "never-written.bc"
    os.mkfifo(fifo)  # opening it for reading blocks until a writer comes: none will
    with pytest.raises(ToolError, match=r"^llvm-ir2vec timed out after 0.5s on stuck$"):
        toolchain.run("llvm-ir2vec", ["triplets", fifo], timeout=0.5, subject="stuck")


def test_crash_is_named_by_signal() -> None:
    assert describe_failure("llc", -11, b"PLEASE submit a bug report\n") == (
        "llc crashed with SIGSEGV: PLEASE submit a bug report"
    )
    trace = (
        b"PLEASE submit a bug report\nStack dump:\n"
        b" #0 0x00007f3 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (/lib/libLLVM.so+0x1)\n"
        b" #3 0x00007f3 (/lib/x86_64-linux-gnu/libc.so.6+0x3c050)\n"
        b" #4 0x00007f3 llvm::mir2vec::MIRVocabulary::getRegisterOperandIndex(llvm::Register) const (/l+0x5)\n"
    )
    assert describe_failure("llvm-ir2vec", -11, trace) == (
        "llvm-ir2vec crashed with SIGSEGV in "
        "llvm::mir2vec::MIRVocabulary::getRegisterOperandIndex(llvm::Register) const"
    )
    assert describe_failure("opt", 2, b"warning: x\nopt: error: bad\n") == "opt exited with code 2: opt: error: bad"


def test_stream_gives_the_bytes_run_gives(toolchain: Toolchain, tmp_path: Path) -> None:
    src = tmp_path / "a.c"
    src.write_text("int f(int x) { return x * 3; }\nint g(int y) { return f(y) + 1; }\n")
    bc = tmp_path / "a.bc"
    toolchain.run("clang", ["-c", "-emit-llvm", "-O0", src, "-o", bc])
    chunks: list[bytes] = []
    toolchain.stream("llvm-ir2vec", ["triplets", bc], chunks.append)
    assert chunks and b"".join(chunks) == toolchain.run("llvm-ir2vec", ["triplets", bc]).stdout


def test_stream_failures_are_the_same_one_line_errors(toolchain: Toolchain, tmp_path: Path) -> None:
    bad = tmp_path / "bad.bc"
    bad.write_bytes(b"BC\xc0\xde" + b"\x00" * 64)
    with pytest.raises(ToolError) as ran:
        toolchain.run("llvm-ir2vec", ["triplets", bad], subject="bad")
    with pytest.raises(ToolError) as streamed:
        toolchain.stream("llvm-ir2vec", ["triplets", bad], lambda _: None, subject="bad")
    assert str(streamed.value) == str(ran.value) and "\n" not in str(ran.value)


def test_a_crashed_cc1_is_named_by_signal_pass_and_function() -> None:
    """clang's driver exits 1 when cc1 dies; the line says the signal and where (the stack dump's pass line)."""
    dump = (
        b"PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/\nStack dump:\n"
        b"2.\tCode generation\n"
        b"4.\tRunning pass 'Greedy Register Allocator' on function '@deflateInit2_'\n"
        b" #4 0x00007fde5b8940d3 llvm::LiveRegMatrix::query(llvm::LiveRange const&, llvm::MCRegUnit) (/l+0x5)\n"
        b"clang: error: clang frontend command failed with exit code 139 (use -v to see invocation)\n"
    )
    assert describe_failure("clang", 1, dump) == (
        "clang crashed with SIGSEGV in pass 'Greedy Register Allocator' on function '@deflateInit2_'")
    assert describe_failure("clang", 1, b"clang: error: clang frontend command failed with exit code 135 (use -v)\n") \
        == "clang crashed with SIGBUS"
    assert describe_failure("clang", 1, b"a.c:1:1: error: unknown type name 'x'\n") == (
        "clang exited with code 1: a.c:1:1: error: unknown type name 'x'")
