"""A corpus: IR modules with their compile commands, in LLVM's `corpus_description.json` layout.

Sources: a directory of C/C++ files or a `compile_commands.json` (compiled here to bitcode),
a Debian source package (see `debsrc`), a CMake project configured but not built (see
`cmake_corpus`; LLVM's own code through `llvm_source`), or a build made with
`-Xclang -fembed-bitcode=all` (extracted with mlgo-utils' `extract_ir`).

A corpus records its lineage (the git commit or the Debian package version its sources came
from) in the description, so every dataset made from it can say which code it learned from.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from farm.atomic import atomic_dir
from farm.errors import FarmError, InputError
from farm.jsonio import dumps, loads
from farm.toolchain import Toolchain
from workers.corpusdir import (  # noqa: F401  (what a corpus is: re-exported for its many readers)
    DEFAULT_FLAGS,
    DESCRIPTION,
    LEVELS,
    SKIPPED,
    SOURCE_SUFFIXES,
    CompileJob,
    Corpus,
    Module,
    Shard,
    at_level,
    check_level,
    compile_jobs,
    digest_of,
    jobs_from_compile_commands,
    jobs_from_directory,
    level_of,
    load,
    sample_names,
)


def from_debian(package: str, out: Path, toolchain: Toolchain, workdir: Path, jobs: int | None = None,
                shard: Shard | None = None, sample: int | None = None, include: Iterable[str] = (),
                level: str | None = None) -> Corpus:
    """Fetch a Debian source package and compile the sources its recipe names.

    A recipe that names a CMake project (LLVM's packages) is configured instead, and only its
    generated headers are built (`cmake_corpus`). The package version is the corpus's lineage.
    `sample`: compile only that many modules (`sample_names`), for a consumer that needs no more.
    `level`: the front-end optimization level (default DEFAULT_FLAGS', the vocabularies'; a policy's its own).
    """
    from workers import debsrc

    if package == "llvm-project":
        raise InputError("llvm-project is LLVM's git repository, not a Debian source package: "
                         "use `corpus llvm llvm-project` (or the Debian package llvm-toolchain-19)")
    tree = debsrc.fetch_source(package, workdir)
    r = debsrc.recipe(package)
    lineage = debsrc.lineage(tree)
    if r.cmake:
        from workers import cmake_corpus

        if lineage and debsrc.is_llvm(package):
            lineage["project"] = "llvm-project"
        return cmake_corpus.from_cmake(tree / r.cmake, out, toolchain, defines=r.cmake_defines, jobs=jobs,
                                       lineage=lineage, origin=f"debian:{package}:{tree.name}/{r.cmake}",
                                       shard=shard, sample=sample, include=tuple(include), level=level)
    jobs_ = debsrc.jobs(package, tree)
    if sample is not None:
        keep = sample_names((j.name for j in jobs_), sample)
        jobs_ = [j for j in jobs_ if j.name in keep]
        lineage = {**(lineage or {}), "sample": sample}
    return compile_jobs(jobs_, out, toolchain, jobs=jobs, source=f"debian:{package}:{tree.name}", shard=shard,
                        lineage=lineage, level=level)


def from_sources(src: Path, out: Path, toolchain: Toolchain, jobs: int | None = None,
                 flags: tuple[str, ...] = DEFAULT_FLAGS, shard: Shard | None = None,
                 level: str | None = None) -> Corpus:
    """Compile a directory of C/C++ sources, or a `compile_commands.json`, into a corpus (at `level`, if given,
    instead of each command's own)."""
    src = Path(src).absolute()
    if src.is_file() and src.name.endswith(".json"):
        return compile_jobs(jobs_from_compile_commands(src), out, toolchain, jobs=jobs, source=str(src), shard=shard,
                            level=level)
    if not src.is_dir():
        raise InputError(f"source {src} does not exist")
    if (src / "compile_commands.json").is_file():
        return from_sources(src / "compile_commands.json", out, toolchain, jobs, shard=shard, level=level)
    return compile_jobs(jobs_from_directory(src, flags), out, toolchain, jobs=jobs, source=str(src), shard=shard,
                        level=level)


def from_embedded_build(build: Path, out: Path, toolchain: Toolchain, jobs: int | None = None) -> Corpus:
    """Extract the bitcode a `-Xclang -fembed-bitcode=all` build left in its objects (mlgo-utils)."""
    build = Path(build).absolute()
    db = build / "compile_commands.json"
    if not db.is_file():
        raise InputError(f"{build} has no compile_commands.json (configure with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)")
    objcopy = toolchain.path("llvm-objcopy")
    with atomic_dir(out, DESCRIPTION) as tmp:
        argv = [
            sys.executable, "-m", "mlgo.corpus.extract_ir",
            f"--input={db}", "--input_type=json", f"--output_dir={tmp}",
            f"--llvm_objcopy_path={objcopy}", f"--obj_base_dir={build}",
        ]
        if jobs:
            argv.append(f"--num_workers={jobs}")
        p = subprocess.run(argv, capture_output=True, text=True, cwd=build)
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["no output"])[-1]
            raise FarmError(f"extract_ir failed on {build}: {last}")
        data = loads((tmp / DESCRIPTION).read_bytes(), f"extract_ir's {DESCRIPTION}")
        names = sorted(data.get("modules", []))
        if not names:
            raise InputError(f"no embedded bitcode found in {build} (was it built with -Xclang -fembed-bitcode=all?)")
        data["source"] = str(build)
        (tmp / DESCRIPTION).write_text(dumps(data))
        (tmp / SKIPPED).write_text("[]\n")
    return load(out)
