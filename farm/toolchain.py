"""The one place where LLVM tools are located, checked and run.

Every invocation of clang, opt, llc, llvm-ir2vec, llvm-size, ... in the farm goes through a
`Toolchain`, so the bin directory, the version check and the failure messages are uniform.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from farm.errors import ToolError
from farm.toolpath import tool_path

_HASH = re.compile(r"\b([0-9a-f]{40})\b")
_FRAME = re.compile(r"^#\d+ 0x[0-9a-f]+ (\S.*?) \(")
_CHUNK = 1 << 20  # bytes read at a time from a streamed tool's output
_STDERR_KEPT = 1 << 20  # bytes of a streamed tool's stderr kept for the error message
_HANDLER_FRAMES = ("PrintStackTrace", "RunSignalHandlers", "SignalHandler", "CrashRecovery")
# the driver's line when its cc1 died (a signal shows as 128 + its number), and the pass the stack dump names
_CC1_DIED = re.compile(r"frontend command failed (?:with exit code (\d+)|due to signal)")
_PASS = re.compile(r"^\d+\.\s+Running pass '([^']+)' on function '([^']+)'")


@dataclass(frozen=True)
class ToolResult:
    """A finished, successful tool run."""

    args: list[str]
    stdout: bytes
    stderr: bytes


def describe_failure(tool: str, returncode: int, stderr: bytes | str) -> str:
    """One line saying how a tool died: signal name or exit code plus its first error line."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    died = next((m for ln in lines if (m := _CC1_DIED.search(ln))), None)
    if returncode > 0 and died is not None:
        return _cc1_crash(tool, died, lines)
    errors = [ln for ln in lines if "error" in ln.lower()]
    frames = _frames(lines)
    if returncode < 0 and frames and not errors:
        first = f"in {frames[0][:240]}"
    else:
        first = (errors or lines or [""])[0][:300]
    how = _crashed(-returncode) if returncode < 0 else f"exited with code {returncode}"
    if first.startswith("in "):
        return f"{tool} {how} {first}"
    return f"{tool} {how}" + (f": {first}" if first else "")


def _cc1_crash(tool: str, died: re.Match, lines: list[str]) -> str:
    """The driver exits 1 when the compiler process it ran (cc1) crashes; say which signal and where instead, since
    "exited with code 1: clang frontend command failed" reads like a user error (a greedy allocator fed a bad
    eviction index dies this way: docs/policies.md)."""
    code = int(died.group(1)) if died.group(1) else None
    how = "crashed"
    if code is not None and code > 128:
        how = _crashed(code - 128)
    elif code is not None:
        how = f"crashed (its compiler process exited with code {code})"
    where = next((m for ln in lines if (m := _PASS.match(ln))), None)
    if where is not None:
        return f"{tool} {how} in pass '{where.group(1)}' on function '{where.group(2)}'"
    frames = _frames(lines)
    return f"{tool} {how}" + (f" in {frames[0][:240]}" if frames else "")


def _crashed(signum: int) -> str:
    try:
        return f"crashed with {signal.Signals(signum).name}"
    except ValueError:
        return f"crashed with signal {signum}"


def _frames(lines: list[str]) -> list[str]:
    """The stack dump's frames below LLVM's own signal handlers: the first is where it died."""
    frames = [m.group(1) for ln in lines if (m := _FRAME.match(ln))]
    return [f for f in frames if not any(h in f for h in _HANDLER_FRAMES)]


def _timed_out(tool: str, timeout: float | None, where: str) -> ToolError:
    return ToolError(f"{tool} timed out after {timeout:g}s{where}")


@dataclass(frozen=True)
class Toolchain:
    """LLVM tools in one bin directory, at least version `min_major`."""

    bin_dir: Path = Path("/usr/lib/llvm-22/bin")
    min_major: int = 22

    @classmethod
    def from_settings(cls, settings=None) -> Toolchain:
        from farm.config import load_settings

        s = settings or load_settings()
        return cls(Path(s.llvm.bin_dir), s.llvm.min_major)

    def path(self, tool: str) -> Path:
        """Absolute path of `tool`, or a ToolError saying it is missing."""
        return Path(tool_path(self.bin_dir, tool))

    @functools.cached_property
    def version(self) -> str:
        """LLVM version string, for example `22.1.8`; checks the minimum major version."""
        out = self._query("llvm-config", ["--version"]).strip()
        m = re.match(r"(\d+)\.", out)
        if not m:
            raise ToolError(f"cannot read LLVM version from llvm-config: {out!r}")
        if int(m.group(1)) < self.min_major:
            raise ToolError(f"LLVM {out} in {self.bin_dir} is too old: need {self.min_major} or newer")
        return out

    @functools.cached_property
    def commit(self) -> str | None:
        """The llvm-project git commit of a source build, or None for a distribution build.

        From clang's banner (`LLVM_APPEND_VC_REV`), else from the build's `VCSRevision.h`.
        """
        m = _HASH.search(self._clang_banner)
        if m:
            return m.group(1)
        header = Path(self.bin_dir).parent / "include" / "llvm" / "Support" / "VCSRevision.h"
        try:
            m = re.search(r'#define\s+LLVM_REVISION\s+"([0-9a-f]{40})"', header.read_text())
        except OSError:
            return None
        return m.group(1) if m else None

    @functools.cached_property
    def clang_version(self) -> str:
        return self._clang_banner.splitlines()[0].strip()

    @functools.cached_property
    def _clang_banner(self) -> str:
        return self._query("clang", ["--version"])

    def describe(self) -> dict[str, str | None]:
        """Facts recorded in manifests: where the tools are, their version and commit."""
        return {
            "bin_dir": str(self.bin_dir),
            "llvm_version": self.version,
            "llvm_commit": self.commit,
            "clang": self.clang_version,
        }

    def check(self, *tools: str) -> None:
        """Fail early, with one line, if any tool is missing or LLVM is too old."""
        self.version  # noqa: B018 - raises if too old
        for t in tools:
            self.path(t)

    def _query(self, tool: str, args: Sequence[str]) -> str:
        return self.run(tool, args, timeout=60).stdout.decode(errors="replace")

    def command(self, tool: str, args: Sequence[str]) -> list[str]:
        """The argv that runs `tool` with `args`."""
        return [str(self.path(tool)), *map(str, args)]

    def run(
        self,
        tool: str,
        args: Sequence[str | os.PathLike],
        *,
        timeout: float | None = 600,
        input: bytes | None = None,
        cwd: str | os.PathLike | None = None,
        env: Mapping[str, str] | None = None,
        subject: str = "",
    ) -> ToolResult:
        """Run a tool to completion; any crash, error exit or time-out becomes a ToolError."""
        argv = self.command(tool, [str(a) for a in args])
        where = f" on {subject}" if subject else ""
        try:
            p = subprocess.run(
                argv,
                input=input,
                capture_output=True,
                timeout=timeout,
                cwd=cwd,
                env=None if env is None else dict(env),
                stdin=None if input is not None else subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise _timed_out(tool, timeout, where) from None
        if p.returncode != 0:
            raise ToolError(describe_failure(tool, p.returncode, p.stderr) + where)
        return ToolResult(argv, p.stdout, p.stderr)

    def stream(
        self,
        tool: str,
        args: Sequence[str | os.PathLike],
        sink: Callable[[bytes], None],
        *,
        timeout: float | None = 600,
        subject: str = "",
    ) -> bytes:
        """Run a tool, handing its standard output to `sink` chunk by chunk as it arrives; its stderr.

        For tools whose output is far larger than what the caller keeps (llvm-ir2vec triplets).
        Failures are the same one-line ToolErrors as `run`; what `sink` got before one is the
        caller's to discard.
        """
        import selectors

        argv = self.command(tool, [str(a) for a in args])
        where = f" on {subject}" if subject else ""
        deadline = None if timeout is None else time.monotonic() + timeout
        err = bytearray()
        with subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) as proc, selectors.DefaultSelector() as sel:
            try:
                sel.register(proc.stdout, selectors.EVENT_READ, sink)
                sel.register(proc.stderr, selectors.EVENT_READ, err.extend)
                while sel.get_map():
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise _timed_out(tool, timeout, where)
                    for key, _ in sel.select(left):
                        chunk = os.read(key.fd, _CHUNK)
                        if chunk:
                            key.data(chunk)
                        else:
                            sel.unregister(key.fileobj)
                    del err[:-_STDERR_KEPT]  # bounded; a crash report is at the end
                try:
                    rc = proc.wait(None if deadline is None else max(deadline - time.monotonic(), 0.1))
                except subprocess.TimeoutExpired:
                    raise _timed_out(tool, timeout, where) from None
            except BaseException:
                proc.kill()
                proc.wait()
                raise
        if rc != 0:
            raise ToolError(describe_failure(tool, rc, bytes(err)) + where)
        return bytes(err)

    def popen(self, tool: str, args: Sequence[str | os.PathLike], *, die_with_parent: bool = False,
              **kwargs) -> subprocess.Popen:
        """Start a tool without waiting (for the interactive policy host).

        `die_with_parent`: the tool is SIGKILLed when the thread that started it dies. A compiler on the
        interactive channel whose host was SIGKILLed (a training worker killed mid-compile) would otherwise
        spin on the dead channel forever."""
        if die_with_parent:
            kwargs["preexec_fn"] = _pdeathsig(os.getpid())
        return subprocess.Popen(self.command(tool, [str(a) for a in args]), **kwargs)


@functools.cache
def _prctl() -> Callable[..., int]:
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl


def _pdeathsig(parent: int) -> Callable[[], None]:
    """The child-side hook of `popen(die_with_parent=True)`: libc is loaded here, in the parent, so that the
    child between fork and exec only calls into it (no import)."""
    prctl, pr_set_pdeathsig, sigkill = _prctl(), 1, int(signal.SIGKILL)

    def hook() -> None:
        prctl(pr_set_pdeathsig, sigkill)
        if os.getppid() != parent:  # the parent died before the request: nothing would ever signal us
            os._exit(137)
    return hook


def merge_profiles(toolchain: Toolchain, raw: Sequence[Path], out: Path) -> Path:
    """`llvm-profdata merge` of instrumented runs' raw profiles into the indexed profile `-fprofile-use=` reads
    (regression/pgo.py); a raw profile it cannot read is a one-line ToolError."""
    toolchain.run("llvm-profdata", ["merge", "-o", str(out), *map(str, raw)], timeout=600,
                  subject=f"{len(raw)} raw profile(s)")
    return out


def text_sizes(toolchain: Toolchain, files: Sequence[Path], chunk: int = 200) -> dict[Path, int]:
    """Berkeley `text` of each object or binary, as `llvm-size` prints it (ml-compiler-opt's measure)."""
    sizes: dict[Path, int] = {}
    files = [Path(f) for f in files]
    for start in range(0, len(files), chunk):
        part = files[start:start + chunk]
        out = toolchain.run("llvm-size", ["--format=berkeley", *part], subject=f"{len(part)} file(s)").stdout
        rows = [ln.split(None, 5) for ln in out.decode().splitlines()[1:] if ln.strip()]
        if len(rows) != len(part):
            raise ToolError(f"llvm-size printed {len(rows)} rows for {len(part)} files")
        for path, row in zip(part, rows, strict=True):
            sizes[path] = int(row[0])
    return sizes


@dataclass(frozen=True)
class TextParts:
    """An object's Berkeley `text` split by who keeps it at link time: `own` (sections of this object alone) and
    `groups` (COMDAT group signature -> the bytes its allocated read-only sections hold: templates, inline and
    `linkonce_odr` functions, of which the linker keeps one copy per linked file whatever the objects carry)."""

    own: int
    groups: Mapping[str, int]

    @property
    def text(self) -> int:
        """The whole Berkeley `text` (what `llvm-size` prints): own bytes and every group's."""
        return self.own + sum(self.groups.values())

    def without(self, kept_elsewhere: frozenset[str] | set[str]) -> int:
        """`text`, counting nothing for the groups another object of the same link keeps anyway."""
        return self.own + sum(n for g, n in self.groups.items() if g not in kept_elsewhere)


#: a `llvm-readelf -S -W` row: index, name, type, address, offset, size, entry size, flags
_SECTION = re.compile(r"^\s*\[\s*(\d+)\]\s+(\S*)\s+(\S+)\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s+[0-9a-f]+"
                      r"\s+([A-Za-z]*)")
_GROUP = re.compile(r"^COMDAT group section \[\s*\d+\] `[^']*' \[(.*)\] contains \d+ sections:$")
_MEMBER = re.compile(r"^\s+\[\s*(\d+)\]\s+\S")
_NOT_TEXT_TYPES = ("NOBITS", "GROUP", "RELA", "REL", "SYMTAB", "STRTAB", "NULL")


def text_parts(toolchain: Toolchain, files: Sequence[Path], chunk: int = 100) -> dict[Path, TextParts]:
    """Each object's Berkeley `text` split into its own bytes and its COMDAT groups' (`llvm-readelf -S -g`): what
    a sum of objects counts once per object and the linker once per linked file. Sections count as `llvm-size`
    counts them: allocated, not writable, with contents."""
    out: dict[Path, TextParts] = {}
    files = [Path(f) for f in files]
    for start in range(0, len(files), chunk):
        part = files[start:start + chunk]
        text = toolchain.run("llvm-readelf", ["-S", "-g", "-W", *part], subject=f"{len(part)} file(s)").stdout
        blocks = _per_file(text.decode(errors="replace"), len(part))
        for path, block in zip(part, blocks, strict=True):
            out[path] = _parts(block)
    return out


def _per_file(text: str, n: int) -> list[list[str]]:
    """llvm-readelf's output for `n` files as one list of lines per file (it heads each with `File: NAME` when
    given several)."""
    if n == 1:
        return [text.splitlines()]
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("File: "):
            blocks.append([])
        elif blocks:
            blocks[-1].append(line)
    if len(blocks) != n:
        raise ToolError(f"llvm-readelf printed {len(blocks)} files for {n}")
    return blocks


def _parts(lines: Sequence[str]) -> TextParts:
    sizes: dict[int, int] = {}
    group_of: dict[int, str] = {}
    current: str | None = None
    for line in lines:
        m = _SECTION.match(line)
        if m and current is None:
            index, _name, kind, size, flags = m.groups()
            if "A" in flags and "W" not in flags and kind not in _NOT_TEXT_TYPES:
                sizes[int(index)] = int(size, 16)
            continue
        g = _GROUP.match(line)
        if g:
            current = g.group(1)
            continue
        mm = _MEMBER.match(line)
        if mm and current is not None:
            group_of[int(mm.group(1))] = current
    groups: dict[str, int] = {}
    own = 0
    for index, size in sizes.items():
        if index in group_of:
            groups[group_of[index]] = groups.get(group_of[index], 0) + size
        else:
            own += size
    return TextParts(own, groups)
