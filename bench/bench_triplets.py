"""Benchmark: the IR dataset step against the bare baseline, on a real corpus, in the same run.

Baseline: `xargs -P $(nproc) llvm-ir2vec triplets` over the same bitcode, then `sort -u`.
Ours: `mlgo-farm triplets ir CORPUS --opt-levels O0` (same work: no opt), which also
deduplicates, merges, maps entities and writes the dataset and its manifest atomically.
Reports the median wall-time ratio over repeated alternating runs, the peak RSS of the largest
process of each (ours: also the farm's own Python process), and how many of the baseline's unique
lines are wrong (parallel writes to one pipe tear lines) against a serial reference.

    .venv/bin/python -m bench.bench_triplets --package lua5.4 --repeat 5
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from bench.harness import compare, corpora, timing
from bench.harness.commands import farm_cli
from bench.harness.header import print_header
from farm.toolchain import Toolchain
from workers import corpus
from workers.parallel import default_jobs


def serial_reference(tc: Toolchain, c: corpus.Corpus) -> set[str]:
    """The true unique triplet lines: one module at a time, nothing interleaved."""
    lines: set[str] = set()
    for m in c.modules:
        out = tc.run("llvm-ir2vec", ["triplets", m.bitcode]).stdout.decode()
        lines.update(ln for ln in out.splitlines() if ln and not ln.startswith("MAX_RELATION"))
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", default="lua5.4", help="Debian source package for the corpus")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", type=Path, default=Path("var/bench"))
    args = ap.parse_args()

    tc = Toolchain.from_settings()
    print_header(tc)
    jobs = default_jobs()
    corpus_dir = corpora.debian_corpus(args.package, args.work, tc)
    c = corpus.load(corpus_dir)
    files = "\n".join(str(m.bitcode) for m in c.modules) + "\n"
    out = Path(tempfile.mkdtemp(prefix="bench-triplets-"))
    (out / "modules.txt").write_text(files)
    ir2vec = shlex.quote(str(tc.path("llvm-ir2vec")))
    baseline = (f"xargs -P {jobs} -I{{}} {ir2vec} triplets {{}} < {out}/modules.txt "
                f"| grep -v '^MAX_RELATION' | sort -u > {out}/baseline.txt")
    verb = ["triplets", "ir", str(corpus_dir), "-o", str(out / "ds"), "--opt-levels", "O0", "-j", str(jobs)]

    runs = compare.alternate({"baseline": lambda: timing.run(baseline, shell=True),  # a warm-up round: page cache
                              "ours": lambda: timing.run([*farm_cli(), *verb])}, args.repeat)
    base_lines = (out / "baseline.txt").read_text().splitlines()
    torn = sum(1 for ln in base_lines if len(ln.split("\t")) != 3 or not all(x.isdigit() for x in ln.split("\t")))
    ours_unique = int((out / "ds" / "train2id.txt").read_text().split("\n", 1)[0])
    reference = serial_reference(tc, c)
    wrong = len(set(base_lines) - reference)
    self_rss = timing.farm_self_peak(verb)
    shutil.rmtree(out)
    rows = compare.compare({k: [t.wall for t in v] for k, v in runs.items()}, "baseline")
    b, o = rows["baseline"].median, rows["ours"].median
    base_m, our_m = ([t.peak_kib for t in runs[k]] for k in ("baseline", "ours"))
    print(f"corpus: {args.package}, {len(c.modules)} modules, {jobs} jobs, {args.repeat} runs each")
    print(f"unique triplets: serial reference {len(reference)}, ours {ours_unique}, baseline {len(base_lines)} "
          f"({wrong} not in the reference, {torn} of them visibly torn by interleaved parallel writes)")
    print(f"baseline (xargs -P {jobs} llvm-ir2vec | sort -u): median {b:.3f}s  peak RSS {max(base_m) / 1024:.1f} MiB")
    print(f"ours (mlgo-farm triplets ir):                    median {o:.3f}s  peak RSS {max(our_m) / 1024:.1f} MiB "
          f"(largest process; the farm's own Python process: {self_rss / 1024:.1f} MiB)")
    print(f"ratio ours/baseline: {rows['ours'].ratio:.3f}x (target <= 1.15x; median of each round's ratio "
          f"{rows['ours'].paired:.3f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
