"""Validation only: which departures from LLVM's decision grow code, and do the seeds' votes generalise better?

    PYTHONPATH=. .venv/bin/python bench/bench_policy_votes.py

Rebuilds the nightly's round-2 cloning data from the exploration cache (run the nightly first),
clones it with seeds 0-4, and replays each network on the validation packages (the evaluation
packages are never compiled) as it is, with departures in one direction only, and as a vote of
the five seeds. The numbers are in bench/README.md.
"""
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np

from farm.config import load_settings
from farm.toolchain import Toolchain
from policytrain.explore import ExploreCache, ReplayPolicy, compile_size
from policytrain.fanout import thread_fanout
from policytrain.improve import bc_dataset, fit_bc, geomean
from policytrain.recipes import RECIPES
from policytrain.trainer import Trainer, resolve_splits


class Vote(ReplayPolicy):
    """Depart from LLVM's decision where at least `k` members depart (in an allowed direction)."""
    def __init__(self, members, k, allow=((1, 0), (0, 1))):
        super().__init__(None)
        self.members, self.k, self.allow = members, k, set(allow)
    def decide(self, obs):
        d = super().decide(obs)
        x = np.asarray([self.rows[-1]])
        votes = sum(int((m.margin(x)[0] > 0) != bool(d)) for m in self.members)
        a = 1 - d if votes >= self.k and (d, 1 - d) in self.allow else d
        self.actions[-1] = a
        return a

s = load_settings()
tc = Toolchain.from_settings(s)
var = Path(s.var_dir)
rec = RECIPES["nightly"]
splits = resolve_splits(None, None, "", var, tc, rec)
t = Trainer(tc, splits, rec, thread_fanout(tc, ExploreCache.under(var), 2), progress=print)
units = [u for p in splits.train for u in p.units]
r1 = t.explore(None, units)
base1 = fit_bc(*bc_dataset(r1, rec.bc), replace(rec.bc, seed=0))
r2 = t.explore(base1, units)
data = bc_dataset(r1 + r2, rec.bc)
nets = [fit_bc(*data, replace(rec.bc, seed=sd)) for sd in range(5)]
print("fitted", flush=True)

def measure(make):
    ratios = {}
    for p in splits.validation:
        h = t.heuristic_sizes(p.units)
        with ThreadPoolExecutor(2) as ex:
            sz = list(ex.map(lambda u: compile_size(u, make(), tc)[0], p.units))
        both = [(a, b) for a, b in zip(h, sz, strict=True) if a and b]
        ratios[p.name] = sum(b for _, b in both) / sum(a for a, _ in both)
    return geomean(list(ratios.values())), max(ratios.values()), ratios

def show(name, make):
    g, w, r = measure(make)
    print(f"{name:<28} geomean {g:.4f} worst {w:.4f} ", {k: round(v, 4) for k, v in r.items()}, flush=True)

REFUSE = ((1, 0),)
for i, n in enumerate(nets):
    show(f"seed {i}", lambda n=n: Vote([n], 1))
    show(f"seed {i} refuse-only", lambda n=n: Vote([n], 1, REFUSE))
for k in (2, 3, 4, 5):
    show(f"{k} of 5 agree", lambda k=k: Vote(nets, k))
    show(f"{k} of 5 agree refuse-only", lambda k=k: Vote(nets, k, REFUSE))
