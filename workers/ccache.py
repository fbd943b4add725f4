"""Translation unit -> bitcode through ccache: a TU whose command and files are unchanged is not compiled again.

ccache is the tool made for this, and it handles `clang -c -emit-llvm` (checked with Debian's
4.7.5: a repeated compile is a hit with identical bytes, a changed header a miss). How it is run:

* Masquerading: `<root>/bin/clang` is a link to ccache, run through `Toolchain.run` like any
  clang, with `CCACHE_COMPILER` naming the toolchain's real clang. Time-outs and failures read
  exactly as without the cache (`clang exited with code 1: ...`).
* Depend mode: `-MD -MF <temporary> -MT bitcode` are added to the compile (never to the module's
  `.cmd`), and the key is the command plus the contents of every file in the compiler's own
  dependency list, so a miss costs no extra preprocessor run. `-MT` is fixed because the
  default target is the output path, a fresh temporary directory on every run.
* No `base_dir`. With it ccache hands clang paths relative to the working directory, and clang
  writes the source path as given into the module (`source_filename`): the bitcode would differ
  from an uncached compile's, and every manifest's corpus digest with it. Entries are shared
  wherever the absolute source paths agree (every build of the same tree on a worker; Debian
  sources live under `<var_dir>/debsrc`); neither the output directory nor the working directory
  enters the key (`-g0`, and `hash_dir` only matters with debug information).
* `compiler_check` is the toolchain's identity (version, commit, clang's digest and its shared
  libraries): clang's own mtime would not see a new libclang-cpp.
* Every other `CCACHE_*` of the environment is dropped and each setting that could change a result
  or stop sharing is pinned, so an administrator's ccache.conf cannot weaken any of this.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from farm.errors import ToolError
from farm.toolchain import Toolchain

log = logging.getLogger(__name__)

#: Settings pinned whatever ccache.conf or the environment say (booleans: set means true, so
#: "false" is spelled CCACHE_NO<NAME>). Empty strings switch a feature off.
_PINNED = {
    "CCACHE_COMPILERTYPE": "clang",
    "CCACHE_BASEDIR": "",  # see the module docstring: relative paths would change the bitcode
    "CCACHE_SLOPPINESS": "",
    "CCACHE_DEPEND": "1",
    "CCACHE_DIRECT": "1",
    "CCACHE_HASHDIR": "1",
    "CCACHE_NODISABLE": "1",
    "CCACHE_NOREADONLY": "1",
    "CCACHE_NOREADONLY_DIRECT": "1",
    "CCACHE_NORECACHE": "1",
    "CCACHE_NOHARDLINK": "1",  # outputs never share an inode with a cache file
    "CCACHE_NOFILECLONE": "1",
    "CCACHE_REMOTE_STORAGE": "",
    "CCACHE_NOREMOTE_ONLY": "1",
    "CCACHE_NORESHARE": "1",
    "CCACHE_NAMESPACE": "",
    "CCACHE_EXTRAFILES": "",
    "CCACHE_IGNOREOPTIONS": "",
    "CCACHE_IGNOREHEADERS": "",
    "CCACHE_PREFIX": "",
    "CCACHE_PREFIX_CPP": "",
    "CCACHE_STATS": "1",
    "CCACHE_STATSLOG": "",
    "CCACHE_LOGFILE": "",
    "CCACHE_MAXFILES": "0",
}
_DEP_TARGET = "bitcode"
_warned: set[Path] = set()
_warned_lock = threading.Lock()


def find_ccache() -> str | None:
    """The ccache executable on PATH (deploy/setup.sh installs Debian's), or None."""
    found = shutil.which("ccache")
    return os.path.realpath(found) if found else None


class CompileCache:
    """ccache in `root`/ccache bounded by `max_bytes`, for a toolchain whose identity is `identity`."""

    def __init__(self, root: Path, max_bytes: int, identity: str, ccache: str) -> None:
        self.root = Path(root)
        self.dir = self.root / "ccache"
        self.max_bytes = max_bytes
        self.identity = identity
        self.ccache = ccache

    def env(self, clang: Path | str | None = None) -> dict[str, str]:
        """The environment ccache runs in: the caller's without its CCACHE_*, plus the farm's settings."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("CCACHE_")}
        env |= _PINNED
        env |= {
            "CCACHE_DIR": str(self.dir),
            "CCACHE_MAXSIZE": f"{max(1, self.max_bytes >> 20)}Mi",
            "CCACHE_COMPILERCHECK": f"string:{self.identity}",
        }
        if clang is not None:
            env["CCACHE_COMPILER"] = str(clang)
        return env

    def _launcher(self, toolchain: Toolchain) -> Toolchain:
        """A toolchain whose `clang` is ccache: the link is made once, atomically (builds share it)."""
        bin_dir = self.root / "bin"
        link = bin_dir / "clang"
        with contextlib.suppress(OSError):
            if os.readlink(link) == self.ccache:
                return Toolchain(bin_dir, toolchain.min_major)
        bin_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".link.", dir=bin_dir))
        try:
            (tmp / "clang").symlink_to(self.ccache)
            os.replace(tmp / "clang", link)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return Toolchain(bin_dir, toolchain.min_major)

    def compile(self, toolchain: Toolchain, args: Sequence[str], out: Path, *, timeout: float,
                cwd: Path, subject: str) -> None:
        """Run `clang args` (which write `out`) through ccache; a ToolError exactly when clang fails.

        If ccache itself cannot work (its directory became unusable, say), the TU is compiled
        directly: the cache may make a run faster, never make it fail.
        """
        dep = out.with_name(f".{out.name}.d")
        try:
            launcher = self._launcher(toolchain)
            launcher.run("clang", [*args, "-MD", "-MF", str(dep), "-MT", _DEP_TARGET], timeout=timeout, cwd=cwd,
                         env=self.env(toolchain.path("clang")), subject=subject)
            return
        except ToolError as e:
            if "ccache: error" not in str(e):
                raise
            self._warn(str(e).split("ccache: error: ", 1)[-1])
        except OSError as e:
            self._warn(e.strerror or str(e))
        finally:
            dep.unlink(missing_ok=True)
        toolchain.run("clang", args, timeout=timeout, cwd=cwd, subject=subject)

    def _warn(self, why: str) -> None:
        """Once per cache directory and process: a broken cache would otherwise say so for every TU."""
        with _warned_lock:
            if self.root in _warned:
                return
            _warned.add(self.root)
        log.warning("compile cache %s unusable (%s): compiling without it", self.root, why)

    def _ccache(self, *args: str) -> str:
        p = subprocess.run([self.ccache, *args], env=self.env(), capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise ToolError(f"ccache {' '.join(args)} failed: {(p.stderr.strip().splitlines() or ['no output'])[0]}")
        return p.stdout

    def stats(self) -> dict[str, int]:
        """ccache's counters for this cache (`--print-stats`): hits, misses, size, cleanups, ..."""
        out = {}
        for line in self._ccache("--print-stats").splitlines():
            name, _, value = line.partition("\t")
            if value.strip().isdigit():
                out[name] = int(value)
        return out

    def zero_stats(self) -> None:
        self._ccache("--zero-stats")

    def clear(self) -> None:
        """Remove every entry (ccache's own `--clear`, safe while builds run)."""
        if self.dir.is_dir():
            self._ccache("--clear")
