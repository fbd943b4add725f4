"""Per-object against linked reward on one C++ training package: what each search follows, and what the linker ships.

    .venv/bin/python -m bench.bench_linked_reward --package leveldb [--budget 16,2] [--most 40]

Every module the package ships (or `--most` of them, by name hash; the package is linked only when all are searched)
is searched from LLVM's heuristic twice with the same budget and group flips, as the nightly searches: once paid by
its object's whole Berkeley `.text` (the per-object reward, ml-compiler-opt's), once by what it adds to the package's
linked files (policytrain/units.py `Unit.shared`: a COMDAT group another module carries counts nothing). Then the
package is built with each search's best trajectory in every module and linked as workers/data/shipped.toml says
(workers/linked.py). Baseline: the heuristic's build of the same modules, compiled and linked in the same run. Per
search it prints the saving the search believed it found (its own measure), the sum of shipped objects and the
linked files against the heuristic's, and how many modules it changed. The numbers are in
bench/README.md#bench_linked_reward.
"""
import argparse
import tempfile
from dataclasses import replace
from pathlib import Path

from bench.harness.header import print_header
from bench.harness.policy import PolicyBench
from farm.toolchain import text_sizes
from policytrain.explore import Budget, ModuleResult, ReplayPolicy, compile_object
from workers.corpusdir import sample_names
from workers.linked import link


def build(pb: PolicyBench, pkg, flips: dict[str, list[int]], groups: bool) -> tuple[int, int | None]:
    """The package compiled with each module's flips (none: the heuristic): (shipped objects' `.text`, the linked
    files' `.text` or None when not every module was built)."""
    with tempfile.TemporaryDirectory(prefix="bench-linked-") as tmp:
        objs: dict[str, Path | None] = {}
        for i, u in enumerate(pkg.units):
            obj = Path(tmp) / f"{i}.o"
            err = compile_object(u, ReplayPolicy(None, flips.get(u.name, ()), None, groups), pb.toolchain, obj)
            objs[u.name] = None if err else obj
        sizes = text_sizes(pb.toolchain, [o for o in objs.values() if o is not None])
        shipped = sum(sizes[o] for n, o in objs.items() if o is not None and (pkg.shipped is None or n in pkg.shipped))
        linked = link(pkg.name, pkg.outputs, objs, Path(tmp) / "out", pb.toolchain).text if pkg.outputs else None
    return shipped, linked


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", required=True, help="a C++ training package (policytrain/data/splits.toml)")
    ap.add_argument("--budget", default="16,2", help="flips per round, rounds")
    ap.add_argument("--most", type=int, default=None, help="search only this many modules (by name hash)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    pb = PolicyBench.load(args.jobs)
    print_header(pb.toolchain)
    pkg = pb.package(args.package)
    if pkg.shipped is not None:  # what the linked files are made of: tests and examples are neither searched nor built
        pkg = replace(pkg, units=tuple(u for u in pkg.units if u.name in pkg.shipped))
    if args.most:
        keep = sample_names((u.name for u in pkg.units), args.most)
        pkg = replace(pkg, units=tuple(u for u in pkg.units if u.name in keep), outputs=())
    per_round, rounds = (int(x) for x in args.budget.split(","))
    budget = Budget(per_round, rounds, groups=True)
    trainer = pb.trainer(None)
    linked_units = trainer.linked_units([pkg])
    print(f"{pkg.name}: {len(pkg.units)} modules, {sum(1 for u in linked_units if u.shared)} share COMDAT groups with "
          f"another module; budget {per_round} x {rounds}, group flips")
    base_objects, base_linked = build(pb, pkg, {}, True)
    print(f"{'heuristic':16} objects {base_objects:>10,}  linked "
          + (f"{base_linked:>10,}" if base_linked is not None else "         -"))
    for label, units in (("per-object", pkg.units), ("linked", linked_units)):
        items = [{"unit": u.as_json(), "base": None, "budget": budget.as_json()} for u in units]
        found = [ModuleResult.from_json(r) for r in pb.fanout("explore", items)]
        claimed = sum((r.base_size or 0) - (r.best_size or 0) for r in found) / max(1, sum(r.base_size or 0
                                                                                        for r in found))
        flips = {r.name: r.flips for r in found if r.flips}
        objects, linked = build(pb, pkg, flips, True)
        lr = "      -" if linked is None or base_linked is None else f"{linked / base_linked:.4f}x"
        print(f"{label:16} objects {objects / base_objects:.4f}x  linked {lr}  ({len(flips)} modules changed; the "
              f"search believed -{100 * claimed:.2f} % by its own measure)")


if __name__ == "__main__":
    main()
