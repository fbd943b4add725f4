"""Benchmark: the IR dataset step against the bare baseline, on a real corpus, in the same run.

Baseline: `xargs -P $(nproc) llvm-ir2vec triplets` over the same bitcode, then `sort -u`.
Ours: `mlgo-farm triplets ir CORPUS --opt-levels O0` (same work: no opt), which also
deduplicates, merges, maps entities and writes the dataset and its manifest atomically.
Reports the median wall-time ratio over repeated alternating runs, the peak RSS of the largest
process of each (ours: also the farm's own Python process), and how many of the baseline's unique
lines are wrong (parallel writes to one pipe tear lines) against a serial reference.

    .venv/bin/python bench/bench_triplets.py --package lua5.4 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from farm.toolchain import Toolchain
from workers import corpus
from workers.parallel import default_jobs


def timed(cmd: list[str] | str, shell: bool = False) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of the command and its descendants."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"benchmark command failed: {cmd}")
    return wall, usage.ru_maxrss


def serial_reference(tc: Toolchain, c: corpus.Corpus) -> set[str]:
    """The true unique triplet lines: one module at a time, nothing interleaved."""
    lines: set[str] = set()
    for m in c.modules:
        out = tc.run("llvm-ir2vec", ["triplets", m.bitcode]).stdout.decode()
        lines.update(ln for ln in out.splitlines() if ln and not ln.startswith("MAX_RELATION"))
    return lines


def own_peak_rss(argv: list[str]) -> int:
    """Peak RSS (KiB) of the farm's Python process alone, running the verb `argv` once more."""
    code = ("import resource, sys; from farm.cli import main; sys.argv = ['mlgo-farm', *sys.argv[1:]]; rc = main(); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(rc)")
    p = subprocess.run([sys.executable, "-c", code, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, check=True)
    return int(p.stderr.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", default="lua5.4", help="Debian source package for the corpus")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", type=Path, default=Path("var/bench"))
    args = ap.parse_args()

    tc = Toolchain.from_settings()
    jobs = default_jobs()
    corpus_dir = args.work / f"corpus-{args.package}"
    if not (corpus_dir / corpus.DESCRIPTION).is_file():
        corpus.from_debian(args.package, corpus_dir, tc, args.work / "debsrc")
    c = corpus.load(corpus_dir)
    files = "\n".join(str(m.bitcode) for m in c.modules) + "\n"
    out = Path(tempfile.mkdtemp(prefix="bench-triplets-"))
    (out / "modules.txt").write_text(files)
    ir2vec = shlex.quote(str(tc.path("llvm-ir2vec")))
    baseline = (f"xargs -P {jobs} -I{{}} {ir2vec} triplets {{}} < {out}/modules.txt "
                f"| grep -v '^MAX_RELATION' | sort -u > {out}/baseline.txt")
    ours = [sys.executable, "-m", "farm.cli", "triplets", "ir", str(corpus_dir), "-o", str(out / "ds"),
            "--opt-levels", "O0", "-j", str(jobs)]

    base_t, our_t, base_m, our_m = [], [], [], []
    timed(baseline, shell=True)  # warm the page cache for both
    for _ in range(args.repeat):
        t, m = timed(baseline, shell=True)
        base_t.append(t)
        base_m.append(m)
        t, m = timed(ours)
        our_t.append(t)
        our_m.append(m)
    base_lines = (out / "baseline.txt").read_text().splitlines()
    torn = sum(1 for ln in base_lines if len(ln.split("\t")) != 3 or not all(x.isdigit() for x in ln.split("\t")))
    ours_unique = int((out / "ds" / "train2id.txt").read_text().split("\n", 1)[0])
    reference = serial_reference(tc, c)
    wrong = len(set(base_lines) - reference)
    self_rss = own_peak_rss(ours[3:])
    shutil.rmtree(out)
    b, o = statistics.median(base_t), statistics.median(our_t)
    print(f"corpus: {args.package}, {len(c.modules)} modules, {jobs} jobs, {args.repeat} runs each")
    print(f"unique triplets: serial reference {len(reference)}, ours {ours_unique}, baseline {len(base_lines)} "
          f"({wrong} not in the reference, {torn} of them visibly torn by interleaved parallel writes)")
    print(f"baseline (xargs -P {jobs} llvm-ir2vec | sort -u): median {b:.3f}s  peak RSS {max(base_m) / 1024:.1f} MiB")
    print(f"ours (mlgo-farm triplets ir):                    median {o:.3f}s  peak RSS {max(our_m) / 1024:.1f} MiB "
          f"(largest process; the farm's own Python process: {self_rss / 1024:.1f} MiB)")
    print(f"ratio ours/baseline: {o / b:.3f}x (target <= 1.15x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
