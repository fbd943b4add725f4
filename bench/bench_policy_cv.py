"""Cross-validation over whole training packages: how round-1 clones do on packages they never saw.

    .venv/bin/python -m bench.bench_policy_cv OUT.jsonl     # then: ... --summary OUT.jsonl

Five validation packages are too few to tell a policy that generalises from one that was lucky
on them, and the evaluation packages must not be looked at to choose. So the nine training
packages are split into three folds of whole packages; each fold's networks are cloned from the
other six packages' exploration from the heuristic (the nightly's round 1, read from the
exploration cache) with seeds 0-4, and measured on the fold's packages whole (every module, not
the 50 training samples). The networks trained on all nine are measured on validation. Each
network is measured as it is, sticking to LLVM's decision (stick 4), holding LLVM's "no"
(`hold_no` 50: it only refuses), and as the average of the five seeds (policytrain/mlp.py
`average`). The evaluation packages are never compiled. One JSON line per (fold, network);
`--summary` folds them per network over all 14 packages; a stopped run resumes where it stopped (the
(fold, network) pairs already in OUT are skipped). The numbers are in bench/README.md#bench_policy_cv.
"""
import argparse
import json
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from bench.harness.header import print_header
from bench.harness.policy import PolicyBench
from farm.numeric import geomean
from policytrain.improve import bc_dataset, fit_bc
from policytrain.mlp import average

SEEDS = range(5)


#: Every network measured per fold, by name: (seed, or None for the five averaged; stick; hold_no).
CANDIDATES = {**{f"seed{sd} stick{k:g} hold{h:g}": (sd, k, h) for sd in SEEDS for k in (0.0, 4.0) for h in (0.0, 50.0)},
              **{f"ens5 stick{k:g} hold{h:g}": (None, k, h) for k in (0.0, 2.0, 4.0) for h in (0.0, 50.0)}}


def candidates(nets, names):
    """The networks called `names` (keys of CANDIDATES), made from the five seeds' clones."""
    ens = average(nets)
    return {n: replace(ens if sd is None else nets[sd], stick=k, hold_no=h)
            for n, (sd, k, h) in CANDIDATES.items() if n in names}


def run(path: Path) -> None:
    pb = PolicyBench.load()
    print_header(pb.toolchain)
    t = pb.trainer("nightly")
    rec, splits = t.recipe, t.splits
    found = t.explore(None, [u for p in splits.train for u in p.units])
    owner = [p.name for p in splits.train for _ in p.units]
    names = [p.name for p in splits.train]
    done = {(json.dumps(r["fold"]), r["cand"]) for r in map(json.loads, path.open())} if path.exists() else set()
    with path.open("a") as out:
        for fold in [names[k::3] for k in range(3)] + [None]:  # None: all nine, measured on validation
            todo = [c for c in CANDIDATES if (json.dumps(fold), c) not in done]  # a stopped run resumes
            if not todo:
                continue
            test = splits.validation if fold is None else [pb.package(n) for n in fold]
            data = bc_dataset([m for m, o in zip(found, owner, strict=True) if fold is None or o not in fold], rec.bc)
            nets = [fit_bc(*data, replace(rec.bc, seed=sd)) for sd in SEEDS]
            for name, pol in candidates(nets, todo).items():
                ratios = {r["package"]: r["ratio"] for r in t.package_ratios(test, pol)}
                print(f"fold {fold or 'validation'} {name:<22} " + " ".join(f"{k} {v:.4f}" for k, v in ratios.items()),
                      flush=True)
                out.write(json.dumps({"fold": fold, "cand": name, "ratios": ratios}) + "\n")
                out.flush()


def summary(path: Path) -> None:
    by: dict[str, dict[str, float]] = defaultdict(dict)
    for line in path.open():
        row = json.loads(line)
        by[row["cand"]].update(row["ratios"])
    print(f"{'network':<22} {'packages':>8} {'geomean':>8} {'worst':>20} {'>1.005':>7} {'<0.9995':>8}")
    for cand, ratios in sorted(by.items(), key=lambda kv: kv[0].split(" ", 1)[::-1]):
        v = list(ratios.values())
        worst = max(ratios, key=ratios.get)
        print(f"{cand:<22} {len(v):>8} {geomean(v):>8.4f} "
              f"{worst + ' ' + format(ratios[worst], '.4f'):>20} {sum(x > 1.005 for x in v):>7} "
              f"{sum(x < 0.9995 for x in v):>8}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="JSON lines, appended")
    ap.add_argument("--summary", action="store_true", help="only summarise OUT")
    a = ap.parse_args()
    (summary if a.summary else run)(a.out)
