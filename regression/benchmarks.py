"""Benchmark programs as data: where the sources come from, how to build them, what to run.

A benchmark is a real program (the Lua interpreter, zlib's minigzip, bzip2; in C++, GNU gperf and
the MiniSat solver) built from its Debian source package, or a local directory of C files. Building
is described, not scripted: which sources make the binary, with which preprocessor flags and
libraries; `regression.build` compiles each source with the variant under test (a `.cc`/`.cpp`
source as C++) and links the objects (with `clang++`, so libstdc++, when any source is C++).
Workloads name the arguments and stdin of each measured execution and the exit status a run
answers with; `{scripts}` is this package's `scripts/` folder (Lua scripts shipped with the farm)
and `{inputs}` the prepared input directory.
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
    """One measured execution: arguments (templates), an optional stdin file, and the exit status of a run that
    did its work (0, but a SAT solver answers 10 for satisfiable and 20 for unsatisfiable)."""

    name: str
    args: tuple[str, ...] = ()
    stdin: str | None = None
    status: int = 0

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
        """The source files (C, or C++ by their suffix) that make the binary, sorted, resolved under `root`."""
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


def _copied(*paths: str) -> Callable[[Path, Path], None]:
    """Inputs that ship in the source tree: each file copied under its own name."""

    def make(root: Path, inputs: Path) -> None:
        for rel in paths:
            (inputs / Path(rel).name).write_bytes((root / rel).read_bytes())

    return make


def _dimacs(variables: int, clauses: list[list[int]]) -> str:
    return f"p cnf {variables} {len(clauses)}\n" + "".join(" ".join(map(str, c)) + " 0\n" for c in clauses)


def pigeonhole(holes: int) -> str:
    """The pigeonhole principle for `holes` + 1 pigeons as CNF (DIMACS): unsatisfiable, and hard for resolution."""
    pigeons = holes + 1

    def var(p: int, h: int) -> int:
        return p * holes + h + 1

    clauses = [[var(p, h) for h in range(holes)] for p in range(pigeons)]
    clauses += [[-var(p, h), -var(q, h)] for h in range(holes) for p in range(pigeons) for q in range(p + 1, pigeons)]
    return _dimacs(pigeons * holes, clauses)


def planted_3sat(variables: int, clauses: int, seed: int) -> str:
    """Random 3-SAT (DIMACS) with a planted solution, so satisfiable: clauses drawn by a 64-bit LCG (the same on
    every Python), each kept only when the hidden assignment satisfies it."""
    state = seed

    def draw(n: int) -> int:
        nonlocal state
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        return (state >> 33) % n

    hidden = [draw(2) for _ in range(variables)]
    kept: list[list[int]] = []
    while len(kept) < clauses:
        vs: set[int] = set()
        while len(vs) < 3:
            vs.add(draw(variables) + 1)
        clause = [v if draw(2) else -v for v in sorted(vs)]
        if any((lit > 0) == bool(hidden[abs(lit) - 1]) for lit in clause):
            kept.append(clause)
    return _dimacs(variables, kept)


def _sat_inputs(root: Path, inputs: Path) -> None:
    (inputs / "pigeonhole-8.cnf").write_text(pigeonhole(8))
    (inputs / "planted-350.cnf").write_text(planted_3sat(350, 1491, 20261201))


LUA_SCRIPTS = ("fib.lua", "strings.lua", "tables.lua", "nbody.lua")
#: gperf's own test keyword files, and the options its tests/Makefile.in gives them; `-m N` makes it search N times
#: harder for a smaller table (most of a workload's instructions).
GPERF_KEYWORDS = ("tests/languages.gperf", "tests/charsets.gperf", "tests/cplusplus.gperf")

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
        # C++: the gperf program (src/ with lib/'s libgp.a; lib/getopt*.c are empty with glibc) generating perfect
        # hash functions. Its output starts with its command line, argv[0] included, and each variant's binary
        # has its own path, so the code goes to /dev/null: stdout (empty) is the same for both builds.
        Benchmark(
            name="gperf",
            package="gperf",
            binary="gperf",
            sources=("src/*.cc", "lib/getline.cc", "lib/hash.cc"),
            workloads=(
                Workload("languages", ("-m", "5", "-C", "-E", "-G", "-I", "-t", "--output-file=/dev/null",
                                       "{inputs}/languages.gperf")),
                Workload("charsets", ("-m", "2", "-C", "-E", "-G", "-I", "-t", "--output-file=/dev/null",
                                      "{inputs}/charsets.gperf")),
                Workload("cplusplus", ("-m", "20", "-L", "C", "-F", ", 0, 0", "-j1", "-g", "-o", "-t", "-N",
                                       "is_reserved_word", "-k1,4,7,$", "--output-file=/dev/null",
                                       "{inputs}/cplusplus.gperf")),
            ),
            make_inputs=_copied(*GPERF_KEYWORDS),
        ),
        # C++: the minisat program (simp/Main.cc with libminisat's sources: SatELite preprocessing, then CDCL
        # search) on two generated problems; it answers in its exit status (10 SAT, 20 UNSAT) and, given
        # /dev/stdout as its result file, prints the model, so both builds must find the same one.
        Benchmark(
            name="minisat",
            package="minisat2",
            binary="minisat",
            sources=("minisat/core/Solver.cc", "minisat/simp/*.cc", "minisat/utils/*.cc"),
            libs=("-lz",),
            workloads=(
                Workload("pigeonhole", ("-verb=0", "{inputs}/pigeonhole-8.cnf", "/dev/stdout"), status=20),
                Workload("planted", ("-verb=0", "{inputs}/planted-350.cnf", "/dev/stdout"), status=10),
            ),
            make_inputs=_sat_inputs,
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
