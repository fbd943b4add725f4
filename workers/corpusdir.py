"""A corpus directory: its modules and their compile commands in LLVM's `corpus_description.json` layout,
the compile jobs that fill it, and which shard of a split run a module belongs to.

Below workers/corpus.py (where a corpus comes from: sources, a Debian package, a CMake project, an
embedded-bitcode build) and the modules it calls (debsrc, cmake_corpus, shards), so none of them
imports another through it (tests/test_layout.py: no file circles). workers/corpus.py re-exports it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from farm.atomic import atomic_dir
from farm.errors import InputError, ToolError
from farm.jsonio import dumps, load_file
from farm.toolchain import Toolchain
from workers.parallel import run_all

log = logging.getLogger(__name__)

DESCRIPTION = "corpus_description.json"
SKIPPED = "skipped.json"
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx")
#: The front-end optimization levels a corpus can be compiled at (clang's `-O` spellings without the dash).
LEVELS = ("O0", "O1", "O2", "O3", "Os", "Oz")
#: Pre-optimization IR for the vocabularies: an `-O2` front end, whose IR `opt` can still optimize at any level
#: (the triplet datasets sample O0..O3 from it for IR diversity). Not for a policy of one level: clang writes a
#: level's function attributes in the front end (`-Oz`: `minsize optsize` on every function) and `clang -Oz -c x.bc`
#: keeps the ones the bitcode has, so `-O2` bitcode optimized at `-Oz` is not the `-Oz` users build. A policy's
#: corpus is compiled at its own level (`compile_jobs(level=...)`, policytrain/units.py LEVEL).
DEFAULT_FLAGS = ("-O2", "-Xclang", "-disable-llvm-passes", "-g0")
_OPT_FLAG = re.compile(r"-O([0-3sz]|fast|g)?")


@dataclass(frozen=True)
class Module:
    name: str
    bitcode: Path
    #: its ThinLTO index (`NAME.thinlto.bc`) in a ThinLTO corpus (workers/thinlto.py), else None
    index: Path | None = None


@dataclass
class Corpus:
    path: Path
    modules: list[Module]
    skipped: list[dict[str, str]] = field(default_factory=list)
    origin: str = ""  # where its sources came from (`debian:zlib:zlib-1.2.13`, a directory, a build)
    #: The revision of its sources: git commit, or Debian package and version (None when unknown).
    lineage: dict[str, Any] | None = None
    #: The front-end optimization level its modules were compiled at (`Oz`, ...; None: mixed or unknown).
    level: str | None = None

    @property
    def digest(self) -> str:
        """sha256 over module names and bitcode contents: the corpus identity."""
        return digest_of((m.name, hashlib.sha256(m.bitcode.read_bytes()).hexdigest()) for m in self.modules)

    def describe(self) -> dict[str, Any]:
        """What a dataset manifest records about the corpus it was made from."""
        return {"digest": self.digest, "modules": len(self.modules), "source": self.origin, "lineage": self.lineage,
                "level": self.level}


def level_of(args: Iterable[str]) -> str:
    """The optimization level a clang command line compiles at: its last `-O` flag wins, as in clang (`-O` alone is
    `-O1`, `-Ofast` counts as `-O3`, `-Og` as `-O1`); none is `-O0`."""
    level = "O0"
    for a in args:
        m = _OPT_FLAG.fullmatch(a)
        if m:
            level = {None: "O1", "g": "O1", "fast": "O3"}.get(m.group(1), f"O{m.group(1)}")
    return level


def at_level(args: Iterable[str], level: str) -> tuple[str, ...]:
    """A command line's arguments compiling at `level` instead of its own: every `-O` flag dropped, `-LEVEL` first."""
    if level not in LEVELS:
        raise InputError(f"unknown optimization level {level!r}: use one of {', '.join(LEVELS)}")
    return (f"-{level}", *(a for a in args if not _OPT_FLAG.fullmatch(a)))


def check_level(corpus: Corpus, level: str, use: str) -> None:
    """InputError (one line) unless every module of `corpus` came from a front end at `level`: `use` (a policy's
    training, a held-out table, a comparison) measures the code that level's users build, and a module compiled by
    another front end carries other function attributes (see DEFAULT_FLAGS)."""
    if corpus.level == level:
        return
    found = f"an -{corpus.level}" if corpus.level else "a mixed or unknown"
    raise InputError(f"corpus {corpus.path} was compiled by {found} front end, but {use} needs -{level} bitcode "
                     f"(the front end writes the level's function attributes): rebuild it with --level {level}")


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
    thin = bool(isinstance(data, dict) and data.get("has_thinlto"))
    modules = [Module(n, path / f"{n}.bc", path / f"{n}.thinlto.bc" if thin else None) for n in sorted(names)]
    unindexed = [m.name for m in modules if m.index is not None and not m.index.is_file()]
    if unindexed:
        raise InputError(f"corpus {path}: a ThinLTO corpus whose module {unindexed[0]} has no index "
                         f"({unindexed[0]}.thinlto.bc)")
    missing = [m.name for m in modules if not m.bitcode.is_file()]
    if missing:
        raise InputError(f"corpus {path}: {len(missing)} module(s) without bitcode, first {missing[0]}.bc")
    lineage = data.get("lineage")
    if lineage is not None and not isinstance(lineage, dict):
        raise InputError(f"{desc}: 'lineage' must be an object or null")
    level = data["level"] if "level" in data else _recorded_level(modules)
    if level is not None and level not in LEVELS:
        raise InputError(f"{desc}: 'level' must be one of {', '.join(LEVELS)} or null, not {level!r}")
    return Corpus(path, modules, skipped, str(data.get("source", "")), lineage, level)


def _recorded_level(modules: list[Module]) -> str | None:
    """The level a corpus without a recorded one was compiled at, from its modules' `.cmd` files (LLVM's layout:
    the clang arguments, NUL-separated, as extract_ir and older farm corpora write them); None when any module has
    none or they differ."""
    levels = set()
    for m in modules:
        cmd = m.bitcode.with_suffix(".cmd")
        if not cmd.is_file():
            return None
        levels.add(level_of(cmd.read_bytes().decode("utf-8", "replace").split("\0")))
        if len(levels) > 1:
            return None
    return levels.pop() if levels else None


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
                 shard: Shard | None = None, lineage: dict[str, Any] | None = None,
                 level: str | None = None) -> Corpus:
    """Compile every job to bitcode in parallel; failures are skipped and listed.

    `level`: every job compiled at that front-end level instead of its own (`at_level`), as ml-compiler-opt replays
    a module's own command line at the level a policy is trained for. The description records the jobs' common level
    (None when they differ), so a consumer of one level can refuse a corpus of another (`check_level`).

    Progress is logged now and then: a builder step that stays silent longer than its timeout is
    killed, and LLVM's corpus compiles for longer than that on a small worker. `lineage` goes
    into the description as it is.

    With `shard`, only the jobs whose module name belongs to it (workers/shards.py); the corpus
    records the shard, and may then be empty: whether any module compiled is the merge's question.
    """
    if not jobs_:
        raise InputError(f"no C/C++ sources found in {source or 'the input'}")
    if level is not None:
        jobs_ = [replace(j, args=at_level(j.args, level)) for j in jobs_]
    levels = {level_of(j.args) for j in jobs_}
    common = levels.pop() if len(levels) == 1 else None
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
        _write_description(tmp, names, source, skipped, shard, lineage, common)
    return load(out)


def _write_description(root: Path, names: list[str], source: str, skipped: list[dict[str, str]],
                       shard: Shard | None = None, lineage: dict[str, Any] | None = None,
                       level: str | None = None) -> None:
    desc = {"modules": names, "has_thinlto": False, "source": source, "lineage": lineage, "level": level}
    if shard is not None:
        desc["shard"] = str(shard)
    (root / DESCRIPTION).write_text(dumps(desc))
    (root / SKIPPED).write_text(json.dumps(skipped, indent=2) + "\n")


def sample_names(names: Iterable[str], most: int | None) -> set[str]:
    """At most `most` of `names`, chosen by the sha256 of each name: the same corpus gives the same sample,
    and a sample taken before compiling is the sample taken after (policytrain/warmstart.py)."""
    names = list(names)
    if most is None or len(names) <= most:
        return set(names)
    return set(sorted(names, key=lambda n: hashlib.sha256(n.encode()).hexdigest())[:most])


MAX_SHARDS = 1024
_SHARD = re.compile(r"([1-9][0-9]{0,3})/([1-9][0-9]{0,3})")


def shard_of(name: str, count: int) -> int:
    """The shard (1..count) module `name` belongs to: a stable hash, the same on every machine and run."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count` (1-based, written `I/N`)."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        m = _SHARD.fullmatch(text)
        if not m or not 1 <= int(m[1]) <= int(m[2]) <= MAX_SHARDS:
            raise InputError(f"shard {text!r}: use I/N with 1 <= I <= N <= {MAX_SHARDS}")
        return cls(int(m[1]), int(m[2]))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def key(self) -> str:
        """Its folder under the run: `{i}-of-{N}`."""
        return f"{self.index}-of-{self.count}"

    def owns(self, name: str) -> bool:
        return shard_of(name, self.count) == self.index
