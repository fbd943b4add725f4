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
from dataclasses import replace
from pathlib import Path

from farm.errors import FarmError, InputError
from workers.corpusdir import DEFAULT_FLAGS, CompileJob, jobs_from_directory
from workers.debrecipes import LLVM, RECIPES, PackageRecipe

_PKG = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
_LLVM_PKG = re.compile(r"^llvm-toolchain-\d+$")
_CHANGELOG = re.compile(r"^([a-z0-9][a-z0-9+.-]+) \(([^()\s]+)\)")


def recipe(package: str) -> PackageRecipe:
    """The package's recipe; every `llvm-toolchain-NN` is LLVM, listed or not."""
    if _LLVM_PKG.match(package):
        return RECIPES.get(package, LLVM)
    return RECIPES.get(package, PackageRecipe())


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


def check_name(package: str) -> None:
    """InputError unless `package` is spelt as a Debian source package name is (before it reaches apt)."""
    if not _PKG.match(package):
        raise InputError(f"invalid Debian package name {package!r}")


def fetch_source(package: str, dest: Path, timeout: float = 600) -> Path:
    """Download and unpack `package`'s source under `dest`; return the source tree.

    A tree already unpacked there is reused, so repeated runs cost nothing. When the newest source
    does not download and the recipe names a `fallback_version`, that version is fetched instead.
    """
    check_name(package)
    dest = Path(dest).absolute()
    existing = _unpacked(dest, package)
    if existing:
        return _prepare(existing, package)
    if not shutil.which("apt-get"):
        raise FarmError("apt-get not found: Debian source packages need a Debian machine")
    dest.mkdir(parents=True, exist_ok=True)
    error = _apt_source(package, dest, timeout)
    fallback = recipe(package).fallback_version
    if error and fallback:
        error = _apt_source(f"{package}={fallback}", dest, timeout)
    if error:
        raise FarmError(error)
    tree = _unpacked(dest, package)
    if not tree:
        raise FarmError(f"apt-get source {package} unpacked nothing under {dest}")
    return _prepare(tree, package)


def _apt_source(spec: str, dest: Path, timeout: float) -> str | None:
    """Run `apt-get source spec` in `dest`; None, or the one-line reason it failed (its first `E:` line)."""
    try:
        p = subprocess.run(["apt-get", "source", "-q", spec], cwd=dest, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"apt-get source {spec} timed out after {timeout:g}s"
    if p.returncode == 0:
        return None
    lines = p.stderr.strip().splitlines() or ["no output"]
    first = next((ln for ln in lines if ln.startswith("E: ")), lines[-1])
    hint = " (is there a deb-src entry? run deploy/setup.sh)" if "deb-src" in p.stderr else ""
    return f"apt-get source {spec} failed: {first}{hint}"


#: Position-independent code for every module of a Debian package: libtool compiles a shared library's objects
#: `-fPIC`, and the farm links each package's libraries and programs (workers/linked.py) from one object per module
#: (a PIE program links from -fPIC objects; a shared library cannot link from PIE ones: the front end marks their
#: globals dso_local).
PIC = ("-fPIC",)


def jobs(package: str, tree: Path, base_flags: tuple[str, ...] = DEFAULT_FLAGS) -> list[CompileJob]:
    """The compile jobs of the package unpacked at `tree`, as its recipe says: the C files under its
    subdirectories (named by their path under the tree) that it does not exclude, each with `base_flags`,
    `-fPIC` (PIC), the recipe's flags and its per-file flags."""
    r = recipe(package)
    found = [
        replace(j, name=j.name if sub == "." else f"{sub}/{j.name}")
        for sub in r.subdirs
        for j in jobs_from_directory(tree / sub, (*base_flags, *PIC, *r.flags_for(tree)))
    ]
    return [replace(j, args=(*j.args, *r.flags_of(j.name))) for j in found if r.wanted(j.name)]


def _prepare(tree: Path, package: str) -> Path:
    r = recipe(package)
    for rel, text in r.generated.items():
        path = tree / rel  # rewritten when the recipe changed since the tree was unpacked
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
    for rel, template in r.copies.items():
        path = tree / rel
        if not path.exists():
            shutil.copyfile(tree / template, path)
    return tree


def _unpacked(dest: Path, package: str) -> Path | None:
    """The unpacked `package-version` directory under `dest`, if there is one."""
    if not dest.is_dir():
        return None
    # Debian's upstream versions start with a digit: `opus-1.3.1` is opus, `opus-tools-0.2` is not.
    prefix = f"{package}-"
    dirs = sorted(d for d in dest.iterdir()
                  if d.is_dir() and d.name.startswith(prefix) and d.name[len(prefix):][:1].isdigit())
    return dirs[-1] if dirs else None
