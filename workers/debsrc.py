"""Real code no one here wrote: Debian source packages fetched with `apt-get source`.

Most packages are compiled without their build systems, from a small recipe; a package whose
recipe names a CMake project (LLVM's `llvm-toolchain-NN`) is configured instead and only its
generated headers are built (`workers/cmake_corpus.py`). The package version, read from
`debian/changelog`, is the corpus's lineage.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from farm.errors import FarmError, InputError

_PKG = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
_LLVM_PKG = re.compile(r"^llvm-toolchain-\d+$")
_CHANGELOG = re.compile(r"^([a-z0-9][a-z0-9+.-]+) \(([^()\s]+)\)")


@dataclass(frozen=True)
class Recipe:
    """What a package's own build would provide: which sources, which defines, generated headers."""

    subdirs: tuple[str, ...] = (".",)
    flags: tuple[str, ...] = ()
    generated: dict[str, str] = field(default_factory=dict)
    #: The directory of a CMake project to configure (instead of compiling `subdirs` with `flags`).
    cmake: str | None = None
    #: `VAR=VALUE` cache settings for that project.
    cmake_defines: tuple[str, ...] = ()


#: LLVM configured for a corpus: a release build's flags, and the one backend the MIR datasets use
#: (x86-64), which also keeps the other targets' tablegen out of the prerequisites.
LLVM_CMAKE_DEFINES = ("CMAKE_BUILD_TYPE=Release", "LLVM_TARGETS_TO_BUILD=X86")
LLVM = Recipe(cmake="llvm", cmake_defines=LLVM_CMAKE_DEFINES)


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
    # LLVM's own code: the newest LLVM whose source package downloads here (llvm-toolchain-22's does not).
    "llvm-toolchain-19": LLVM,
}


def recipe(package: str) -> Recipe:
    """The package's recipe; every `llvm-toolchain-NN` is LLVM, listed or not."""
    if _LLVM_PKG.match(package):
        return RECIPES.get(package, LLVM)
    return RECIPES.get(package, Recipe())


def is_llvm(package: str) -> bool:
    """Whether `package` is one of Debian's LLVM source packages."""
    return bool(_LLVM_PKG.match(package))


def lineage(tree: Path) -> dict[str, str] | None:
    """The package and version an unpacked source tree holds, from the top of its `debian/changelog`.

    `apt-get source` names the directory after the upstream version only; the Debian revision
    (patches, rebuilds) is in the changelog, and it is what identifies the code.
    """
    try:
        with open(Path(tree) / "debian" / "changelog", encoding="utf-8", errors="replace") as f:
            first = f.readline()
    except OSError:
        return None
    m = _CHANGELOG.match(first)
    return {"kind": "debian", "package": m.group(1), "version": m.group(2)} if m else None


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
