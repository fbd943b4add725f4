"""Benchmark programs as data: where the sources come from, how to build them, what to run.

A benchmark is a real program (the Lua interpreter, zlib's minigzip, bzip2, the Tiny C Compiler; in C++,
GNU gperf and the MiniSat solver) built from its Debian source package, or a local directory of C files. Building
is described, not scripted: which sources make the binary, with which preprocessor flags and
libraries; `regression.build` compiles each source with the variant under test (a `.cc`/`.cpp`
source as C++) and links the objects (with `clang++`, so libstdc++, when any source is C++).
Workloads name the arguments and stdin of each measured execution and the exit status a run
answers with; `{scripts}` is this package's `scripts/` folder (Lua scripts shipped with the farm)
and `{inputs}` the prepared input directory.

A PGO build (regression/pgo.py) trains on other runs than it is measured on: each benchmark's `training`
workloads read their own inputs (`make_training` writes them; `{inputs}` is then the training directory), so a
profile never saw the very inputs callgrind counts, as a user's profile never saw the user's next input. Both
sets are deterministic and named by their sha256 in the run's lineage (`input_digest`); regression/benchinputs.py
writes them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from farm.errors import InputError
from regression import benchinputs

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
    #: Flags of this benchmark on top of the package's recipe (workers.debrecipes.RECIPES).
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


LUA_SCRIPTS = ("fib.lua", "strings.lua", "tables.lua", "nbody.lua")
#: gperf's own test keyword files, and the options its tests/Makefile.in gives them; `-m N` makes it search N times
#: harder for a smaller table (most of a workload's instructions).
GPERF_KEYWORDS = ("tests/languages.gperf", "tests/charsets.gperf", "tests/cplusplus.gperf")
#: gperf's other test keyword files: the training runs' (as tests/Makefile.in runs them)
GPERF_TRAINING = ("tests/c.gperf", "tests/java.gperf", "tests/smtp.gperf")
#: Where a tcc workload writes its object: stdout, under a name tcc's unlink cannot remove (see the tcc benchmark).
TO_STDOUT = "/proc/self/fd/1"
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
            make_inputs=benchinputs.compression_inputs(2_000_000),
            training=(
                Workload("compress-1", ("-1",), "{inputs}/train.txt"),
                Workload("compress-9", ("-9",), "{inputs}/train.txt"),
                Workload("decompress", ("-d",), "{inputs}/train.txt.gz"),
            ),
            make_training=benchinputs.compression_training(600_000, ".gz"),
        ),
        Benchmark(
            name="bzip2",
            package="bzip2",
            binary="bzip2",
            sources=("blocksort.c", "huffman.c", "crctable.c", "randtable.c", "compress.c", "decompress.c",
                     "bzlib.c", "bzip2.c"),
            workloads=(Workload("compress", ("-c", "-9"), "{inputs}/input.txt"),),
            make_inputs=benchinputs.compression_inputs(1_000_000),
            training=(
                Workload("compress-1", ("-c", "-1"), "{inputs}/train.txt"),
                Workload("decompress", ("-c", "-d"), "{inputs}/train.txt.bz2"),
            ),
            make_training=benchinputs.compression_training(400_000, ".bz2"),
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
            make_inputs=benchinputs.copied(*GPERF_KEYWORDS),
            training=(
                Workload("c", ("-m", "3", "-c", "-l", "-S1", "-I", "-o", "--output-file=/dev/null",
                               "{inputs}/c.gperf")),
                Workload("java", ("-m", "3", "-L", "C", "-F", ", 0", "-t", "-j1", "-i", "1", "-g", "-o", "-N",
                                  "java_keyword", "-k1,3,$", "--output-file=/dev/null", "{inputs}/java.gperf")),
                Workload("smtp", ("-m", "3", "--struct-type", "--readonly-table", "--enum", "--global", "-K",
                                  "field_name", "-N", "header_entry", "--ignore-case", "--output-file=/dev/null",
                                  "{inputs}/smtp.gperf")),
            ),
            make_training=benchinputs.copied(*GPERF_TRAINING),
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
            make_inputs=benchinputs.sat_inputs,
            training=(
                Workload("pigeonhole", ("-verb=0", "{inputs}/pigeonhole-6.cnf"), status=20),
                Workload("planted", ("-verb=0", "{inputs}/planted-200.cnf"), status=10),
            ),
            make_training=benchinputs.sat_training,
        ),
        # C, a compiler (the workload LLVM's MLGO authors call representative): the Tiny C Compiler as its Makefile
        # builds it (the recipe's objects, defines and config.h), compiling C to x86-64 objects: its own sources as
        # one translation unit (tcc.c with ONE_SOURCE=1, system headers included) and a generated program. It finds
        # its own headers (stddef.h, stdarg.h) under CONFIG_TCCDIR's include/, here the source tree's. tcc unlinks
        # its output file before writing it, so `-o /dev/stdout` (or /dev/null) run as root deletes the device node:
        # the object goes to TO_STDOUT, a name unlink refuses (EPERM), so to stdout, compared between the builds.
        Benchmark(
            name="tcc",
            package="tcc",
            binary="tcc",
            sources=("tcc.c", "libtcc.c", "tccpp.c", "tccgen.c", "tccelf.c", "tccasm.c", "tccrun.c", "x86_64-gen.c",
                     "x86_64-link.c", "i386-asm.c"),
            cppflags=('-DCONFIG_TCCDIR="{src}"',),
            libs=("-lm", "-ldl", "-lpthread"),
            workloads=(
                Workload("self", ("-c", "{inputs}/tcc-src/tcc.c", "-DONE_SOURCE=1", "-DTCC_TARGET_X86_64",
                                  '-DCONFIG_TRIPLET="x86_64-linux-gnu"', "-o", TO_STDOUT)),
                Workload("generated", ("-c", "{inputs}/program.c", "-o", TO_STDOUT)),
            ),
            make_inputs=benchinputs.tcc_inputs,
            # tests2's objects are written into the run's directory (one per program: -c of many files takes no -o)
            training=(
                Workload("tests2", ("-c", *(f"{{inputs}}/{name}" for name in benchinputs.TCC_TESTS2))),
                Workload("generated", ("-c", "{inputs}/train.c", "-o", TO_STDOUT)),
            ),
            make_training=benchinputs.tcc_training,
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
