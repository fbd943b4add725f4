"""Headroom before training, per regime: what the search finds on training packages, judged by what the linker ships.

    .venv/bin/python -m bench.bench_headroom --packages spdlog,leveldb [--thinlto] [--rewards linked,per-object]
        [--budget 16,2]

Every module a package ships is searched from LLVM's heuristic with the nightly's budget and group flips, paid by one
reward or several: `linked`, what the module adds to its package's linked files (policytrain/units.py `Unit.shared`:
a COMDAT group another module carries counts nothing), and `per-object`, its object's whole Berkeley `.text`
(ml-compiler-opt's reward). Then the package is built with each search's best trajectory in every module and linked
as workers/data/shipped.toml says (workers/linked.py). `--thinlto`: the packages as distributed ThinLTO builds
(workers/thinlto.py), the search in the backends. Baseline: the heuristic's build of the same modules, compiled and
linked in the same run (the ThinLTO heuristic with --thinlto). Per package and reward it prints the linked files and
the sum of shipped objects against the heuristic's, how many modules changed and what the search believed it saved
by its own measure; then the geomean of the linked ratios per reward. A search's best is not a policy: it is what the
regime leaves for a policy to win on the code it trains on. The numbers are in bench/README.md#bench_headroom.
"""
import argparse
import tempfile
from dataclasses import replace
from pathlib import Path

from bench.harness.header import print_header
from bench.harness.policy import PolicyBench
from farm.numeric import geomean
from farm.toolchain import text_sizes
from policytrain.corpora import package_corpus
from policytrain.explore import ModuleResult, ReplayPolicy, compile_object
from policytrain.params import Budget
from workers.linked import link


def build(pb: PolicyBench, pkg, flips: dict[str, list[int]]) -> tuple[int, int]:
    """The package compiled with each module's flips (none: the heuristic) and group flips: (shipped objects'
    `.text`, the linked files' `.text`)."""
    with tempfile.TemporaryDirectory(prefix="bench-headroom-") as tmp:
        objs: dict[str, Path | None] = {}
        for i, u in enumerate(pkg.units):
            obj = Path(tmp) / f"{i}.o"
            err = compile_object(u, ReplayPolicy(None, flips.get(u.name, ()), None, True), pb.toolchain, obj)
            objs[u.name] = None if err else obj
        sizes = text_sizes(pb.toolchain, [o for o in objs.values() if o is not None])
        shipped = sum(sizes[o] for o in objs.values() if o is not None)
        linked = link(pkg.name, pkg.outputs, objs, Path(tmp) / "out", pb.toolchain).text
    return shipped, linked


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packages", required=True, help="comma-separated training packages (splits.toml)")
    ap.add_argument("--thinlto", action="store_true", help="the ThinLTO regime (default: each file alone)")
    ap.add_argument("--rewards", default="linked", help="comma-separated: linked, per-object")
    ap.add_argument("--budget", default="16,2", help="flips per round, rounds")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    pb = PolicyBench.load(args.jobs)
    print_header(pb.toolchain)
    per_round, rounds = (int(x) for x in args.budget.split(","))
    budget = Budget(per_round, rounds, groups=True)
    rewards = [r.strip() for r in args.rewards.split(",") if r.strip()]
    trainer = pb.trainer(None)
    regime = "ThinLTO" if args.thinlto else "per file"
    ratios: dict[str, list[float]] = {r: [] for r in rewards}
    for name in (n.strip() for n in args.packages.split(",") if n.strip()):
        pkg = package_corpus(name, pb.var, pb.toolchain, thinlto=args.thinlto)
        if pkg.shipped is not None:  # what the linked files are made of: tests and examples are not searched
            pkg = replace(pkg, units=tuple(u for u in pkg.units if u.name in pkg.shipped))
        linked_units = trainer.linked_units([pkg])
        base_objects, base_linked = build(pb, pkg, {})
        print(f"{name} ({regime}): {len(pkg.units)} modules, {sum(1 for u in linked_units if u.shared)} share COMDAT "
              f"groups with another; heuristic objects {base_objects:,}, linked {base_linked:,}; budget {per_round} x "
              f"{rounds}, group flips", flush=True)
        for reward in rewards:
            units = linked_units if reward == "linked" else pkg.units
            items = [{"unit": u.as_json(), "base": None, "budget": budget.as_json()} for u in units]
            found = [ModuleResult.from_json(r) for r in pb.fanout("explore", items)]
            claimed = sum((r.base_size or 0) - (r.best_size or 0) for r in found) / max(
                1, sum(r.base_size or 0 for r in found))
            flips = {r.name: r.flips for r in found if r.flips}
            objects, linked = build(pb, pkg, flips)
            ratios[reward].append(linked / base_linked)
            print(f"  {reward:11} linked {linked / base_linked:.4f}x  objects {objects / base_objects:.4f}x  "
                  f"({len(flips)} modules changed; the search believed -{100 * claimed:.2f} % by its own measure)",
                  flush=True)
    for reward, rs in ratios.items():
        print(f"geomean {reward:11} linked {geomean(rs):.4f}x over {len(rs)} package(s) ({regime})")


if __name__ == "__main__":
    main()
