"""The one place where CMake, Ninja and git are located and run, and their failures worded.

LLVM's own tools go through `farm.toolchain`; these are the build-system tools around them. A
failure is one line that says which step failed and quotes the tool's own words (CMake's last
error, the Ninja edge that failed and its first error line, git's fatal line), because the
full logs of a CMake project run to thousands of lines and nobody reads a builder's log to the
end.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from farm.errors import FarmError, InputError, ToolError

log = logging.getLogger(__name__)

#: Ninja is asked about this many build edges per `ninja -t query` (keeps argv far below ARG_MAX).
_QUERY_BATCH = 1000
_GIT_REV = re.compile(r"^(?!-)(?!.*\.\.)[A-Za-z0-9._/@^~-]{1,200}$")


def tool(name: str) -> str:
    """Absolute path of cmake, ninja or git, or one line saying how to get it."""
    path = shutil.which(name)
    if not path:
        raise ToolError(f"{name} not found on PATH: run deploy/setup.sh")
    return path


def _run(argv: Sequence[str], *, cwd: Path | None = None, timeout: float | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    log.info("+ %s", " ".join(map(str, argv)))
    try:
        return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, errors="replace",
                              timeout=timeout, stdin=subprocess.DEVNULL,
                              env=None if env is None else {**os.environ, **env})
    except subprocess.TimeoutExpired:
        raise ToolError(f"{Path(argv[0]).name} timed out after {timeout:g}s: {' '.join(map(str, argv[1:4]))} ...") \
            from None


# --- CMake -------------------------------------------------------------------------------------------------------


def cmake_error(output: str) -> str:
    """CMake's own last error: `CMake Error at FILE:LINE (command): message`, on one line."""
    lines = output.splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.startswith("CMake Error")]
    if not starts:
        rest = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("--")]
        return rest[-1] if rest else "no output"
    i = starts[-1]
    head = lines[i].rstrip().rstrip(":")
    body = []
    for ln in lines[i + 1:]:
        if not ln.strip():
            if body:
                break
            continue
        if not ln.startswith(" "):
            break
        body.append(ln.strip())
    return f"{head}: {' '.join(body)}"[:400] if body else head[:400]


def configure(src: Path, build: Path, defines: Sequence[str], *, timeout: float | None = 3600) -> None:
    """`cmake -G Ninja -S src -B build -D...`; a failure is one line with CMake's own last error."""
    cmake = tool("cmake")
    tool("ninja")
    build.mkdir(parents=True, exist_ok=True)
    p = _run([cmake, "-G", "Ninja", "-S", src, "-B", build, *(f"-D{d}" for d in defines)], timeout=timeout)
    if p.returncode != 0:
        raise InputError(f"CMake configure of {src} failed: {cmake_error(p.stderr + p.stdout)}")


# --- Ninja -------------------------------------------------------------------------------------------------------


@dataclass
class Edge:
    """What `ninja -t query` says about one node: the rule that builds it (None: a source file) and its inputs."""

    rule: str | None = None
    explicit: list[str] = field(default_factory=list)
    implicit: list[str] = field(default_factory=list)
    order_only: list[str] = field(default_factory=list)

    @property
    def inputs(self) -> list[str]:
        return [*self.explicit, *self.implicit, *self.order_only]


def parse_query(text: str) -> dict[str, Edge]:
    """Parse `ninja -t query` output (node, `input: RULE`, inputs marked `|`/`||`, `outputs:`)."""
    edges: dict[str, Edge] = {}
    cur: Edge | None = None
    section = ""
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            cur = edges.setdefault(line.rstrip().removesuffix(":"), Edge())
            section = ""
            continue
        s = line.strip()
        if cur is None:
            continue
        if s.startswith("input:"):
            cur.rule, section = s.split(":", 1)[1].strip() or None, "in"
        elif s.endswith(":") and " " not in s:  # outputs:, validations:
            section = s
        elif section == "in":
            if s.startswith("|| "):
                cur.order_only.append(s[3:])
            elif s.startswith("| "):
                cur.implicit.append(s[2:])
            else:
                cur.explicit.append(s)
    return edges


def query(build: Path, nodes: Iterable[str]) -> dict[str, Edge]:
    """The build edges of `nodes` in `build`'s Ninja graph (unknown nodes are left out)."""
    ninja = tool("ninja")
    nodes = list(dict.fromkeys(nodes))
    edges: dict[str, Edge] = {}
    for i in range(0, len(nodes), _QUERY_BATCH):
        batch = nodes[i:i + _QUERY_BATCH]
        p = _run([ninja, "-C", build, "-t", "query", *batch])
        if p.returncode != 0:  # an unknown node aborts the whole query: ask one at a time to find it
            for n in batch:
                one = _run([ninja, "-C", build, "-t", "query", n])
                if one.returncode == 0:
                    edges.update(parse_query(one.stdout))
            continue
        edges.update(parse_query(p.stdout))
    return edges


def ninja_failure(output: str) -> tuple[str, str]:
    """(the outputs of the edge Ninja names after `FAILED:`, the first error line of what it printed)."""
    lines = output.splitlines()
    failed = next((i for i, ln in enumerate(lines) if ln.startswith("FAILED: ")), None)
    if failed is None:
        last = [ln for ln in lines if ln.startswith("ninja: ")]
        return "", (last[-1] if last else (lines[-1] if lines else "no output")).strip()
    what = lines[failed][len("FAILED: "):].strip()
    after = []
    for ln in lines[failed + 2:]:  # skip the command line Ninja echoes
        if ln.startswith(("ninja: build stopped", "[")):
            break
        if ln.strip():
            after.append(ln.strip())
    errors = [ln for ln in after if "error" in ln.lower()]
    return what, ((errors or after or ["no output"])[0])[:300]


def _ninja(build_dir: Path, targets: Sequence[str], jobs: int | None) -> list[str | Path]:
    return [tool("ninja"), "-C", build_dir, *(["-j", str(jobs)] if jobs else []), *targets]


def build(build_dir: Path, targets: Sequence[str], *, jobs: int | None = None,
          timeout: float | None = None) -> subprocess.CompletedProcess:
    """`ninja -C build_dir [-j N] targets...`; the caller words a failure (it knows what the targets mean)."""
    return _run(_ninja(build_dir, targets, jobs), timeout=timeout)


#: Lines of a streamed build kept for wording its failure (Ninja prints the failed edge near the end).
_TAIL = 2000


def build_streaming(build_dir: Path, targets: Sequence[str], echo: Callable[[str], None], *,
                    jobs: int | None = None) -> subprocess.CompletedProcess:
    """`build`, with every line Ninja prints passed to `echo` as it comes.

    For builds that run for hours (LLVM itself): a builder kills a step that stays silent for its
    timeout, and the person watching wants Ninja's `[n/m]` lines. Only the tail is kept.
    """
    argv = [str(a) for a in _ninja(build_dir, targets, jobs)]
    log.info("+ %s", " ".join(argv))
    tail: deque[str] = deque(maxlen=_TAIL)
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                          text=True, errors="replace") as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            echo(line.rstrip("\n"))
            tail.append(line)
    return subprocess.CompletedProcess(argv, proc.returncode, "".join(tail), "")


# --- git ---------------------------------------------------------------------------------------------------------


def check_rev(rev: str) -> str:
    if not rev or not _GIT_REV.match(rev):
        raise InputError(f"invalid git revision {rev!r}")
    return rev


def _git(args: Sequence[str | Path], what: str, *, timeout: float | None = 3600) -> str:
    p = _run([tool("git"), *args], timeout=timeout, env={"GIT_TERMINAL_PROMPT": "0"})
    if p.returncode != 0:
        lines = [ln.strip() for ln in p.stderr.splitlines() if ln.strip()]
        fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
        raise FarmError(f"{what}: {(fatal or lines or [f'git exited with code {p.returncode}'])[-1]}")
    return p.stdout


def checkout(repo: str, rev: str, dest: Path) -> str:
    """`dest` at `rev` of `repo` (cloned without blobs if absent, fetched otherwise); returns the commit.

    A revision the repository does not have and a repository git cannot reach are one line each.
    """
    check_rev(rev)
    dest = Path(dest).absolute()
    if not (dest / ".git").exists():
        if dest.exists() and any(dest.iterdir()):
            raise InputError(f"{dest} exists and is not a git checkout: refusing to clone into it")
        _git(["clone", "--quiet", "--filter=blob:none", "--no-checkout", repo, dest], f"cannot clone {repo}")
    else:
        _git(["-C", dest, "remote", "set-url", "origin", repo], f"cannot use {dest}")
    p = _run([tool("git"), "-C", dest, "fetch", "--quiet", "origin", rev], env={"GIT_TERMINAL_PROMPT": "0"})
    if p.returncode != 0:
        text = p.stderr.lower()
        if "couldn't find remote ref" in text or "not our ref" in text or "invalid refspec" in text \
                or "unadvertised object" in text:
            raise InputError(f"git revision {rev!r} does not exist in {repo}")
        lines = [ln.strip() for ln in p.stderr.splitlines() if ln.strip()]
        raise FarmError(f"cannot fetch {rev!r} from {repo}: {(lines or ['no output'])[-1]}")
    _git(["-C", dest, "checkout", "--quiet", "--detach", "FETCH_HEAD"], f"cannot check out {rev!r}")
    return head(dest)


def head(path: Path) -> str | None:
    """The commit checked out at `path` (anywhere inside a work tree), or None outside git."""
    if not shutil.which("git"):
        return None
    p = _run(["git", "-C", path, "rev-parse", "--verify", "--quiet", "HEAD"], env={"GIT_TERMINAL_PROMPT": "0"})
    out = p.stdout.strip()
    return out if p.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", out) else None


def dirty(path: Path) -> bool:
    """Whether the work tree at `path` differs from its commit (then the commit alone does not name the source)."""
    p = _run(["git", "-C", path, "status", "--porcelain", "--untracked-files=no", "--", "."])
    return p.returncode == 0 and bool(p.stdout.strip())
