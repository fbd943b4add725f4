"""A corpus: IR modules with their compile commands, in LLVM's `corpus_description.json` layout.

Sources: a directory of C/C++ files or a `compile_commands.json` (compiled here to bitcode),
a Debian source package (see `debsrc`), a CMake project configured but not built (see
`cmake_corpus`; LLVM's own code through `llvm_source`), or a build made with
`-Xclang -fembed-bitcode=all` (extracted with mlgo-utils' `extract_ir`).

A corpus records its lineage (the git commit or the Debian package version its sources came
from) in the description, so every dataset made from it can say which code it learned from.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shlex
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from farm.atomic import atomic_dir
from farm.errors import FarmError, InputError, ToolError
from farm.jsonio import dumps, load_file, loads
from farm.toolchain import Toolchain
from workers.parallel import run_all

if TYPE_CHECKING:
    from workers.shards import Shard

log = logging.getLogger(__name__)

DESCRIPTION = "corpus_description.json"
SKIPPED = "skipped.json"
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx")
#: Pre-optimization IR that `opt` can still optimize at any level.
DEFAULT_FLAGS = ("-O2", "-Xclang", "-disable-llvm-passes", "-g0")


@dataclass(frozen=True)
class Module:
    name: str
    bitcode: Path


@dataclass
class Corpus:
    path: Path
    modules: list[Module]
    skipped: list[dict[str, str]] = field(default_factory=list)
    origin: str = ""  # where its sources came from (`debian:zlib:zlib-1.2.13`, a directory, a build)
    #: The revision of its sources: git commit, or Debian package and version (None when unknown).
    lineage: dict[str, Any] | None = None

    @property
    def digest(self) -> str:
        """sha256 over module names and bitcode contents: the corpus identity."""
        return digest_of((m.name, hashlib.sha256(m.bitcode.read_bytes()).hexdigest()) for m in self.modules)

    def describe(self) -> dict[str, Any]:
        """What a dataset manifest records about the corpus it was made from."""
        return {"digest": self.digest, "modules": len(self.modules), "source": self.origin, "lineage": self.lineage}


def digest_of(modules: Iterable[tuple[str, str]]) -> str:
    """The corpus digest from (name, sha256 hex of its bitcode) in name order; a sharded run's merge
    computes it from its shards' lists, so it is the digest of the whole corpus."""
    h = hashlib.sha256()
    for name, sha in modules:
        h.update(name.encode() + b"\0" + bytes.fromhex(sha))
    return h.hexdigest()


def load(path: Path) -> Corpus:
    """Read a corpus directory; fail with one line if it is missing or empty."""
    path = Path(path)
    desc = path / DESCRIPTION
    if not desc.is_file():
        raise InputError(f"{path} is not a corpus: no {DESCRIPTION}")
    data = load_file(desc)
    names = data.get("modules") if isinstance(data, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InputError(f"{desc}: no 'modules' list of names")
    sharded = bool(isinstance(data, dict) and data.get("shard"))  # a shard's share of a corpus may be empty
    if not names and not sharded:
        raise InputError(f"corpus {path} is empty: no modules")
    skipped = load_file(path / SKIPPED) if (path / SKIPPED).is_file() else []
    unnamable = [n for n in names if not _utf8(n)]
    skipped = [*skipped, *({"module": _printable(n), "stage": "corpus",
                            "reason": "module name is not valid UTF-8"} for n in unnamable)]
    names = [n for n in names if _utf8(n)]
    if not names and not sharded:
        raise InputError(f"corpus {path}: no module has a UTF-8 name")
    modules = [Module(n, path / f"{n}.bc") for n in sorted(names)]
    missing = [m.name for m in modules if not m.bitcode.is_file()]
    if missing:
        raise InputError(f"corpus {path}: {len(missing)} module(s) without bitcode, first {missing[0]}.bc")
    lineage = data.get("lineage")
    if lineage is not None and not isinstance(lineage, dict):
        raise InputError(f"{desc}: 'lineage' must be an object or null")
    return Corpus(path, modules, skipped, str(data.get("source", "")), lineage)


@dataclass(frozen=True)
class CompileJob:
    name: str
    source: Path
    args: tuple[str, ...]  # clang arguments, without -c/-o/input
    directory: Path


def jobs_from_directory(src: Path, flags: tuple[str, ...] = DEFAULT_FLAGS) -> list[CompileJob]:
    """One job per C/C++ file under `src`, with the file's and the tree's directories included."""
    files = sorted(
        p for p in src.rglob("*")
        if p.suffix in SOURCE_SUFFIXES and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(src).parts)  # .pc/ (quilt), .git/
    )
    return [
        CompileJob(
            f.relative_to(src).as_posix(),
            f,
            (*flags, f"-I{f.parent}", f"-I{src}"),
            f.parent,
        )
        for f in files
    ]


#: Options whose value is the next argument and that only name outputs (dropped with their value).
_OUTPUT_OPTIONS = ("-o", "-MF", "-MT", "-MQ", "-MJ")
#: Terminal colours in diagnostics (LLVM's CMake adds them under Ninja): a skip reason is JSON text, not a terminal.
_COLOUR_OPTIONS = ("-fdiagnostics-color", "-fcolor-diagnostics")


def _compile_flags(argv: list[str], directory: Path, source: Path) -> list[str]:
    """A database command's flags without the compiler, `-c`, outputs, dependency options, colours and the source."""
    args, skip = [], False
    for a in argv[1:]:
        if skip:
            skip = False
        elif a in _OUTPUT_OPTIONS:
            skip = True
        elif not (a == "-c" or a.startswith(("-o", "-M", *_COLOUR_OPTIONS)) or _is_source(a, directory, source)):
            args.append(a)
    return args


def _is_source(arg: str, directory: Path, source: Path) -> bool:
    return not arg.startswith("-") and (directory / arg).resolve() == source


def jobs_from_compile_commands(path: Path) -> list[CompileJob]:
    """Jobs from a compilation database, keeping each command's flags.

    Entries that repeat one command (same file, directory and flags, as a database merged from
    several builds does) are one module; the same file with other flags is another (`NAME.2`).
    """
    entries = load_file(path, "compilation database")
    if not isinstance(entries, list):
        raise InputError(f"{path}: a compilation database is a JSON list of entries")
    root = path.parent
    jobs, seen, commands = [], {}, set()
    for i, e in enumerate(entries):
        if not (isinstance(e, dict) and isinstance(e.get("file"), str)
                and isinstance(e.get("arguments") or e.get("command"), list | str)):
            raise InputError(f"{path}: entry {i} needs 'file' and 'arguments' or 'command'")
        try:
            argv = e.get("arguments") or shlex.split(e["command"])
        except ValueError as err:
            raise InputError(f"{path}: entry {i}: cannot split its command: {err}") from None
        directory = Path(e.get("directory", root))
        source = (directory / e["file"]).resolve()
        if source.suffix not in SOURCE_SUFFIXES:
            continue
        if not directory.is_dir():  # clang runs there: a stale or moved database fails here, not per TU
            raise InputError(f"{path}: entry {i}: its directory {directory} does not exist")
        args = _compile_flags([str(a) for a in argv], directory, source)
        command = (source, directory, tuple(args))
        if command in commands:
            continue
        commands.add(command)
        try:
            name = source.relative_to(root.resolve()).as_posix()
        except ValueError:
            name = source.as_posix().lstrip("/")
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name = f"{name}.{seen[name]}"
        jobs.append(CompileJob(name, source, (*args, "-Xclang", "-disable-llvm-passes", "-g0"), directory))
    return jobs


def _not_utf8(job: CompileJob) -> str | None:
    """Why `job` cannot be a module: LLVM's corpus description and `.cmd` files are UTF-8 text.

    A file name with bytes that are not UTF-8 (Python carries them as surrogate escapes) can be
    compiled, but not described; it is skipped and listed under a printable form of its name.
    """
    if _utf8("\0".join((job.name, str(job.source), *job.args))):
        return None
    return "file name or path is not valid UTF-8 (a corpus description is UTF-8 JSON)"


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _printable(name: str) -> str:
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def compile_jobs(jobs_: list[CompileJob], out: Path, toolchain: Toolchain, *,
                 jobs: int | None = None, timeout: float = 300, source: str = "",
                 shard: Shard | None = None, lineage: dict[str, Any] | None = None) -> Corpus:
    """Compile every job to bitcode in parallel; failures are skipped and listed.

    Progress is logged now and then: a builder step that stays silent longer than its timeout is
    killed, and LLVM's corpus compiles for longer than that on a small worker. `lineage` goes
    into the description as it is.

    With `shard`, only the jobs whose module name belongs to it (workers/shards.py); the corpus
    records the shard, and may then be empty: whether any module compiled is the merge's question.
    """
    if not jobs_:
        raise InputError(f"no C/C++ sources found in {source or 'the input'}")
    if shard is not None:
        jobs_ = [j for j in jobs_ if shard.owns(j.name)]
    unnamable = {_printable(j.name): why for j in jobs_ if (why := _not_utf8(j))}
    jobs_ = [j for j in jobs_ if not _not_utf8(j)]
    source = _printable(source)
    toolchain.check("clang")
    with atomic_dir(out, DESCRIPTION) as tmp:
        def one(job: CompileJob) -> str | None:
            """Compile one TU; through the worker's ccache unless caching is off (same bytes either way)."""
            from workers import cache

            bc = tmp / f"{job.name}.bc"
            bc.parent.mkdir(parents=True, exist_ok=True)
            args = [*job.args, "-c", "-emit-llvm", str(job.source), "-o", str(bc)]
            compile_cache = cache.for_compile(toolchain)
            try:
                if compile_cache is None:
                    toolchain.run("clang", args, timeout=timeout, cwd=job.directory, subject=job.name)
                else:
                    compile_cache.compile(toolchain, args, bc, timeout=timeout, cwd=job.directory, subject=job.name)
            except ToolError as e:
                bc.unlink(missing_ok=True)
                return str(e)
            (tmp / f"{job.name}.cmd").write_bytes("\0".join(["clang", *args[:-2]]).encode())
            return None

        failed: dict[str, str] = {}
        for job, err in run_all(one, jobs_, jobs=jobs, desc="corpus: translation units compiled", is_failure=bool):
            if err:
                failed[job.name] = err
        names = sorted(j.name for j in jobs_ if j.name not in failed)
        failed |= unnamable
        if not names and shard is None:
            first = next(iter(sorted(failed.items())))
            raise InputError(f"no module of {source or 'the corpus'} compiled; first failure: {first[1]}")
        skipped = [{"module": n, "reason": failed[n]} for n in sorted(failed)]
        _write_description(tmp, names, source, skipped, shard, lineage)
    return load(out)


def _write_description(root: Path, names: list[str], source: str, skipped: list[dict[str, str]],
                       shard: Shard | None = None, lineage: dict[str, Any] | None = None) -> None:
    desc = {"modules": names, "has_thinlto": False, "source": source, "lineage": lineage}
    if shard is not None:
        desc["shard"] = str(shard)
    (root / DESCRIPTION).write_text(dumps(desc))
    (root / SKIPPED).write_text(json.dumps(skipped, indent=2) + "\n")


def sample_names(names: Iterable[str], most: int | None) -> set[str]:
    """At most `most` of `names`, chosen by the sha256 of each name: the same corpus gives the same sample,
    and a sample taken before compiling is the sample taken after (policyhost/warmstart.py)."""
    names = list(names)
    if most is None or len(names) <= most:
        return set(names)
    return set(sorted(names, key=lambda n: hashlib.sha256(n.encode()).hexdigest())[:most])


def from_debian(package: str, out: Path, toolchain: Toolchain, workdir: Path, jobs: int | None = None,
                shard: Shard | None = None, sample: int | None = None, include: Iterable[str] = ()) -> Corpus:
    """Fetch a Debian source package and compile the sources its recipe names.

    A recipe that names a CMake project (LLVM's packages) is configured instead, and only its
    generated headers are built (`cmake_corpus`). The package version is the corpus's lineage.
    `sample`: compile only that many modules (`sample_names`), for a consumer that needs no more.
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
                                       shard=shard, sample=sample, include=tuple(include))
    jobs_ = debsrc.jobs(package, tree)
    if sample is not None:
        keep = sample_names((j.name for j in jobs_), sample)
        jobs_ = [j for j in jobs_ if j.name in keep]
        lineage = {**(lineage or {}), "sample": sample}
    return compile_jobs(jobs_, out, toolchain, jobs=jobs, source=f"debian:{package}:{tree.name}", shard=shard,
                        lineage=lineage)


def from_sources(src: Path, out: Path, toolchain: Toolchain, jobs: int | None = None,
                 flags: tuple[str, ...] = DEFAULT_FLAGS, shard: Shard | None = None) -> Corpus:
    """Compile a directory of C/C++ sources, or a `compile_commands.json`, into a corpus."""
    src = Path(src).absolute()
    if src.is_file() and src.name.endswith(".json"):
        return compile_jobs(jobs_from_compile_commands(src), out, toolchain, jobs=jobs, source=str(src), shard=shard)
    if not src.is_dir():
        raise InputError(f"source {src} does not exist")
    if (src / "compile_commands.json").is_file():
        return from_sources(src / "compile_commands.json", out, toolchain, jobs, shard=shard)
    return compile_jobs(jobs_from_directory(src, flags), out, toolchain, jobs=jobs, source=str(src), shard=shard)


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
