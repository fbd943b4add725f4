"""Compiler launcher: run one compile in LLVM's interactive MLGO mode with its own policy host.

`run_compile(["clang", "-Oz", "-c", "a.c", "-o", "a.o"], "heuristic")` creates a private FIFO
pair, adds the interactive flags, starts the farm's clang (through `farm.toolchain`) and serves
the channel until the compiler exits. Parallel builds simply run one launcher per compile.
Invocations that compile nothing (linking, `-E` on no source) run unchanged.

The module imports only the lean host modules at load time: `policyhost.cc` (the per-compile
entry point of builds) shares `compile_with_host` and the argument helpers with `run_compile`.
"""

from __future__ import annotations

import os
import time

from farm.errors import FarmError, InputError
from policyhost import advisors
from policyhost.host import Channel, kill, serve

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path
    from typing import IO

    from farm.toolchain import Toolchain
    from policyhost.runnable import Policy

SOURCE_SUFFIXES = {".c", ".cc", ".cpp", ".cxx", ".c++", ".C", ".m", ".mm", ".i", ".ii", ".bc", ".ll"}


class CompileOutcome:
    """One compile: the compiler's exit status and message, and what the host did."""

    def __init__(self, argv: list[str], returncode: int, stderr: str, wall: float) -> None:
        self.argv, self.returncode, self.stderr, self.wall = argv, returncode, stderr, wall
        self.decisions = 0
        self.sessions = 0
        self.response_times: list[float] = []
        #: one line saying why the compile failed (compiler message or host failure), None on success
        self.error: str | None = None
        #: set when the host, not the compiler, ended the compile (stall, protocol or policy failure)
        self.host_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def median_response(self) -> float | None:
        import statistics  # not at module level: every compile of a build starts this module

        return statistics.median(self.response_times) if self.response_times else None

    def as_json(self) -> dict:
        return {"argv": self.argv, "ok": self.ok, "returncode": self.returncode, "wall": self.wall,
                "decisions": self.decisions, "sessions": self.sessions, "response_times": self.response_times,
                "error": self.error}


def _clang_name(base: str) -> str | None:
    """`clang`, `clang++`, `cc`, `c++`, optionally with a `-NN` version suffix, as a farm tool name."""
    stem, dash, version = base.rpartition("-")
    if not (dash and version.isdigit() and version.isascii()):
        stem = base
    if stem in ("clang", "cc"):
        return "clang"
    if stem in ("clang++", "c++"):
        return "clang++"
    return None


def compiler_tool(name: str, toolchain: Toolchain | str | os.PathLike) -> str:
    """Map the launcher's compiler argument (`clang`, `/usr/bin/clang-22`, ...) to a farm tool name.

    `toolchain` is a `Toolchain` or its bin directory.
    """
    bin_dir = os.fspath(getattr(toolchain, "bin_dir", toolchain))
    if os.sep in name:
        real = os.path.realpath(name)
        if os.path.dirname(real) == os.path.realpath(bin_dir):
            return os.path.basename(real)
    tool = _clang_name(os.path.basename(name))
    if tool is None:
        raise InputError(f"policy-cc runs the farm's clang from {bin_dir}; cannot launch {name!r}")
    return tool


def compiles_source(args: Sequence[str]) -> bool:
    """Whether the invocation compiles a source or IR file (so the optimizer, and the channel, run)."""
    prev = ""
    for a in args:
        if prev in ("-o", "-MF", "-MT", "-MQ"):
            prev = ""
            continue
        if not a.startswith("-") and os.path.splitext(a)[1] in SOURCE_SUFFIXES:
            return True
        if a == "-" and "-x" in args:
            return True
        prev = a
    return False


def check_vocab(vocab: str | os.PathLike) -> Path:
    """A readable IR2Vec vocabulary JSON, or a one-line InputError."""
    from pathlib import Path

    from farm.jsonio import load_file
    from farm.vocabfile import check_schema

    p = Path(vocab)
    if not p.exists():
        raise InputError(f"IR2Vec vocabulary {p} not found")
    data = load_file(p, "IR2Vec vocabulary")  # one line for bad JSON, huge integers, deep nesting, /dev/zero, a FIFO
    if not isinstance(data, dict):
        raise InputError(f"IR2Vec vocabulary {p} lacks the Opcodes/Types/Arguments sections")
    # what clang would otherwise be handed: NaN or inf vectors give four lines of clang errors, or non-finite features
    # the policy is then blamed for (the standalone host checks the same, policyhost/standalone); one InputError line
    check_schema("ir", data, f"IR2Vec vocabulary {p}")
    return p.absolute()


def published_vocab(version: str = "latest") -> Path:
    """An IR vocabulary published by the farm (`vocab/ir/...` in the object store), cached locally by version.

    The download checks the manifest's sha256; the cache file is written atomically, so parallel
    compiles of one build share it safely.
    """
    from farm.artifacts import VOCABULARIES
    from farm.config import load_settings
    from farm.objectstore import store_from_settings

    settings = load_settings()
    store = store_from_settings(settings)
    manifest = VOCABULARIES.show(store, "ir", version or "latest")
    cached = settings.var_dir / "cache" / "vocab" / "ir" / f"{manifest['version']}.json"
    if not cached.is_file():
        VOCABULARIES.download(store, "ir", manifest["version"], cached)
    return cached


def resolve_vocab(vocab: str | os.PathLike | None, advisor: str) -> Path | None:
    """The vocabulary file to pass (`store:VERSION` fetched and cached), checked; None without one."""
    if vocab is None:
        return None
    if isinstance(vocab, str) and vocab.startswith("store:"):
        vocab = published_vocab(vocab.removeprefix("store:"))
    advisors.check_vocab_applies(advisor)
    path = check_vocab(vocab)
    return path


def interactive_flags(base: str | os.PathLike, advisor: str = advisors.DEFAULT,
                      vocab: str | os.PathLike | None = None) -> list[str]:
    """The `-mllvm` flags that put `advisor` in interactive mode on channel `base` (see policyhost.advisors)."""
    return advisors.get(advisor).flags(os.fspath(base), None if vocab is None else os.fspath(vocab))


def describe_failure(tool: str, returncode: int, stderr: str) -> str:
    """farm.toolchain's one-line failure message (imported only when a compile failed)."""
    from farm.toolchain import describe_failure as describe

    return describe(tool, returncode, stderr)


def compile_with_host(
    argv: Sequence[str],
    tool: str,
    args: Sequence[str],
    policy: Policy,
    spawn: Callable[[list[str], int], object],
    *,
    vocab: str | os.PathLike | None = None,
    timeout: float = 60.0,
    advisor: str = advisors.DEFAULT,
    max_silence: float | None = None,
) -> CompileOutcome:
    """Run one compile in interactive mode: `spawn(args + flags, stderr_fd)` starts the compiler.

    The compiler's stderr is kept in the channel's private directory and returned in the outcome.
    `timeout` and `max_silence` are the host's limits (see `policyhost.host.serve`).
    """
    t0 = time.monotonic()
    with Channel() as channel:
        errfd = os.open(os.path.join(channel.path, "stderr"), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            proc = spawn([*args, *interactive_flags(channel.base, advisor, vocab)], errfd)
            host_error = None
            try:
                try:
                    report = serve(channel, proc, policy, timeout, max_silence)
                except FarmError as e:
                    host_error, report = str(e), None
                rc = proc.wait()
            except BaseException:  # interrupted (Ctrl-C, SIGTERM) anywhere: no compiler is left behind
                kill(proc)
                raise
            text = _read_all(errfd).decode(errors="replace")
        finally:
            os.close(errfd)
    outcome = CompileOutcome(list(argv), rc, text, time.monotonic() - t0)
    if report is not None:
        outcome.decisions, outcome.sessions = report.decisions, report.sessions
        outcome.response_times = report.response_times
    if host_error is not None:
        outcome.error = outcome.host_error = host_error
    elif rc != 0:
        after = f" after {outcome.decisions} policy decisions" if outcome.decisions else ""
        outcome.error = describe_failure(tool, rc, text) + after
    elif report is not None and report.truncated:
        outcome.error = f"{tool} exited leaving a truncated message ({report.truncated} bytes) on the channel"
    return outcome


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def run_compile(
    argv: Sequence[str],
    policy: Policy | str,
    vocab: str | os.PathLike | None = None,
    timeout: float = 60.0,
    *,
    toolchain: Toolchain | None = None,
    advisor: str = advisors.DEFAULT,
    cwd: str | os.PathLike | None = None,
    env: Mapping[str, str] | None = None,
    stdout: IO | int | None = None,
    max_silence: float | None = None,
) -> CompileOutcome:
    """Run `argv` (compiler first) with a policy host; never raises for a failing compile.

    `vocab` is an IR2Vec vocabulary file, or `store:VERSION` (`store:latest`) for one the farm published.
    Bad arguments (unknown policy, missing vocabulary or model) raise InputError before anything runs.
    """
    import subprocess

    from farm.toolchain import Toolchain
    from policyhost.runnable import check_advisor, local_policy

    if not argv:
        raise InputError("no compiler command given")
    toolchain = toolchain or Toolchain.from_settings()
    tool = compiler_tool(argv[0], toolchain)
    args = list(argv[1:])
    if isinstance(policy, str):
        check_advisor(policy, advisor)
    pol = local_policy(policy) if isinstance(policy, str) else policy
    vocab_path = resolve_vocab(vocab, advisor)
    if not compiles_source(args):
        t0 = time.monotonic()
        p = toolchain.popen(tool, args, cwd=cwd, env=env, stdout=stdout, stderr=subprocess.PIPE)
        _, err = p.communicate()
        text = err.decode(errors="replace")
        outcome = CompileOutcome(list(argv), p.returncode, text, time.monotonic() - t0)
        outcome.error = describe_failure(tool, p.returncode, text) if p.returncode else None
        return outcome

    def spawn(full_args: list[str], errfd: int) -> subprocess.Popen:
        # its own session: the host's kill (timeout, failure, Ctrl-C) takes the compiler's children with it
        return toolchain.popen(tool, full_args, cwd=cwd, env=env, stdout=stdout, stderr=errfd, die_with_parent=True,
                               start_new_session=True)

    return compile_with_host(argv, tool, args, pol, spawn, vocab=vocab_path, timeout=timeout, advisor=advisor,
                             max_silence=max_silence)
