"""How much a Buildbot build adds to a farm verb: `mlgo-farm toolchain` run directly (baseline)
versus forced through a real master and worker on loopback (farm-selftest), alternated, same machine.

    .venv/bin/python -m bench.bench_master_overhead [N]
"""

from __future__ import annotations

import argparse
import subprocess
import time

from bench.harness import MLGO_FARM, compare
from bench.harness.header import print_header
from bench.harness.loopback import scratch_farm
from farm.config import load_settings
from master import buildbot_worker, control
from master.rest import MasterAPI


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=10, help="alternated runs of each (default 10)")
    args = ap.parse_args()
    scratch_farm("mlgo-bench-")
    s = load_settings()
    print_header()

    def direct() -> float:
        t = time.perf_counter()
        subprocess.run([MLGO_FARM, "-v", "toolchain"], check=True, capture_output=True)
        return time.perf_counter() - t

    control.start(s)
    wdir = buildbot_worker.create(s)
    try:
        buildbot_worker.start(s, wdir)
        api = MasterAPI.for_settings(s)
        api.wait_workers(["local"], 60)

        def forced() -> float:
            t = time.perf_counter()
            api.force("farm-selftest")
            api.wait_idle(120, poll=0.02)
            return time.perf_counter() - t

        runs = compare.alternate({"direct": direct, "build": forced}, args.n)
        assert all(b.ok for b in api.builds_after(0))
    finally:
        buildbot_worker.stop(s, wdir)
        control.stop(s)
    rows = compare.compare(runs, "direct")
    d, v = rows["direct"].median, rows["build"].median
    print(f"direct `mlgo-farm toolchain`: median {d * 1000:.0f} ms over {args.n}")
    print(f"forced build (farm-selftest): median {v * 1000:.0f} ms over {args.n}")
    print(f"ratio build/direct: {rows['build'].ratio:.2f}x, median of each round's ratio {rows['build'].paired:.2f}x "
          f"(overhead {1000 * (v - d):.0f} ms per build)")


if __name__ == "__main__":
    main()
