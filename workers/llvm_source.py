"""LLVM's own code as a corpus: its source at a revision, configured, generators run, TUs compiled.

The source is llvm-project at a git revision (tip of tree by default) or, where git cannot reach
upstream, one of Debian's `llvm-toolchain-NN` source packages. Either way `llvm/` is configured
with the farm's clang and only its tablegen outputs are built (`cmake_corpus`), which is far
cheaper than the full build `llvm-build` makes. The commit or package version becomes the
corpus's lineage, and from there every dataset's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from farm.atomic import check_replaceable
from farm.errors import InputError
from farm.toolchain import Toolchain
from workers import buildsys, cmake_corpus, debrecipes, debsrc
from workers.corpus import DESCRIPTION, Corpus

if TYPE_CHECKING:
    from workers.shards import Shard

#: The source named `llvm-project` is upstream's git repository.
GIT = "llvm-project"
LLVM_REPO = "https://github.com/llvm/llvm-project.git"


def fetch(source: str, *, rev: str | None = None, repo: str = LLVM_REPO, checkout: Path,
          debsrc_dir: Path) -> tuple[Path, dict, str]:
    """(LLVM's CMake source directory, its lineage, a short origin) for `source`.

    `llvm-project`: `checkout` at `rev` (default main) of `repo` (cloned once, fetched after). `llvm-toolchain-NN`:
    the Debian source package, unpacked under `debsrc_dir` (an unpacked tree there is reused).
    """
    if source == GIT:
        rev = rev or "main"
        commit = buildsys.checkout(repo, rev, Path(checkout))
        lineage = {"kind": "git", "project": GIT, "repository": repo, "revision": rev, "commit": commit}
        return Path(checkout).absolute() / "llvm", lineage, f"git:{GIT}@{commit}"
    if debsrc.is_llvm(source):
        if rev is not None:
            raise InputError(f"--rev {rev} names a git revision; {source} is a Debian package (use {GIT})")
        tree = debsrc.fetch_source(source, Path(debsrc_dir))
        lineage = debsrc.lineage(tree)
        if not lineage:
            raise InputError(f"{tree} has no readable debian/changelog: cannot tell which version it is")
        recipe = debsrc.recipe(source)
        return tree / recipe.cmake, {**lineage, "project": GIT}, f"debian:{source}:{tree.name}/{recipe.cmake}"
    raise InputError(f"{source!r} is not a source of LLVM: use {GIT} (git) or a Debian llvm-toolchain-NN package")


def corpus(source: str, out: Path, toolchain: Toolchain, *, rev: str | None = None, repo: str = LLVM_REPO,
           checkout: Path, debsrc_dir: Path, build: Path | None = None, include: Sequence[str] = (),
           defines: Sequence[str] = (), jobs: int | None = None, shard: Shard | None = None,
           sample: int | None = None, level: str | None = None) -> Corpus:
    """LLVM's corpus from `source` (see `fetch`); `defines` add to or override the farm's LLVM settings; `level`: the
    front-end level every TU is compiled at (default: its own command's)."""
    check_replaceable(out, DESCRIPTION)  # before a clone or a download, not after
    src, lineage, origin = fetch(source, rev=rev, repo=repo, checkout=checkout, debsrc_dir=debsrc_dir)
    settings = {d.split("=", 1)[0]: d for d in (*debrecipes.LLVM_CMAKE_DEFINES, *cmake_corpus.check_defines(defines))}
    return cmake_corpus.from_cmake(src, out, toolchain, build=build, include=include,
                                   defines=list(settings.values()), jobs=jobs, lineage=lineage, origin=origin,
                                   shard=shard, sample=sample, level=level)
