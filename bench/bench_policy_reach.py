"""Which departures from LLVM's decision a trained policy may keep: all, or only those near LLVM's own threshold.

    .venv/bin/python -m bench.bench_policy_reach MODEL.npz --packages xz-utils,jansson --reach 10,30,inf

Exploration's first search from the heuristic (the nightly's, 3,251 flips) says where flipping LLVM's
decision helps: an inline LLVM refuses although its cost estimate is over 1,000 below the threshold
helped 13 times in 16; one 100-1,000 above it helped 1.4 % of the time, and those flips cost 229,062 bytes
in all (over 1,000 above: never, 354,474 bytes); refusing an inline LLVM makes over 1,000 below the
threshold (a last call to a static function) helped 2.5 % of the time. A network extrapolates to such
states on code it never saw. `reach` keeps a departure only where `|cost_estimate - threshold| <= reach`
(with `--adds-only` it limits only the inlines LLVM refuses and keeps every refusal), so no kept
departure is far from a decision LLVM's cost model calls close. With `--above` it limits only the inlines LLVM
refuses whose estimate is more than `reach` above the threshold: the adds far below it, which helped, are kept.
With `--below` it limits only the refusals of inlines LLVM makes whose estimate is more than `reach` below it.
The policy is replayed on the named packages (never training packages), each module compiled once
with the heuristic and once per reach; the numbers are in bench/README.md#bench_policy_reach.
"""
import argparse
import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from bench.harness.header import print_header
from bench.harness.policy import PolicyBench
from farm.numeric import geomean
from policytrain import mlp_io
from policytrain.explore import ReplayPolicy
from policytrain.mlp import Mlp


class Reach(ReplayPolicy):
    """The network's decision where it is within `reach` of LLVM's threshold, LLVM's decision elsewhere."""

    def __init__(self, net: Mlp, reach: float, adds_only: bool = False) -> None:
        super().__init__(None)
        self.net, self.reach, self.adds_only = net, reach, adds_only

    def decide(self, obs):
        d = super().decide(obs)
        row = self.rows[-1]
        gap = row[self.names.index("cost_estimate")] - row[self.names.index("threshold")]
        a = int(self.net.margin(np.asarray([row]))[0] > 0)
        if abs(gap) > self.reach and (d == 0 or not self.adds_only):
            a = d
        self.actions[-1] = a
        return a


def limited(net: Mlp, reach: float, adds_only: bool, side: str | None) -> ReplayPolicy:
    """The policy one column measures: `--above` is the network with the guard it ships with (Mlp.guard), `--below`
    with the floor (Mlp.floor): the same mechanisms, so the column is what such a network publishes; otherwise a
    `Reach`."""
    if side is not None:
        return ReplayPolicy(replace(net, **{side: reach if math.isfinite(reach) else None}))
    return Reach(net, reach, adds_only)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path, help="a trained policy's .npz")
    ap.add_argument("--packages", required=True, help="comma-separated packages, none of them trained on")
    ap.add_argument("--reach", default="10,30,100,inf")
    ap.add_argument("--adds-only", action="store_true", help="limit only the inlines LLVM refuses (keep every refusal)")
    ap.add_argument("--below", action="store_true",
                    help="limit only refusals of inlines LLVM makes with an estimate over `reach` BELOW the threshold")
    ap.add_argument("--above", action="store_true",
                    help="limit only the inlines LLVM refuses whose estimate is over `reach` ABOVE the threshold")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    pb = PolicyBench.load(a.jobs, cached=False)
    print_header(pb.toolchain)
    net = mlp_io.load(a.model)
    pkgs = [pb.package(n) for n in a.packages.split(",")]
    t = pb.trainer(None)
    reaches = [float(r) for r in a.reach.split(",")]
    side = "guard" if a.above else "floor" if a.below else None
    table = {}
    for p in pkgs:
        row = [pb.replay_ratio(t, p.units, lambda r=r: limited(net, r, a.adds_only, side)) for r in reaches]
        table[p.name] = row
        print(f"{p.name:<14}" + "".join(f" {v:8.5f}" for v in row), flush=True)
    cols = list(zip(*table.values(), strict=True))
    print(f"{'reach':<14}" + "".join(f" {r:8g}" if math.isfinite(r) else f" {'all':>8}" for r in reaches))
    print(f"{'geomean':<14}" + "".join(f" {geomean(c):8.5f}" for c in cols))
    print(f"{'worst':<14}" + "".join(f" {max(c):8.5f}" for c in cols))


if __name__ == "__main__":
    main()
