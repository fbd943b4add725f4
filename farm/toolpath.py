"""Where an LLVM tool is: the one rule `Toolchain.path` and the per-compile launcher share.

The launcher finds clang on every compile and must not import `farm.toolchain` (subprocess,
pathlib and functools are more than its whole start-up), so the rule lives here, with no
imports beyond `os` and the farm's error types.
"""

from __future__ import annotations

import os

from farm.errors import ToolError


def tool_path(bin_dir: str | os.PathLike, tool: str) -> str:
    """Absolute path of the executable `tool` in `bin_dir`, or a one-line ToolError."""
    path = os.path.join(os.fspath(bin_dir), tool)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise ToolError(f"LLVM tool {tool!r} not found in {os.fspath(bin_dir)} (set MLGO_FARM_LLVM_BIN_DIR)")
    return os.path.abspath(path)
