"""Benchmark: a nightly run with warm caches against a cold one, in the same run.

The pipeline a triplet builder runs (compile the package's TUs to a corpus, then the triplet
datasets) on a copy of a Debian source tree, with a fresh cache directory, in these states:

* cold: empty caches (what every night cost before the caches);
* warm: nothing changed;
* header: a comment appended to a project header that up to half of the TUs include (directly
  or not): those TUs compile again; their bitcode does not change, so no module runs the tools;
* source: a function appended to one TU: one compile and one module's tools run again;
* uncached: the same tree with `--no-cache` (`[cache] enabled = false`), which also shows what
  filling the caches adds to the cold run.

Prints each state's wall time as a ratio of the cold run's in the same repetition (medians over
`--repeat`), with ccache's and the triplet cache's hit counts, and checks that the last warm
datasets are byte-identical to an uncached run over the same tree.

    .venv/bin/python -m bench.bench_incremental --package lua5.4 --repeat 3
    .venv/bin/python -m bench.bench_incremental --package zlib --kinds ir,mir
    .venv/bin/python -m bench.bench_incremental --package llvm-toolchain-19 --work /work/cache/llvm-src \\
        --include lib/Transforms/Scalar --repeat 1

With `--include` the package is a CMake project (LLVM) and the pipeline is the nightly's `corpus
llvm`: configure, the generators the selected TUs need, their compile, then the datasets. The
tree is a hard-linked copy (an edited file is copied first, so the pristine tree never changes)
and the build directory is kept between states, as on a worker; the cold state starts from an
empty one.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.harness import compare
from bench.harness.header import print_header
from farm.errors import ToolError
from farm.toolchain import Toolchain
from workers import cache, cmake_corpus, corpus, debrecipes, debsrc, tripletcache, triplets
from workers.corpus import DEFAULT_FLAGS, jobs_from_directory
from workers.parallel import default_jobs

STATES = ("cold", "warm", "header", "source", "uncached")


def compile_jobs_of(tree: Path, package: str, include: list[str], build: Path, tc: Toolchain
                    ) -> list[corpus.CompileJob]:
    r = debsrc.recipe(package)
    if include:
        src = tree / r.cmake
        db = cmake_corpus.configure(src, build, tc, debrecipes.LLVM_CMAKE_DEFINES)
        chosen = cmake_corpus.select(db, src, build, include)
        # their generated headers, so that `clang -MM` (typical_header) can read every TU
        cmake_corpus.build_prerequisites(build, cmake_corpus.prerequisites(build, [n for _, n in chosen]))
        return [j for j, _ in chosen]
    return [j for sub in r.subdirs for j in jobs_from_directory(tree / sub, (*DEFAULT_FLAGS, *r.flags))]


def make_corpus(tree: Path, package: str, include: list[str], build: Path, out: Path, tc: Toolchain,
                jobs: int) -> None:
    """What the nightly's corpus step runs for this package."""
    if include:
        cmake_corpus.from_cmake(tree / debsrc.recipe(package).cmake, out, tc, build=build, include=include,
                                defines=debrecipes.LLVM_CMAKE_DEFINES, jobs=jobs)
        return
    corpus.compile_jobs(compile_jobs_of(tree, package, [], build, tc), out, tc, jobs=jobs, source=f"bench:{package}")


def edit(path: Path, text: str) -> None:
    """Append to `path` without touching a hard-linked original: the copy gets its own inode first."""
    tmp = path.with_name(path.name + ".bench-edit")
    shutil.copy2(path, tmp)
    with open(tmp, "a") as f:
        f.write(text)
    os.replace(tmp, path)


def typical_header(tree: Path, jobs: list[corpus.CompileJob], tc: Toolchain) -> tuple[Path, int]:
    """The project header that the most TUs include, directly or not, among those at most half of them
    include (a header every TU includes would make the edit a cold run); and how many include it."""
    users: Counter[Path] = Counter()
    for j in jobs:
        try:
            deps = tc.run("clang", [*j.args, "-MM", str(j.source)], cwd=j.directory).stdout.decode()
        except ToolError:
            continue  # a TU the corpus skips too
        for word in deps.replace("\\\n", " ").split()[2:]:  # after "x.o: x.c"
            h = (j.directory / word).resolve()
            if h.suffix == ".h" and h.is_relative_to(tree.resolve()):
                users[h] += 1
    some = [(n, str(h)) for h, n in users.items() if n <= len(jobs) // 2]
    if not some:
        sys.exit(f"no project header under {tree} is included by at most half of the TUs")
    n, h = max(some)
    return Path(h), n


def run_pipeline(tree: Path, package: str, include: list[str], build: Path, out: Path, tc: Toolchain,
                 kinds: list[str], jobs: int) -> dict:
    """Compile and make each dataset; wall seconds and cache counts of this one run."""
    cc = cache.for_compile(tc)
    before_cc = cc.stats() if cc else {}
    before_t = dict(tripletcache.STATS)
    start = time.perf_counter()
    make_corpus(tree, package, include, build, out / "corpus", tc, jobs)
    compiled = time.perf_counter()
    for kind in kinds:
        triplets.build_dataset(out / "corpus", out / kind, kind, tc, jobs=jobs)
    done = time.perf_counter()
    after_cc = cc.stats() if cc else {}

    def delta(d1: dict, d0: dict, *keys: str) -> int:
        return sum(d1.get(k, 0) - d0.get(k, 0) for k in keys)

    return {
        "total": done - start, "compile": compiled - start, "triplets": done - compiled,
        "tu_hits": delta(after_cc, before_cc, "direct_cache_hit", "preprocessed_cache_hit"),
        "tu_misses": delta(after_cc, before_cc, "cache_miss"),
        "mod_hits": delta(dict(tripletcache.STATS), before_t, "hits"),
        "mod_misses": delta(dict(tripletcache.STATS), before_t, "misses"),
    }


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def one_repetition(pristine: Path, package: str, include: list[str], work: Path, tc: Toolchain, kinds: list[str],
                   jobs: int) -> dict:
    tree, build = work / "src", work / "build"
    shutil.copytree(pristine, tree, symlinks=True, copy_function=os.link)
    os.environ["MLGO_FARM_CACHE_DIR"] = str(work / "cache")
    os.environ[cache.ENABLED_VARIABLE] = "true"
    results = {}
    all_jobs = compile_jobs_of(tree, package, include, work / "probe-build", tc)
    header, includers = typical_header(tree, all_jobs, tc)
    shutil.rmtree(work / "probe-build")  # the cold state starts from an empty build directory
    for state in STATES:
        os.environ[cache.ENABLED_VARIABLE] = "false" if state == "uncached" else "true"
        if state == "header":
            edit(header, "/* edited by bench_incremental */\n")
        elif state == "source":
            edit(min(j.source for j in all_jobs), "\nint mlgo_bench_incremental_added(int x) { return x * 3 + 1; }\n")
        results[state] = run_pipeline(tree, package, include, build, work / state, tc, kinds, jobs)
    for what in ("corpus", *kinds):
        if tree_bytes(work / "source" / what) != tree_bytes(work / "uncached" / what):
            sys.exit(f"{what}: the warm output differs from an uncached run's: the cache changed a result")
    results["header_name"] = f"{header.relative_to(tree).as_posix()} (included by {includers} TUs)"
    results["tus"] = len(all_jobs)
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", default="lua5.4", help="Debian source package with a recipe in workers/debsrc.py")
    ap.add_argument("--kinds", default="ir", help="datasets to make: ir, mir or ir,mir")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path("var/bench"), help="where the source package is kept")
    ap.add_argument("--include", action="append", default=[],
                    help="a CMake package (LLVM): only the TUs under this path prefix (repeatable)")
    ap.add_argument("--tmp", type=Path, default=None, help="scratch directory (same file system as --work)")
    args = ap.parse_args()
    kinds = args.kinds.split(",")
    tc = Toolchain.from_settings()
    print_header(tc)
    jobs = default_jobs()
    pristine = debsrc.fetch_source(args.package, args.work.absolute() / ("" if args.include else "debsrc"))
    reps = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="bench-incremental-", dir=args.tmp) as tmp:
            reps.append(one_repetition(pristine, args.package, args.include, Path(tmp), tc, kinds, jobs))
    first = reps[0]
    where = f" ({', '.join(args.include)})" if args.include else ""
    print(f"package {args.package}{where}: {first['tus']} TUs, datasets {', '.join(kinds)}, {jobs} jobs, "
          f"{args.repeat} repetitions; header edited: {first['header_name']}")
    print(f"{'state':8} {'total':>8} {'ratio':>7} {'compile':>8} {'triplets':>9}  TU hits/misses  module hits/misses")
    for state in STATES:
        med = {k: compare.median([r[state][k] for r in reps]) for k in ("total", "compile", "triplets")}
        ratio = compare.paired([r[state]["total"] for r in reps], [r["cold"]["total"] for r in reps])
        s = first[state]
        print(f"{state:8} {med['total']:7.2f}s {ratio:6.3f}x {med['compile']:7.2f}s {med['triplets']:8.2f}s  "
              f"{s['tu_hits']:>5}/{s['tu_misses']:<8} {s['mod_hits']:>5}/{s['mod_misses']}")
    print("warm corpus and datasets byte-identical to an uncached run: yes (every repetition)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
