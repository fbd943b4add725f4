"""Peak memory of one module's flip search, this tree's code against a baseline tree's, on the same module.

    .venv/bin/python -m bench.bench_explore_memory --corpus /path/to/llvm/corpus \
        --vocab var/cache/vocab/ir/VERSION.json --baseline-tree /tmp/old-checkout

A nightly worker searches two of LLVM's largest TUs at once, so a search's peak memory is what sizes the
worker. Each search runs in its own child process (peak RSS from getrusage), the baseline's with the
baseline tree first on its path (PYTHONPATH, and `python -P`: not the working directory before it),
alternating; both must find the same result (the arrays compared).
The module searched is the corpus's largest bitcode, or --module NAME.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import ROOT, compare
from bench.harness.header import print_header


def child(args: argparse.Namespace) -> None:
    import numpy as np

    from farm.config import load_settings
    from farm.toolchain import Toolchain
    from policytrain.explore import explore
    from policytrain.params import Budget
    from policytrain.units import corpus_units

    tc = Toolchain.from_settings(load_settings())
    unit = next(u for u in corpus_units(Path(args.corpus)) if u.name == args.module)
    vocab = Path(args.vocab) if args.vocab else None
    start = time.perf_counter()
    r = explore(unit, None, tc, Budget(args.per_round, args.rounds, groups=True), vocab=vocab)
    wall = time.perf_counter() - start
    arrays = {k: getattr(r, k) for k in ("rows", "base_rows", "trial_rows", "actions", "trial_deltas")}
    np.savez(args.out, **{k: v for k, v in arrays.items() if v is not None})
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    data = sum(v.nbytes for v in arrays.values() if v is not None) / 2**20
    print(json.dumps({"peak_mib": peak, "wall_s": wall, "compiles": r.compiles, "best": r.best_size,
                      "base": r.base_size, "data_mib": data}))


def run(tree: Path, args: argparse.Namespace, out: Path) -> dict:
    """One search in a child process running `tree`'s farm (this bench's module from this checkout, unless `tree` has
    one of its own)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree.absolute()), str(ROOT)])}
    argv = [sys.executable, "-P", "-m", "bench.bench_explore_memory", "--child", "--corpus", args.corpus, "--module",
            args.module, "--out", str(out), "--per-round", str(args.per_round), "--rounds", str(args.rounds)]
    if args.vocab:
        argv += ["--vocab", args.vocab]
    res = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=3600)
    if res.returncode:
        raise SystemExit(f"{tree}: {res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.returncode}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--module")
    ap.add_argument("--vocab")
    ap.add_argument("--baseline-tree", help="a checkout of the code to compare against (required)")
    ap.add_argument("--per-round", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    if not args.baseline_tree:
        ap.error("--baseline-tree is required")
    if not args.module:
        from policytrain.units import corpus_units

        args.module = max(corpus_units(Path(args.corpus)), key=lambda u: u.bitcode.stat().st_size).name
    import numpy as np

    print_header()
    print(f"module {args.module}, budget {args.per_round} x {args.rounds}, group flips")
    with tempfile.TemporaryDirectory() as tmp:
        current = {"round": 0}

        def search(label: str, tree: Path) -> dict:
            got = run(tree, args, Path(tmp) / f"{label.replace(' ', '')}{current['round']}.npz")
            print(f"{label:>10}: peak {got['peak_mib']:8.0f} MiB, {got['wall_s']:6.1f} s, {got['compiles']} compiles, "
                  f".text {got['base']} -> {got['best']}, result arrays {got['data_mib']:.0f} MiB", flush=True)
            return got

        runs = compare.alternate({"baseline": lambda: search("baseline", Path(args.baseline_tree)),
                                  "this tree": lambda: search("this tree", ROOT)}, args.repeat, warmup=False,
                                 each_round=lambda r: current.update(round=r))
        for r in range(1, args.repeat + 1):
            a, b = (np.load(Path(tmp) / f"{x}{r}.npz") for x in ("baseline", "thistree"))
            same = sorted(a.files) == sorted(b.files) and all(np.array_equal(a[k], b[k]) for k in a.files)
            print(f"round {r}: same result: {same}")
        rows = compare.compare({k: [g["peak_mib"] for g in v] for k, v in runs.items()}, "baseline")
        print(f"peak ratio this tree / baseline: {rows['this tree'].ratio:.3f} (medians of {args.repeat}; "
              f"median of each round's ratio {rows['this tree'].paired:.3f})")


if __name__ == "__main__":
    main()
