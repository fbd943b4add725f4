"""Benchmark: LLVM's own code as a corpus (configure + generators only), against Ninja and xargs, same run.

On a subset of LLVM chosen by path (default lib/Transforms/Scalar) of the Debian source tree:

* configure (fresh build directory) and the prerequisite build (the generated headers the
  selected TUs need, read off Ninja's graph), timed;
* corpus compile of the N selected TUs (`compile_jobs`: pre-optimization bitcode) against
  `ninja -j J` compiling the same N TUs to objects (the build LLVM developers run anyway),
  alternated; target: within 1.1x;
* `mlgo-farm triplets ir --opt-levels O0` against `xargs -P J llvm-ir2vec triplets | sort -u`,
  alternated; targets: at most 0.7x without the predicate triplets, 0.8x with them (the default);
  with `--before DIR` also the farm code in DIR, whose dataset must be this code's byte for byte;
* per-module CPU costs of IR at O1,O2,O3,Oz and of MIR (O2), the peak RSS of the farm's process,
  and from all of these a capacity estimate for the whole llvm/ tree on 2 cores and on 64 vCPUs
  over 4 sharded workers (`--full-prereq` also measures the generators of the whole tree).

The farm's caches are off for the whole run: every number is a cold run.

    nice -n 10 .venv/bin/python -m bench.bench_llvm_corpus --debsrc /work/cache/llvm-src \\
        --include lib/Transforms/Scalar --full-prereq
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

from bench.harness import compare, timing
from bench.harness.commands import farm_cli
from bench.harness.header import load, print_header
from bench.harness.timing import Meter, Timing
from farm.toolchain import Toolchain
from workers import cmake_corpus, corpus, debrecipes, debsrc
from workers.parallel import default_jobs


def ninja_objects(build: Path, objects: list[str], jobs: int) -> Timing:
    for o in objects:
        (build / o).unlink(missing_ok=True)
    return timing.run(["ninja", "-C", str(build), "-j", str(jobs), *objects])


def farm_corpus(jobs_: list, out: Path, tc: Toolchain, jobs: int) -> tuple[Timing, corpus.Corpus]:
    shutil.rmtree(out, ignore_errors=True)
    with Meter() as m:
        c = corpus.compile_jobs(jobs_, out, tc, jobs=jobs, source="bench")
    return m.timing, c


def hms(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


def compare_triplets(work: Path, tc: Toolchain, jobs: int, repeat: int, before: Path | None = None) -> None:
    """`triplets ir --opt-levels O0` against `xargs -P J llvm-ir2vec triplets | sort -u`, alternated.

    The baseline does what LLVM's tool does; the farm's default adds the compare-predicate
    triplets (read off each module's bitcode by workers/cmpscan.c), so it is timed both with and
    without them. `before`, a checkout of earlier farm code (`git archive REV | tar -x -C DIR`), is
    timed too, and its dataset must be this code's byte for byte.
    """
    from workers import predicates

    cdir = work / "corpus"
    c = corpus.load(cdir)
    listing = work / "modules.txt"
    listing.write_text("".join(f"{m.bitcode}\n" for m in c.modules))
    ir2vec = tc.path("llvm-ir2vec")
    baseline = (f"xargs -P {jobs} -I{{}} {ir2vec} triplets {{}} < {listing} | grep -v '^MAX_RELATION' "
                f"| sort -u > {work}/baseline.txt")
    args = ["triplets", "ir", str(cdir), "--opt-levels", "O0", "-j", str(jobs)]
    variants = {"baseline": lambda: timing.run(baseline, shell=True),
                "farm, no predicates": lambda: timing.run([*farm_cli(), *args, "-o", str(work / "ds-plain"),
                                                           "--no-predicates"]),
                "farm (default)": lambda: timing.run([*farm_cli(), *args, "-o", str(work / "ds")])}
    if before is not None:
        variants["farm (default), before"] = lambda: timing.run([*farm_cli(before), *args, "-o",
                                                                 str(work / "ds-before")])
    targets = {"farm, no predicates": 0.7, "farm (default)": 0.8}
    predicates.scanner(tc)  # built once per worker: not part of any run
    runs = compare.alternate(variants, repeat)  # a warm-up round: page cache
    raw = json.loads((work / "ds" / "manifest.json").read_text())["triplets"]["raw"]
    walls = compare.compare({k: [t.wall for t in v] for k, v in runs.items()}, "baseline")
    cpus = compare.compare({k: [t.cpu for t in v] for k, v in runs.items()}, "baseline")
    print(f"triplets ir O0 of {len(c.modules)} modules ({raw} raw lines), {repeat} alternated runs, load "
          f"{load()}, medians:", flush=True)
    for k, v in runs.items():
        w, cpu = walls[k], cpus[k]
        print(f"  {k}: {w.median:.2f}s wall" + ("" if k == "baseline" else f" ({w.ratio:.2f}x)")
              + f", {cpu.median:.2f} CPU-s" + ("" if k == "baseline" else f" ({cpu.ratio:.2f}x)")
              + f", peak {max(t.peak_kib for t in v) / 1024:.0f} MiB"
              + (f"; target <= {targets[k]}x wall" if k in targets else ""), flush=True)
    if before is not None:
        names = ("train2id.txt", "entity2id.txt", "relation2id.txt", "manifest.json")
        differ = [n for n in names if (work / "ds" / n).read_bytes() != (work / "ds-before" / n).read_bytes()]
        print(f"dataset against the code in {before}: " + (f"DIFFERS in {', '.join(differ)}" if differ
                                                           else "byte-identical"), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--debsrc", type=Path, default=Path("var/debsrc"), help="where llvm-toolchain-19 is unpacked")
    ap.add_argument("--package", default="llvm-toolchain-19")
    ap.add_argument("--include", action="append", help="TU path prefix under llvm/ (default lib/Transforms/Scalar)")
    ap.add_argument("--sample", type=int, help="only K of the included TUs, drawn with --seed")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1, help="alternated runs of the compile comparison")
    ap.add_argument("--triplet-repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path("var/bench/llvm-corpus"))
    ap.add_argument("--full-prereq", action="store_true", help="also time the generators of every TU of llvm/")
    ap.add_argument("--before", type=Path, help="a checkout of earlier farm code to time and compare as well")
    ap.add_argument("--triplets-only", action="store_true",
                    help="only the triplet comparison, on the corpus a previous run left in --work")
    args = ap.parse_args()
    include = args.include or ["lib/Transforms/Scalar"]
    os.environ["MLGO_FARM_CACHE_ENABLED"] = "false"  # cold runs: every TU compiled, every module run

    tc = Toolchain.from_settings()
    print_header(tc)
    jobs = default_jobs()
    if args.triplets_only:
        compare_triplets(args.work.absolute(), tc, jobs, args.triplet_repeat, args.before)
        return 0
    tree = debsrc.fetch_source(args.package, args.debsrc)
    src = tree / debsrc.recipe(args.package).cmake
    work = args.work.absolute()
    build = work / "build"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    print(f"source: {src} ({debsrc.lineage(tree)['version']}), {jobs} jobs", flush=True)

    with Meter() as m:
        db = cmake_corpus.configure(src, build, tc, debrecipes.LLVM_CMAKE_DEFINES)
    t_configure = m.timing.wall
    every = cmake_corpus.select(db, src, build)
    chosen = cmake_corpus.select(db, src, build, include)
    if args.sample:
        chosen = sorted(random.Random(args.seed).sample(chosen, min(args.sample, len(chosen))), key=lambda x: x[0].name)
    objects = [node for _, node in chosen]
    need = cmake_corpus.prerequisites(build, objects)
    steps = len(subprocess.run(["ninja", "-C", str(build), "-n", *need.nodes], capture_output=True,
                               text=True).stdout.splitlines())
    with Meter() as m:
        cmake_corpus.build_prerequisites(build, need, jobs)
    t_prereq, cpu_prereq = m.timing.wall, m.timing.cpu
    print(f"configure: {t_configure:.1f}s, {len(every)} TUs in llvm/; prerequisites of {len(chosen)} TUs "
          f"({', '.join(include)}): {len(need.nodes)} generated files, {steps} Ninja steps, {t_prereq:.1f}s "
          f"({cpu_prereq:.0f} CPU-s; left out: {need.left_out})", flush=True)

    jobs_ = [job for job, _ in chosen]
    n_steps = len(subprocess.run(["ninja", "-C", str(build), "-n", *objects], capture_output=True,
                                 text=True).stdout.splitlines())
    made: list[corpus.Corpus] = []

    def ours() -> Timing:
        took, c = farm_corpus(jobs_, work / "corpus", tc, jobs)
        made.append(c)
        return took

    runs = compare.alternate({"ninja": lambda: ninja_objects(build, objects, jobs), "corpus": ours}, args.repeat,
                             warmup=False)
    c = made[-1]
    bw, ow = (compare.median([t.wall for t in runs[k]]) for k in ("ninja", "corpus"))
    bc, oc = (compare.median([t.cpu for t in runs[k]]) for k in ("ninja", "corpus"))
    n = len(jobs_)
    print(f"compile {n} TUs: ninja objects ({n_steps} steps) {bw:.1f}s wall {bc:.0f} CPU-s; corpus bitcode "
          f"{ow:.1f}s wall {oc:.0f} CPU-s ({len(c.modules)} modules, {len(c.skipped)} skipped); "
          f"ratio {ow / bw:.2f}x (target <= 1.1x); {oc / n:.2f} CPU-s per TU", flush=True)
    for s in c.skipped:
        print(f"  skipped {s['module']}: {s['reason'][:160]}")

    cdir = work / "corpus"
    compare_triplets(work, tc, jobs, args.triplet_repeat, args.before)
    triplets = [*farm_cli(), "triplets"]

    costs = {}
    for label, argv in (("IR O0", ["ir", "--opt-levels", "O0"]),
                        ("IR O1,O2,O3,Oz", ["ir", "--opt-levels", "O1,O2,O3,Oz"]), ("MIR O2", ["mir"])):
        costs[label] = timing.run([*triplets, *argv, str(cdir), "-o", str(work / f"ds-{len(costs)}"), "-j",
                                   str(jobs)]).cpu
    rss = timing.farm_self_peak(["triplets", "ir", "--opt-levels", "O0,O1,O2,O3,Oz", str(cdir), "-o",
                                 str(work / "ds-rss"), "-j", str(jobs)])
    per = {k: v / len(c.modules) for k, v in costs.items()}
    print("triplet CPU-s per module: " + ", ".join(f"{k} {v:.2f}" for k, v in per.items())
          + f"; farm process peak RSS, IR at all five levels: {rss / 1024:.0f} MiB", flush=True)

    t_full = None
    if args.full_prereq:
        need_all = cmake_corpus.prerequisites(build, [node for _, node in every])
        with Meter() as m:
            cmake_corpus.build_prerequisites(build, need_all, jobs)
        t_full, cpu_prereq = t_prereq + m.timing.wall, cpu_prereq + m.timing.cpu
        print(f"prerequisites of all {len(every)} TUs: {len(need_all.nodes)} generated files, "
              f"{t_full:.0f}s and {cpu_prereq:.0f} CPU-s in all (the subset's included)", flush=True)

    total = len(every)
    compile_cpu = oc / n
    ir_cpu = per["IR O0"] + per["IR O1,O2,O3,Oz"]
    mir_cpu = per["MIR O2"]
    scope = "all TUs" if t_full is not None else "the subset only"
    print(f"capacity inputs: CPU-s per TU {compile_cpu:.2f} compile, {ir_cpu:.2f} IR (5 levels), {mir_cpu:.2f} MIR; "
          f"generators of {scope}: {cpu_prereq:.0f} CPU-s; every worker configures and runs them (its setup; on 16 "
          f"cores estimated as CPU/16, a lower bound: the tablegen chain is partly serial)")
    for cores, workers, label in ((jobs, 1, f"{jobs} cores"), (64, 4, "64 vCPUs as 4 workers x 16")):
        per_core = total / workers / (cores / workers)
        c_t, ir_t, mir_t = compile_cpu * per_core, ir_cpu * per_core, mir_cpu * per_core
        prereq = t_configure + ((t_full or t_prereq) if workers == 1 else cpu_prereq / (cores / workers))
        print(f"capacity, {total} TUs on {label}: setup {hms(prereq)}, corpus {hms(c_t)}, "
              f"IR O0-O3,Oz {hms(ir_t)}, MIR O2 {hms(mir_t)}; total {hms(prereq + c_t + ir_t + mir_t)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
