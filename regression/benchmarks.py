"""Benchmark programs as data: where the sources come from, how to build them, what to run.

A benchmark is a real program (the Lua interpreter, zlib's minigzip, bzip2; in C++, GNU gperf and
the MiniSat solver) built from its Debian source package, or a local directory of C files. Building
is described, not scripted: which sources make the binary, with which preprocessor flags and
libraries; `regression.build` compiles each source with the variant under test (a `.cc`/`.cpp`
source as C++) and links the objects (with `clang++`, so libstdc++, when any source is C++).
Workloads name the arguments and stdin of each measured execution and the exit status a run
answers with; `{scripts}` is this package's `scripts/` folder (Lua scripts shipped with the farm)
and `{inputs}` the prepared input directory.

A PGO build (regression/pgo.py) trains on other runs than it is measured on: each benchmark's `training`
workloads read their own inputs (`make_training` writes them; `{inputs}` is then the training directory), so a
profile never saw the very inputs callgrind counts, as a user's profile never saw the user's next input. Both
sets are deterministic and named by their sha256 in the run's lineage (`input_digest`).
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

    def files(self, inputs: Path) -> list[Path]:
        """The files the run reads: its stdin and every argument naming a prepared input or a shipped script."""
        named = [Path(_fill(a, inputs)) for a in self.args if "{inputs}" in a or "{scripts}" in a]
        return [*([self.stdin_path(inputs)] if self.stdin else []), *named]


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
    #: PGO training runs of the instrumented build (regression/pgo.py): never the measured workloads
    training: tuple[Workload, ...] = ()
    #: Writes the training runs' inputs into the given directory, given the source tree (deterministic).
    make_training: Callable[[Path, Path], None] | None = field(default=None, compare=False)

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


def _source_text(root: Path, size: int, reverse: bool = False) -> bytes:
    """Real text to compress: the package's own C sources and headers, concatenated in order (`reverse`: the
    opposite order, other bytes for the PGO training runs)."""
    files = sorted((p for p in root.rglob("*") if p.suffix in (".c", ".h") and p.is_file()), reverse=reverse)
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


def _compression_training(size: int, suffix: str) -> Callable[[Path, Path], None]:
    """`train.txt` and itself compressed (`train.txt.gz` by gzip, `train.txt.bz2` by bzip2) for a decompression run."""
    import bz2

    def make(root: Path, inputs: Path) -> None:
        data = _source_text(root, size, reverse=True)
        (inputs / "train.txt").write_bytes(data)
        packed = gzip.compress(data, compresslevel=9, mtime=0) if suffix == ".gz" else bz2.compress(data, 9)
        (inputs / f"train.txt{suffix}").write_bytes(packed)

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


def _sat_training(root: Path, inputs: Path) -> None:
    """Smaller problems of both kinds, other seeds: a profile of the solver's UNSAT and SAT paths."""
    (inputs / "pigeonhole-6.cnf").write_text(pigeonhole(6))
    (inputs / "planted-200.cnf").write_text(planted_3sat(200, 852, 19871104))


LUA_SCRIPTS = ("fib.lua", "strings.lua", "tables.lua", "nbody.lua")
#: gperf's own test keyword files, and the options its tests/Makefile.in gives them; `-m N` makes it search N times
#: harder for a smaller table (most of a workload's instructions).
GPERF_KEYWORDS = ("tests/languages.gperf", "tests/charsets.gperf", "tests/cplusplus.gperf")
#: gperf's other test keyword files: the training runs' (as tests/Makefile.in runs them)
GPERF_TRAINING = ("tests/c.gperf", "tests/java.gperf", "tests/smtp.gperf")
#: Lua scripts of the PGO training runs: other programs than the measured ones, over the same interpreter paths
LUA_TRAINING = ("train-text.lua", "train-objects.lua")

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
            training=tuple(Workload(s.removesuffix(".lua"), (f"{{scripts}}/{s}",)) for s in LUA_TRAINING),
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
            training=(
                Workload("compress-1", ("-1",), "{inputs}/train.txt"),
                Workload("compress-9", ("-9",), "{inputs}/train.txt"),
                Workload("decompress", ("-d",), "{inputs}/train.txt.gz"),
            ),
            make_training=_compression_training(600_000, ".gz"),
        ),
        Benchmark(
            name="bzip2",
            package="bzip2",
            binary="bzip2",
            sources=("blocksort.c", "huffman.c", "crctable.c", "randtable.c", "compress.c", "decompress.c",
                     "bzlib.c", "bzip2.c"),
            workloads=(Workload("compress", ("-c", "-9"), "{inputs}/input.txt"),),
            make_inputs=_compression_inputs(1_000_000),
            training=(
                Workload("compress-1", ("-c", "-1"), "{inputs}/train.txt"),
                Workload("decompress", ("-c", "-d"), "{inputs}/train.txt.bz2"),
            ),
            make_training=_compression_training(400_000, ".bz2"),
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
            training=(
                Workload("c", ("-m", "3", "-c", "-l", "-S1", "-I", "-o", "--output-file=/dev/null",
                               "{inputs}/c.gperf")),
                Workload("java", ("-m", "3", "-L", "C", "-F", ", 0", "-t", "-j1", "-i", "1", "-g", "-o", "-N",
                                  "java_keyword", "-k1,3,$", "--output-file=/dev/null", "{inputs}/java.gperf")),
                Workload("smtp", ("-m", "3", "--struct-type", "--readonly-table", "--enum", "--global", "-K",
                                  "field_name", "-N", "header_entry", "--ignore-case", "--output-file=/dev/null",
                                  "{inputs}/smtp.gperf")),
            ),
            make_training=_copied(*GPERF_TRAINING),
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
            training=(
                Workload("pigeonhole", ("-verb=0", "{inputs}/pigeonhole-6.cnf"), status=20),
                Workload("planted", ("-verb=0", "{inputs}/planted-200.cnf"), status=10),
            ),
            make_training=_sat_training,
        ),
    )
}


def local_benchmark(directory: Path, args: tuple[str, ...] = (), name: str | None = None,
                    train_args: tuple[str, ...] = ()) -> Benchmark:
    """A benchmark from a local directory of C files with one `main`, run once with `args`. `train_args`: its one
    PGO training run (regression/pgo.py), whose `{inputs}` holds a copy of the directory's `train/` folder (name a
    file of it as `{inputs}/NAME`)."""
    directory = Path(directory).absolute()
    if not directory.is_dir():
        raise InputError(f"benchmark directory {directory} does not exist")
    name = name or directory.name
    if not _NAME.match(name):
        raise InputError(f"benchmark name {name!r} must be letters, digits, '.', '_' or '-'")
    return Benchmark(name=name, binary=name, sources=("*.c",), local_dir=directory,
                     libs=("-lm",), workloads=(Workload("run", tuple(args)),),
                     training=(Workload("train", tuple(train_args)),) if train_args else (),
                     make_training=_train_folder)


def _train_folder(root: Path, inputs: Path) -> None:
    """A local benchmark's training inputs: the files of its `train/` folder, when it has one."""
    folder = root / "train"
    if folder.is_dir():
        for f in sorted(p for p in folder.iterdir() if p.is_file()):
            (inputs / f.name).write_bytes(f.read_bytes())


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
    """Write the workload inputs under `inputs`; return their sha256 (`input_digest`)."""
    inputs.mkdir(parents=True, exist_ok=True)
    if bench.make_inputs is not None:
        bench.make_inputs(root, inputs)
    return input_digest(bench.workloads, inputs)


def prepare_training(bench: Benchmark, root: Path, inputs: Path) -> str:
    """Write the PGO training runs' inputs under `inputs` (apart from the measured workloads'); their sha256. A
    benchmark with no training runs, or a training input that is not there, is one line naming the benchmark."""
    if not bench.training:
        raise InputError(f"benchmark {bench.name}: no PGO training runs (a --bench-dir benchmark's are given by "
                         "--bench-train-arg)")
    inputs.mkdir(parents=True, exist_ok=True)
    if bench.make_training is not None:
        bench.make_training(root, inputs)
    for w in bench.training:
        for f in w.files(inputs):
            if not f.is_file():
                raise InputError(f"benchmark {bench.name}: training input {f.name} of run {w.name} is missing ({f})")
    return input_digest(bench.training, inputs)


def input_digest(workloads: tuple[Workload, ...], inputs: Path) -> str:
    """The sha256 naming what `workloads` run on: their arguments (as templates), every file under `inputs` and
    every shipped script they name, so a run's lineage says which inputs it trained and measured with."""
    h = hashlib.sha256()
    for w in workloads:
        h.update(repr((w.name, w.args, w.stdin, w.status)).encode() + b"\0")
        for f in w.files(inputs):
            if f.is_file() and inputs not in f.parents:
                h.update(f.name.encode() + b"\0" + f.read_bytes())
    for p in sorted(inputs.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(inputs).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()
