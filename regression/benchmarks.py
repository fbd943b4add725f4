"""Benchmark programs as data: where the sources come from, how to build them, what to run.

A benchmark is a real program (the Lua interpreter, zlib's minigzip, bzip2) built from its
Debian source package, or a local directory of C files. Building is described, not scripted:
which sources make the binary, with which preprocessor flags and libraries; `regression.build`
compiles each source with the variant under test and links the objects. Workloads name the
arguments and stdin of each measured execution; `{scripts}` is this package's `scripts/`
folder (Lua scripts shipped with the farm) and `{inputs}` the prepared input directory.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from farm.errors import InputError

SCRIPTS = Path(__file__).parent / "scripts"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Workload:
    """One measured execution: arguments (templates) and an optional stdin file."""

    name: str
    args: tuple[str, ...] = ()
    stdin: str | None = None

    def argv(self, binary: Path, inputs: Path) -> list[str]:
        return [str(binary), *(_fill(a, inputs) for a in self.args)]

    def stdin_path(self, inputs: Path) -> Path | None:
        return Path(_fill(self.stdin, inputs)) if self.stdin else None


@dataclass(frozen=True)
class Benchmark:
    """A program built from `sources` (globs under the source root) and its workloads."""

    name: str
    binary: str
    sources: tuple[str, ...]
    workloads: tuple[Workload, ...]
    package: str | None = None  # Debian source package; None: `local_dir`
    local_dir: Path | None = None
    exclude: tuple[str, ...] = ()
    #: Flags of this benchmark on top of the package's recipe (workers.debsrc.RECIPES).
    cppflags: tuple[str, ...] = ()
    libs: tuple[str, ...] = ()
    #: Writes input files into the given directory, given the source tree (deterministic).
    make_inputs: Callable[[Path, Path], None] | None = field(default=None, compare=False)

    def source_files(self, root: Path) -> list[Path]:
        """The C files that make the binary, sorted, relative paths resolved under `root`."""
        files: set[Path] = set()
        for pattern in self.sources:
            files.update(p for p in root.glob(pattern) if p.is_file())
        for pattern in self.exclude:
            files.difference_update(root.glob(pattern))
        if not files:
            raise InputError(f"benchmark {self.name}: no sources match {', '.join(self.sources)} under {root}")
        return sorted(files)

    def compile_flags(self, root: Path) -> list[str]:
        """The package recipe's defines, then the benchmark's own (`{src}` is the source root)."""
        from workers.debsrc import recipe

        package_flags = recipe(self.package).flags if self.package else ()
        return [f.replace("{src}", str(root)) for f in (*package_flags, *self.cppflags)]


def _fill(template: str, inputs: Path) -> str:
    return template.replace("{scripts}", str(SCRIPTS)).replace("{inputs}", str(inputs))


def _source_text(root: Path, size: int) -> bytes:
    """Real text to compress: the package's own C sources and headers, concatenated in order."""
    files = sorted(p for p in root.rglob("*") if p.suffix in (".c", ".h") and p.is_file())
    chunks, total = [], 0
    while files and total < size:
        for p in files:
            data = p.read_bytes()
            chunks.append(data)
            total += len(data)
            if total >= size:
                break
    return b"".join(chunks)[:size]


def _compression_inputs(size: int) -> Callable[[Path, Path], None]:
    def make(root: Path, inputs: Path) -> None:
        data = _source_text(root, size)
        (inputs / "input.txt").write_bytes(data)
        (inputs / "input.txt.gz").write_bytes(gzip.compress(data, compresslevel=6, mtime=0))

    return make


LUA_SCRIPTS = ("fib.lua", "strings.lua", "tables.lua", "nbody.lua")

BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in (
        Benchmark(
            name="lua",
            package="lua5.4",
            binary="lua",
            sources=("src/*.c",),
            exclude=("src/luac.c",),
            # Lua seeds its string hash from time(NULL) and addresses; a fixed seed makes the
            # callgrind instruction counts of the same binary repeat exactly.
            cppflags=("-Dluai_makeseed(L)=0u",),
            libs=("-lm", "-ldl", "-Wl,-E"),
            workloads=tuple(Workload(s.removesuffix(".lua"), (f"{{scripts}}/{s}",)) for s in LUA_SCRIPTS),
        ),
        Benchmark(
            name="zlib",
            package="zlib",
            binary="minigzip",
            sources=("*.c", "test/minigzip.c"),
            cppflags=("-I{src}",),
            workloads=(
                Workload("compress", ("-6",), "{inputs}/input.txt"),
                Workload("decompress", ("-d",), "{inputs}/input.txt.gz"),
            ),
            make_inputs=_compression_inputs(2_000_000),
        ),
        Benchmark(
            name="bzip2",
            package="bzip2",
            binary="bzip2",
            sources=("blocksort.c", "huffman.c", "crctable.c", "randtable.c", "compress.c", "decompress.c",
                     "bzlib.c", "bzip2.c"),
            workloads=(Workload("compress", ("-c", "-9"), "{inputs}/input.txt"),),
            make_inputs=_compression_inputs(1_000_000),
        ),
    )
}


def local_benchmark(directory: Path, args: tuple[str, ...] = (), name: str | None = None) -> Benchmark:
    """A benchmark from a local directory of C files with one `main`, run once with `args`."""
    directory = Path(directory).absolute()
    if not directory.is_dir():
        raise InputError(f"benchmark directory {directory} does not exist")
    name = name or directory.name
    if not _NAME.match(name):
        raise InputError(f"benchmark name {name!r} must be letters, digits, '.', '_' or '-'")
    return Benchmark(name=name, binary=name, sources=("*.c",), local_dir=directory,
                     libs=("-lm",), workloads=(Workload("run", tuple(args)),))


def lookup(name: str) -> Benchmark:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise InputError(f"unknown benchmark {name!r}: known are {', '.join(sorted(BENCHMARKS))}") from None


def fetch(bench: Benchmark, cache: Path) -> Path:
    """The benchmark's source tree: the local directory, or the Debian package (cached under `cache`)."""
    if bench.local_dir is not None:
        return bench.local_dir
    from workers.debsrc import fetch_source

    return fetch_source(bench.package, Path(cache) / bench.package)


def prepare_inputs(bench: Benchmark, root: Path, inputs: Path) -> str:
    """Write the workload inputs under `inputs`; return a digest identifying them."""
    inputs.mkdir(parents=True, exist_ok=True)
    if bench.make_inputs is not None:
        bench.make_inputs(root, inputs)
    h = hashlib.sha256()
    for p in sorted(inputs.iterdir()):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]
