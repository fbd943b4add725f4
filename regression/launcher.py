"""Compiler launcher: run one compile in LLVM's interactive MLGO mode with its own policy host.

`run_compile(["clang", "-Oz", "-c", "a.c", "-o", "a.o"], "heuristic")` creates a private FIFO
pair, adds the interactive flags, starts the farm's clang (through `farm.toolchain`) and serves
the channel until the compiler exits. Parallel builds simply run one launcher per compile.
Invocations that compile nothing (linking, `-E` on no source) run unchanged.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from farm.errors import FarmError, InputError
from farm.toolchain import Toolchain, describe_failure
from regression.host import Channel, serve
from regression.policies import Policy, load_policy

SOURCE_SUFFIXES = {".c", ".cc", ".cpp", ".cxx", ".c++", ".C", ".m", ".mm", ".i", ".ii", ".bc", ".ll"}
_CLANG = re.compile(r"^(clang|clang\+\+|cc|c\+\+)(-\d+)?$")
ADVISORS = ("inline", "regalloc")


@dataclass
class CompileOutcome:
    """One compile: the compiler's exit status and message, and what the host did."""

    argv: list[str]
    returncode: int
    stderr: str
    wall: float
    decisions: int = 0
    sessions: int = 0
    response_times: list[float] = field(default_factory=list)
    #: one line saying why the compile failed (compiler message or host failure), None on success
    error: str | None = None
    #: set when the host, not the compiler, ended the compile (stall, protocol or policy failure)
    host_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def median_response(self) -> float | None:
        import statistics  # not at module level: every compile of a build starts this module

        return statistics.median(self.response_times) if self.response_times else None


def compiler_tool(name: str, toolchain: Toolchain) -> str:
    """Map the launcher's compiler argument (`clang`, `/usr/bin/clang-22`, ...) to a farm tool name."""
    real = Path(os.path.realpath(name)) if os.sep in name else None
    if real is not None and real.parent == Path(os.path.realpath(toolchain.bin_dir)):
        return real.name
    base = Path(name).name
    m = _CLANG.match(base)
    if m:
        return "clang++" if "++" in m.group(1) else "clang"
    raise InputError(f"policy-cc runs the farm's clang from {toolchain.bin_dir}; cannot launch {name!r}")


def compiles_source(args: Sequence[str]) -> bool:
    """Whether the invocation compiles a source or IR file (so the optimizer, and the channel, run)."""
    prev = ""
    for a in args:
        if prev in ("-o", "-MF", "-MT", "-MQ"):
            prev = ""
            continue
        if not a.startswith("-") and Path(a).suffix in SOURCE_SUFFIXES:
            return True
        if a == "-" and "-x" in args:
            return True
        prev = a
    return False


def check_vocab(vocab: str | os.PathLike) -> Path:
    """A readable IR2Vec vocabulary JSON, or a one-line InputError."""
    p = Path(vocab)
    if not p.is_file():
        raise InputError(f"IR2Vec vocabulary {p} not found")
    try:
        data = json.loads(p.read_bytes())
    except (OSError, ValueError) as e:
        raise InputError(f"IR2Vec vocabulary {p} is not readable JSON: {e}") from None
    if not isinstance(data, dict) or not {"Opcodes", "Types", "Arguments"} <= set(data):
        raise InputError(f"IR2Vec vocabulary {p} lacks the Opcodes/Types/Arguments sections")
    return p.absolute()


def published_vocab(version: str = "latest") -> Path:
    """An IR vocabulary published by the farm (`vocab/ir/...` in the object store), cached locally by version.

    The download checks the manifest's sha256; the cache file is written atomically, so parallel
    compiles of one build share it safely.
    """
    from farm.config import load_settings
    from farm.store import store_from_settings
    from vocabgen.publish import download, show

    settings = load_settings()
    store = store_from_settings(settings)
    manifest = show(store, "ir", version or "latest")
    cached = settings.var_dir / "cache" / "vocab" / "ir" / f"{manifest['version']}.json"
    if not cached.is_file():
        download(store, "ir", manifest["version"], cached)
    return cached


def interactive_flags(base: Path, advisor: str = "inline", vocab: Path | None = None) -> list[str]:
    """The `-mllvm` flags that put the inliner (or the regalloc eviction advisor) in interactive mode."""
    if advisor == "inline":
        opts = [
            "-enable-ml-inliner=release",
            f"-inliner-interactive-channel-base={base}",
            "-inliner-interactive-include-default",
        ]
        if vocab is not None:
            # 22.1.8: the inliner flag turns the embedding features on; the vocabulary itself is read
            # from -ir2vec-vocab-path.
            opts += [f"-ml-inliner-ir2vec-vocab-file={vocab}", f"-ir2vec-vocab-path={vocab}"]
    elif advisor == "regalloc":
        opts = ["-regalloc-enable-advisor=release", f"-regalloc-evict-interactive-channel-base={base}"]
    else:
        raise InputError(f"unknown advisor {advisor!r}: use one of {', '.join(ADVISORS)}")
    return [x for o in opts for x in ("-mllvm", o)]


def run_compile(
    argv: Sequence[str],
    policy: Policy | str,
    vocab: str | os.PathLike | None = None,
    timeout: float = 60.0,
    *,
    toolchain: Toolchain | None = None,
    advisor: str = "inline",
    cwd: str | os.PathLike | None = None,
    env: Mapping[str, str] | None = None,
    stdout: IO | int | None = None,
) -> CompileOutcome:
    """Run `argv` (compiler first) with a policy host; never raises for a failing compile.

    `vocab` is an IR2Vec vocabulary file, or `store:VERSION` (`store:latest`) for one the farm published.
    Bad arguments (unknown policy, missing vocabulary or model) raise InputError before anything runs.
    """
    if not argv:
        raise InputError("no compiler command given")
    toolchain = toolchain or Toolchain.from_settings()
    tool = compiler_tool(argv[0], toolchain)
    args = list(argv[1:])
    pol = load_policy(policy) if isinstance(policy, str) else policy
    if isinstance(vocab, str) and vocab.startswith("store:"):
        vocab = published_vocab(vocab.removeprefix("store:"))
    vocab_path = check_vocab(vocab) if vocab is not None else None
    if vocab_path is not None and advisor != "inline":
        raise InputError("an IR2Vec vocabulary only applies to the inliner advisor")
    t0 = time.monotonic()
    if not compiles_source(args):
        p = toolchain.popen(tool, args, cwd=cwd, env=env, stdout=stdout, stderr=subprocess.PIPE)
        _, err = p.communicate()
        text = err.decode(errors="replace")
        return CompileOutcome(list(argv), p.returncode, text, time.monotonic() - t0,
                              error=describe_failure(tool, p.returncode, text) if p.returncode else None)
    with Channel() as channel, tempfile.TemporaryFile(dir=channel.dir) as errfile:
        flags = interactive_flags(channel.base, advisor, vocab_path)
        proc = toolchain.popen(tool, [*args, *flags], cwd=cwd, env=env, stdout=stdout, stderr=errfile)
        host_error = None
        try:
            report = serve(channel, proc, pol, timeout)
        except FarmError as e:
            host_error, report = str(e), None
        rc = proc.wait()
        errfile.seek(0)
        text = errfile.read().decode(errors="replace")
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
