"""Benchmark (run by hand): the comparison on real Debian programs, policy against the heuristic.

    .venv/bin/python -m bench.bench_regress [--bench lua zlib bzip2] [--policy never] [--repeats 7]

Runs one `regress run` per policy (the built-in `heuristic` first, as the baseline, then the
policy) in a scratch var/ directory and prints, from the same run, the policy/heuristic ratios:
compile time of the whole build, binary `.text`, callgrind instructions and median wall time per
workload, with the verdicts. The `heuristic` run must show ratio 1 for size and instructions
exactly; its compile-time ratio is the launcher's overhead.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from bench.harness.header import print_header


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", nargs="+", default=["lua", "zlib", "bzip2"])
    ap.add_argument("--policy", nargs="+", default=["heuristic", "never"])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--var", help="var/ directory to use (default: a temporary one; sources are cached there)")
    args = ap.parse_args()
    var = Path(args.var or tempfile.mkdtemp(prefix="bench-regress."))
    os.environ["MLGO_FARM_PATHS_VAR_DIR"] = str(var)
    print_header()

    from regression import benchmarks
    from regression.compare import RunRequest, open_history, run_comparison

    benches = tuple(benchmarks.lookup(b) for b in args.bench)
    for policy in args.policy:
        start = time.perf_counter()
        result = run_comparison(RunRequest(builder="bench", benchmarks=benches, policy=policy,
                                           repeats=args.repeats, jobs=args.jobs, publish=False))
        took = time.perf_counter() - start
        rows = {(m.subject, m.metric, m.policy): m.value for m in open_history().measurements(result.run)}
        verdicts = {(c.subject, c.metric): c.verdict for c in result.comparisons if c.baseline == "heuristic"}
        print(f"\npolicy {policy}: run {result.run.run_id}, verdict {result.verdict}, {took:.0f}s in all")
        print(f"  {'subject':<20} {'metric':<13} {'heuristic':>14} {'policy':>14} {'ratio':>8}  verdict")
        for (subject, metric, pol), value in sorted(rows.items()):
            if pol != "heuristic" or (subject, metric) not in verdicts or ("/" in subject and metric == "text_size"):
                continue
            other = rows[(subject, metric, "policy")]
            ratio = other / value if value else float("nan")
            verdict = verdicts[(subject, metric)]
            print(f"  {subject:<20} {metric:<13} {value:>14.6g} {other:>14.6g} {ratio:>8.4f}  {verdict}")
        for s in result.skipped:
            print(f"  skipped {s.subject} [{s.variant}]: {s.reason}")
    print(f"\nscratch var dir: {var}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
