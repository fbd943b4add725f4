"""A compiler shim: one executable that *is* the compiler to a build system.

A launcher prefix in `CC` (`make CC="LAUNCHER -- clang-22"`) works for make, but not for every build system:
libtool reads the first word of `CC` to infer its `--tag` (`--tag=CC: not found` with Debian's lua5.4), and CMake
wants a launcher as a `;`-list in `CMAKE_<LANG>_COMPILER_LAUNCHER`. A shim hides the launcher behind one path:

    #!/bin/sh
    exec /abs/launcher --opts ... -- clang-22 "$@"

so `CC=DIR/cc`, `./configure CC=DIR/cc` (libtool's tag probing, autoconf's compiler checks) and
`cmake -DCMAKE_C_COMPILER=DIR/cc` take it as a plain compiler. `mlgo-farm policy-cc --shim DIR/cc [options] --
clang-22` writes one for the farm's launcher (policyhost/cli.py); docs/policies.md has the one-line `printf` that
writes the same for the standalone hosts.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from farm.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def script(prefix: Sequence[str], command: Sequence[str]) -> str:
    """The shim's text: `exec PREFIX COMMAND "$@"` (COMMAND: the compiler, and any arguments every call gets),
    every word shell-quoted."""
    if not command or not command[0]:
        raise InputError("policy-cc --shim: no compiler given (usage: policy-cc --shim DIR/cc [options] -- clang-22)")
    if any("\n" in w or "\0" in w for w in (*prefix, *command)):
        raise InputError("policy-cc --shim: a launcher argument holds a newline or NUL, which a shim cannot hold")
    return ("#!/bin/sh\n# written by `mlgo-farm policy-cc --shim`: this compiler, through an MLGO policy host\n"
            f'exec {shlex.join([*prefix, *command])} "$@"\n')


def write(path: str | os.PathLike, prefix: Sequence[str], command: Sequence[str]) -> Path:
    """Write the shim at `path` (absolute after this), mode 0755, atomically (a build running the old one never
    sees half a file); a directory at `path` is one line."""
    from farm.atomic import write_atomic

    out = Path(path).absolute()
    if out.is_dir():
        raise InputError(f"policy-cc --shim: {out} is a directory: give the compiler's file name (DIR/cc)")
    write_atomic(out, script(prefix, command), mode=0o755)
    return out
