"""What exploration finds on training modules: single flips against group flips, with the same budget.

    .venv/bin/python -m bench.bench_policy_search --per-package 5 [--budget 16,2]

Both search LLVM's heuristic trajectory of the same modules (the first `--per-package` of each declared training
package's nightly sample, by name hash) with the same budget: `Budget(16, 2)` flips one step at a time, as the
nightly did until 2026-11-26; `Budget(16, 2, groups=True)` also holds every later call of the flipped step's callee
to the flipped action (policytrain/explore.py). Baseline: the heuristic's own `.text`, the same compile. The
searches are cached where the trainer caches them, so a module the nightly already searched costs nothing here.
What a search finds is what cloning can learn from, not what a policy wins on unseen code: that is
bench_policy_training.py's table. The numbers are in bench/README.md#bench_policy_search.
"""
import argparse

from bench.harness.header import print_header
from bench.harness.policy import PolicyBench
from policytrain.explore import ModuleResult
from policytrain.params import Budget
from policytrain.splitdata import SPLITS
from workers.corpusdir import sample_names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-package", type=int, default=5)
    ap.add_argument("--budget", default="16,2", help="flips per round, rounds")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    pb = PolicyBench.load(args.jobs)
    print_header(pb.toolchain)
    per_round, rounds = (int(x) for x in args.budget.split(","))
    units = []
    for name in SPLITS["train"]:
        pkg = pb.package(name, 50)
        keep = sample_names((u.name for u in pkg.units), args.per_package)
        units += [u for u in pkg.units if u.name in keep]
    rows = {}
    for label, groups in (("single flips", False), ("group flips", True)):
        budget = Budget(per_round, rounds, groups=groups).as_json()
        items = [{"unit": u.as_json(), "base": None, "budget": budget} for u in units]
        found = [ModuleResult.from_json(r) for r in pb.fanout("explore", items)]
        rows[label] = {r.name: r for r in found if r.best_size is not None}
    names = set.intersection(*(set(r) for r in rows.values()))
    base = sum(rows["single flips"][n].base_size for n in names)
    print(f"{len(names)} modules of {len(SPLITS['train'])} training packages, heuristic .text {base:,} bytes, "
          f"budget {per_round} x {rounds}")
    for label, found in rows.items():
        best = sum(found[n].best_size for n in names)
        smaller = sum(found[n].best_size < found[n].base_size for n in names)
        print(f"{label:13} {smaller:4} smaller  {100 * (best - base) / base:+.3f} % .text")
    either = sum(min(r[n].best_size for r in rows.values()) for n in names)
    print(f"{'either':13}       {100 * (either - base) / base:+.3f} % .text")


if __name__ == "__main__":
    main()
