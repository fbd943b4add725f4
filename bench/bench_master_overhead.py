"""How much a Buildbot build adds to a farm verb: `mlgo-farm toolchain` run directly (baseline)
versus forced through a real master and worker on loopback (farm-selftest), same run, same machine.

Usage: PYTHONPATH=. .venv/bin/python bench/bench_master_overhead.py [N]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from farm.config import load_settings
from master import buildbot_worker, control
from master.rest import MasterAPI
from tests.servers import free_port


def main(n: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="mlgo-bench-"))
    (tmp / "empty.toml").write_text("")
    os.environ.update({
        "MLGO_FARM_PATHS_VAR_DIR": str(tmp / "var"), "MLGO_FARM_CONFIG": str(tmp / "empty.toml"),
        "MLGO_FARM_BUILDBOT_WWW_PORT": str(free_port()), "MLGO_FARM_BUILDBOT_PB_PORT": str(free_port()),
    })
    exe = str(Path(sys.executable).with_name("mlgo-farm"))
    direct = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([exe, "-v", "toolchain"], check=True, capture_output=True)
        direct.append(time.perf_counter() - t)

    s = load_settings()
    control.start(s)
    wdir = buildbot_worker.create(s)
    try:
        buildbot_worker.start(s, wdir)
        api = MasterAPI.for_settings(s)
        api.wait_workers(["local"], 60)
        via = []
        for _ in range(n):
            t = time.perf_counter()
            api.force("farm-selftest")
            api.wait_idle(120, poll=0.02)
            via.append(time.perf_counter() - t)
        assert all(b.ok for b in api.builds_after(0))
    finally:
        buildbot_worker.stop(s, wdir)
        control.stop(s)
    d, v = statistics.median(direct), statistics.median(via)
    print(f"direct `mlgo-farm toolchain`: median {d * 1000:.0f} ms over {n}")
    print(f"forced build (farm-selftest): median {v * 1000:.0f} ms over {n}")
    print(f"ratio build/direct: {v / d:.2f}x (overhead {1000 * (v - d):.0f} ms per build)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
