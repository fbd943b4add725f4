"""Real code no one here wrote: Debian source packages fetched with `apt-get source`."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from farm.errors import FarmError, InputError

_PKG = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")


@dataclass(frozen=True)
class Recipe:
    """What a package's own build would provide: which sources, which defines, generated headers."""

    subdirs: tuple[str, ...] = (".",)
    flags: tuple[str, ...] = ()
    generated: dict[str, str] = field(default_factory=dict)


#: Packages the farm knows how to compile without running their build system.
RECIPES: dict[str, Recipe] = {
    "zlib": Recipe(flags=("-DHAVE_UNISTD_H", "-D_LARGEFILE64_SOURCE=1"), subdirs=(".",)),
    "lua5.4": Recipe(
        subdirs=("src",),
        flags=("-DLUA_USE_LINUX", "-DLUA_COMPAT_5_3"),
        # debian/rules generates this header; its one definition is all luaconf.h needs.
        generated={"src/lua5.4-deb-multiarch.h": '#define DEB_HOST_MULTIARCH "x86_64-linux-gnu"\n'},
    ),
    "bzip2": Recipe(flags=("-D_FILE_OFFSET_BITS=64",)),
    # The library (all of lib/, legacy formats included) and the zstd command; the x86-64 assembly
    # Huffman decoder is a .S file, so the C fallback is selected as the Makefile does without ASM.
    "libzstd": Recipe(
        subdirs=("lib", "programs"),
        flags=("-DZSTD_DISABLE_ASM", "-DZSTD_MULTITHREAD", "-DZSTD_LEGACY_SUPPORT=5", "-DXXH_NAMESPACE=ZSTD_",
               "-D_FILE_OFFSET_BITS=64", "-pthread"),
    ),
}


def recipe(package: str) -> Recipe:
    return RECIPES.get(package, Recipe())


def fetch_source(package: str, dest: Path, timeout: float = 600) -> Path:
    """Download and unpack `package`'s source under `dest`; return the source tree.

    A tree already unpacked there is reused, so repeated runs cost nothing.
    """
    if not _PKG.match(package):
        raise InputError(f"invalid Debian package name {package!r}")
    dest = Path(dest).absolute()
    existing = _unpacked(dest, package)
    if existing:
        return _prepare(existing, package)
    if not shutil.which("apt-get"):
        raise FarmError("apt-get not found: Debian source packages need a Debian machine")
    dest.mkdir(parents=True, exist_ok=True)
    try:
        p = subprocess.run(
            ["apt-get", "source", "-q", package],
            cwd=dest, capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise FarmError(f"apt-get source {package} timed out after {timeout:g}s") from None
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["no output"])[-1]
        hint = " (is there a deb-src entry? run deploy/setup.sh)" if "deb-src" in p.stderr else ""
        raise FarmError(f"apt-get source {package} failed: {last}{hint}")
    tree = _unpacked(dest, package)
    if not tree:
        raise FarmError(f"apt-get source {package} unpacked nothing under {dest}")
    return _prepare(tree, package)


def _prepare(tree: Path, package: str) -> Path:
    for rel, text in recipe(package).generated.items():
        path = tree / rel
        if not path.exists():
            path.write_text(text)
    return tree


def _unpacked(dest: Path, package: str) -> Path | None:
    """The unpacked `package-version` directory under `dest`, if there is one."""
    if not dest.is_dir():
        return None
    dirs = sorted(d for d in dest.iterdir() if d.is_dir() and d.name.startswith(f"{package}-"))
    return dirs[-1] if dirs else None
