"""The master under anonymous load on its farm dashboard: many concurrent vocabulary diff pages, then many
concurrent downloads of one large object, each with the master's REST API polled meanwhile.

A real Buildbot master (no worker) on loopback serves the farm's dashboard from an embedded store holding
two IR vocabulary versions (LLVM 22's own entity names, dimension 300) and a policy whose model is a
52 MB object. Phase 1 sends N_DIFF concurrent anonymous GETs of `vocab/ir/diff`; phase 2 starts N_DL
concurrent downloads of the 52 MB model (each read to the end in 64 KiB reads). During each phase a
thread times `GET api/v2/masters` every 0.1 s (the REST latency anyone using the web UI sees). Printed
per phase: wall time, master CPU seconds, master RSS (peak sampled every 0.1 s, and VmHWM), REST latency
median and max, and the status codes.

    .venv/bin/python -m bench.bench_dashboard_load [N_DIFF] [N_DL]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import http.client
import json
import multiprocessing
import os
import statistics
import subprocess
import threading
import time
from pathlib import Path

import numpy as np

from bench.harness.header import print_header
from bench.harness.loopback import scratch_farm, until
from farm.config import DASHBOARD_PATH, load_settings
from farm.objectstore import FileStore
from farm.vocabfile import dumps
from master import control
from vocabgen.layout import build_vocab

LLVM_IR2VEC = "/usr/lib/llvm-22/bin/llvm-ir2vec"
V1, V2 = "20260101-llvm22.1.8-ir-d300-aaaaaaaaaaaa", "20260201-llvm22.1.8-ir-d300-bbbbbbbbbbbb"
BIG = "20260301-llvm22.1.8-inline-ir2vec-cccccccccccc"
BIG_MB = 52


def entity_names(tmp: Path) -> list[str]:
    out = tmp / "entities.txt"
    subprocess.run([LLVM_IR2VEC, "entities", "-o", str(out)], check=True, capture_output=True)
    return [line.split("\t")[0] for line in out.read_text().splitlines()[1:] if line]


def populate(root: Path, names: list[str]) -> None:
    store = FileStore(root)
    rng = np.random.default_rng(0)
    entries = []
    for version, when in ((V1, "2026-01-01T00:00:00Z"), (V2, "2026-02-01T00:00:00Z")):
        data = dumps(build_vocab("ir", names, rng.normal(size=(len(names), 300))))
        digest = hashlib.sha256(data).hexdigest()
        m = {"format": 1, "kind": "ir", "version": version, "sha256": digest, "dimension": 300,
             "published_at": when, "coverage": {}}
        store.put(f"vocab/ir/{version}/vocab.json", data)
        store.put(f"vocab/ir/{version}/manifest.json", json.dumps(m).encode())
        entries.append({"kind": "ir", "version": version, "sha256": digest, "dimension": 300,
                        "state": "latest" if version == V2 else "superseded", "published_at": when})
    store.put("vocab/index.json", json.dumps({"format": 1, "versions": entries}).encode())
    store.put("vocab/ir/latest.json", json.dumps({"kind": "ir", "version": V2}).encode())
    big = rng.bytes(BIG_MB * 1024 * 1024)
    store.put(f"policies/inline/{BIG}/model.onnx", big)
    store.put(f"policies/inline/{BIG}/manifest.json",
              json.dumps({"version": BIG, "sha256": hashlib.sha256(big).hexdigest()}).encode())


def proc_stat(pid: int) -> tuple[float, int, int]:
    """CPU seconds (user + system), RSS and VmHWM in bytes of process `pid`."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return cpu, int(status["VmRSS"].split()[0]) * 1024, int(status["VmHWM"].split()[0]) * 1024


def get(port: int, path: str, chunked_read: bool = False) -> tuple[int, int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        n = 0
        if chunked_read:
            while chunk := resp.read(65536):
                n += len(chunk)
        else:
            n = len(resp.read())
        return resp.status, n
    finally:
        conn.close()


def poll_rest(port: int, stop, out) -> None:
    """In its own process (the load's client threads would otherwise delay it on this process's GIL)."""
    rest = []
    while not stop.is_set():
        t = time.perf_counter()
        status, _ = get(port, "/api/v2/masters")
        rest.append(time.perf_counter() - t)
        assert status == 200, status
        stop.wait(0.1)
    out.put(rest)


def phase(name: str, pid: int, port: int, paths: list[str], chunked_read: bool = False, size: int = 0) -> None:
    cpu0, _, _ = proc_stat(pid)
    stop = threading.Event()
    rss_peak = [0]

    def sample_rss() -> None:
        while not stop.is_set():
            rss_peak[0] = max(rss_peak[0], proc_stat(pid)[1])
            stop.wait(0.1)

    mp_stop, mp_out = multiprocessing.Event(), multiprocessing.Queue()
    poller = multiprocessing.Process(target=poll_rest, args=(port, mp_stop, mp_out))
    poller.start()
    sampler = threading.Thread(target=sample_rss)
    sampler.start()
    t = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(len(paths)) as pool:
        results = list(pool.map(lambda p: get(port, p, chunked_read), paths))
    wall = time.perf_counter() - t
    stop.set()
    mp_stop.set()
    rest = mp_out.get(timeout=120)
    poller.join()
    sampler.join()
    assert not size or all(n == size for _, n in results), "a download came out short"
    cpu1, rss, hwm = proc_stat(pid)
    codes: dict[int, int] = {}
    for status, _ in results:
        codes[status] = codes.get(status, 0) + 1
    mib = 1024 * 1024
    print(f"{name}: {len(paths)} requests in {wall:.1f} s, master CPU {cpu1 - cpu0:.1f} s, "
          f"RSS peak {rss_peak[0] / mib:.0f} MiB (VmHWM {hwm / mib:.0f}, after {rss / mib:.0f}), "
          f"REST latency median {statistics.median(rest) * 1000:.0f} ms max {max(rest) * 1000:.0f} ms "
          f"({len(rest)} polls), status {codes}")
    if os.environ.get("BENCH_VERBOSE"):
        print("  REST latencies (ms):", [round(x * 1000) for x in rest])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n_diff", nargs="?", type=int, default=400, help="concurrent vocabulary diffs (default 400)")
    ap.add_argument("n_dl", nargs="?", type=int, default=50, help="concurrent downloads (default 50)")
    args = ap.parse_args()
    n_diff, n_dl = args.n_diff, args.n_dl
    tmp, port = scratch_farm("mlgo-bench-dash-")
    s = load_settings()
    print_header()
    populate(s.var_dir / "store", entity_names(tmp))
    control.start(s)
    try:
        pid = control.running(s)
        dash = "/" + DASHBOARD_PATH
        until(lambda: get(port, dash + "vocab/")[0] == 200, 60, "dashboard")
        _, rss0, _ = proc_stat(pid)
        print(f"master RSS at rest: {rss0 / 1024 / 1024:.0f} MiB")
        phase(f"{n_diff} concurrent vocabulary diffs", pid, port, [f"{dash}vocab/ir/diff?a={V1}&b={V2}"] * n_diff)
        phase(f"{n_dl} concurrent {BIG_MB} MB downloads", pid, port,
              [f"{dash}store/policies/inline/{BIG}/model.onnx"] * n_dl, chunked_read=True, size=BIG_MB << 20)
    finally:
        control.stop(s)


if __name__ == "__main__":
    main()
