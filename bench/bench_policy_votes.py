"""Validation only: which departures from LLVM's decision grow code, and do the seeds' votes generalise better?

    .venv/bin/python -m bench.bench_policy_votes [--jobs 2]

Rebuilds the nightly's round-2 cloning data from the exploration cache (run the nightly first),
clones it with seeds 0-4, and replays each network on the validation packages (the evaluation
packages are never compiled) as it is, with departures in one direction only, and as a vote of
the five seeds. The numbers are in bench/README.md#bench_policy_votes.
"""
import argparse
from dataclasses import replace

import numpy as np

from bench.harness.header import print_header
from bench.harness.policy import PolicyBench
from farm.numeric import geomean
from policytrain.explore import ReplayPolicy
from policytrain.improve import bc_dataset, fit_bc

#: departures allowed in one direction only: refusing an inline LLVM makes
REFUSE = ((1, 0),)


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    pb = PolicyBench.load(args.jobs)
    print_header(pb.toolchain)
    t = pb.trainer("nightly")
    rec, splits = t.recipe, t.splits
    units = [u for p in splits.train for u in p.units]
    r1 = t.explore(None, units)
    base1 = fit_bc(*bc_dataset(r1, rec.bc), replace(rec.bc, seed=0))
    r2 = t.explore(base1, units)
    data = bc_dataset(r1 + r2, rec.bc)
    nets = [fit_bc(*data, replace(rec.bc, seed=sd)) for sd in range(5)]
    print("fitted", flush=True)

    def show(name, make):
        ratios = {p.name: pb.replay_ratio(t, p.units, make) for p in splits.validation}
        print(f"{name:<28} geomean {geomean(list(ratios.values())):.4f} worst {max(ratios.values()):.4f} ",
              {k: round(v, 4) for k, v in ratios.items()}, flush=True)

    for i, n in enumerate(nets):
        show(f"seed {i}", lambda n=n: Vote([n], 1))
        show(f"seed {i} refuse-only", lambda n=n: Vote([n], 1, REFUSE))
    for k in (2, 3, 4, 5):
        show(f"{k} of 5 agree", lambda k=k: Vote(nets, k))
        show(f"{k} of 5 agree refuse-only", lambda k=k: Vote(nets, k, REFUSE))


if __name__ == "__main__":
    main()
