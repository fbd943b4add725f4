"""Benchmark: a policy build of a real corpus at -Oz against the heuristic build, in the same run.

Baseline: plain `clang -Oz -c` of every C file of a Debian source package, with the flags its
recipe gives (`--bitcode`: of every module of its corpus instead). Ours: the same compiles through
the policy launcher (Python start-up, FIFO pair, policy host and all) with the built-in
`heuristic` policy, by each entry point: the lean one (`python -I -S policyhost/cc_script.py`,
what `mlgo-farm policy-cc --print-launcher` prints and regression builds use), the console script
`mlgo-farm-cc` as a user types it, and the `mlgo-farm policy-cc` verb. With --model or --train,
an ONNX policy too (--train clones the heuristic on the package's corpus first), through the
launcher's shared server and through an explicit `policy serve --socket`. Runs alternate,
`--jobs` compiles at a time; prints per build the median wall-time ratio (target: within 1.3x; also
the median over rounds of the ratio to the same round's baseline run, steadier on a shared machine),
the CPU ratio (children, plus the policy server's CPU), the median host round trip per decision
(microseconds, from reading an observation to writing its advice) and the `.text` comparison.
The run's header gives the load average before, and it is printed again after: others share the cores.

    .venv/bin/python -m bench.bench_policy_build --package lua5.4 --repeat 3 --train
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.harness import MLGO_FARM, compare, corpora
from bench.harness.header import load, print_header
from bench.harness.loopback import end, until
from bench.harness.timing import Meter, Timing
from farm.toolchain import Toolchain, text_sizes
from workers import corpus
from workers.parallel import default_jobs


def build(commands: list[list[str]], jobs: int) -> tuple[Timing, list[int]]:
    """Run every compile, `jobs` at a time, like `make -j`; its timing (CPU: the compiles', steadier than wall time
    on a busy host) and the failed indices."""
    def one(cmd: list[str]) -> bool:
        return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0

    with Meter() as m, ThreadPoolExecutor(jobs) as pool:
        ok = list(pool.map(one, commands))
    return m.timing, [i for i, good in enumerate(ok) if not good]


def build_in_process(units: list[tuple[str, list[str]]], clang: str, out: Path, spec: str, jobs: int,
                     tc: Toolchain) -> tuple[Timing, list[float]]:
    """The same compiles through `run_compile` from one Python process (no interpreter start per compile)."""
    import threading

    from policyhost.launcher import run_compile
    from policyhost.published import load_policy

    local = threading.local()
    out.mkdir(exist_ok=True)

    def one(i: int) -> list[float]:
        if not hasattr(local, "policy"):
            local.policy = load_policy(spec)  # one loaded model per thread, as one per host process
        o = run_compile([clang, *units[i][1], "-o", str(out / f"{i}.o")], local.policy, toolchain=tc)
        if not o.ok:
            sys.exit(f"in-process compile failed: {o.error}")
        return o.response_times

    with Meter(include_self=True) as m, ThreadPoolExecutor(jobs) as pool:
        rts = [t for r in pool.map(one, range(len(units))) for t in r]
    return m.timing, rts


def sources(package: str, work: Path) -> list[tuple[str, list[str]]]:
    """(name, clang arguments without -o) per C file, as the package's recipe compiles it."""
    from workers import debsrc

    tree = debsrc.fetch_source(package, work / "debsrc")
    r = debsrc.recipe(package)
    return [(f"{sub}/{j.name}", [*j.args, "-c", str(j.source)])
            for sub in r.subdirs for j in corpus.jobs_from_directory(tree / sub, ("-Oz", "-g0", *r.flags))]


def server_pid(log: Path) -> int | None:
    """The pid a `policy serve` writes on its first line (`... (pid N)`)."""
    for line in log.read_text().splitlines() if log.is_file() else []:
        if "(pid " in line:
            return int(line.rsplit("(pid ", 1)[1].rstrip(")"))
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", default="lua5.4", help="Debian source package for the corpus")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=default_jobs())
    ap.add_argument("--work", type=Path, default=Path("var/bench"))
    ap.add_argument("--model", type=Path, help="an ONNX policy to benchmark besides the heuristic")
    ap.add_argument("--train", action="store_true", help="train a warm-start ONNX policy on the corpus first")
    ap.add_argument("--bitcode", action="store_true", help="compile the corpus bitcode instead of the C sources")
    ap.add_argument("--no-in-process", action="store_true", help="skip the in-process (run_compile) rows")
    args = ap.parse_args()

    from policyhost.cc import launcher_command
    from policyhost.host import process_tree_cpu

    tc = Toolchain.from_settings()
    print_header(tc)
    corpus_dir = corpora.debian_corpus(args.package, args.work, tc)
    if args.bitcode:
        units = [(m.name, ["-Oz", "-c", str(m.bitcode)]) for m in corpus.load(corpus_dir).modules]
    else:
        units = sources(args.package, args.work)
    out = Path(tempfile.mkdtemp(prefix="bench-policy-"))
    runtime = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))  # the launcher's shared servers, short path
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    clang = str(tc.path("clang"))
    # keep what the plain compiler builds (a recipe may name a file the package never compiles alone)
    _, failed = build([[clang, *a, "-o", "/dev/null"] for _, a in units], args.jobs)
    units = [u for i, u in enumerate(units) if i not in failed]

    def stats(tag: str) -> str:
        return str(out / f"{tag}.jsonl")

    # name -> (tag, launcher prefix or None); `policy` names the policy of a row for the in-process rows
    variants: dict[str, tuple[str, list[str] | None]] = {"heuristic (plain clang)": ("baseline", None)}
    variants["heuristic, lean launcher"] = ("lean", launcher_command("heuristic", stats=stats("lean")))
    variants["heuristic, mlgo-farm-cc"] = ("script", [MLGO_FARM + "-cc", "--policy", "heuristic", "--stats",
                                                      stats("script"), "--"])
    variants["heuristic, mlgo-farm policy-cc"] = ("verb", [MLGO_FARM, "policy-cc", "--policy", "heuristic",
                                                            "--stats", stats("verb"), "--"])
    if args.train:
        from policytrain import warmstart

        t0 = time.perf_counter()
        r = warmstart.train_from(corpus_dir, out / "bc.onnx", tc, seed=0, jobs=args.jobs)
        print(f"warm start: {r['decisions']} decisions from {r['modules']} modules in "
              f"{time.perf_counter() - t0:.1f}s; held-out agreement {r['heldout_agreement']:.3f} "
              f"(majority baseline {r['heldout_majority_baseline']:.3f}) on {r['heldout_decisions']} decisions")
        args.model = out / "bc.onnx"
    servers: dict[str, subprocess.Popen] = {}

    def serve(tag: str, policy: str) -> list[str]:
        """Start `policy serve` for `policy`; the launcher prefix that asks it."""
        sock = out / f"{tag}.sock"
        servers[tag] = subprocess.Popen([MLGO_FARM, "policy", "serve", "--policy", policy, "--socket", str(sock)],
                                        stdout=subprocess.DEVNULL)
        with contextlib.suppress(TimeoutError):
            until(lambda: sock.exists() or servers[tag].poll() is not None, 60, "policy serve socket", poll=0.05)
        if not sock.exists():
            sys.exit("policy serve did not start")
        return launcher_command(None, server=str(sock), stats=stats(tag))

    # the same decisions as the heuristic rows, asked over the socket: the server's own cost
    variants["heuristic, policy serve"] = ("hserved", serve("hserved", "heuristic"))
    if args.model:
        model = str(args.model.absolute())
        variants[f"onnx {args.model.name}, shared server"] = ("onnx", launcher_command(model, stats=stats("onnx")))
        variants[f"onnx {args.model.name}, policy serve"] = ("served", serve("served", model))

    def commands(tag: str, prefix: list[str] | None) -> list[list[str]]:
        (out / tag).mkdir(exist_ok=True)
        return [[*(prefix or []), clang, *a, "-o", str(out / tag / f"{i}.o")] for i, (_, a) in enumerate(units)]

    def server_pids(tag: str) -> list[int]:
        if tag in servers:
            return [servers[tag].pid]
        if tag == "onnx":
            return [p for log in runtime.glob("mlgo-farm-*/*.log") if (p := server_pid(log))]
        return []

    def timed_build(name: str) -> Timing:
        """One build of variant `name`, its CPU with the policy server's; the stats of the last run only kept."""
        tag, cmds = variants[name][0], runs[name]
        Path(stats(tag)).unlink(missing_ok=True)
        pids = server_pids(tag)
        server_cpu0 = sum(process_tree_cpu(p) for p in pids)
        took, failed = build(cmds, args.jobs)
        if failed:
            sys.exit(f"{name}: {len(failed)} compiles failed, first: {' '.join(cmds[failed[0]])}")
        return dataclasses.replace(took, cpu=took.cpu + sum(process_tree_cpu(p) for p in pids) - server_cpu0)

    runs = {name: commands(tag, prefix) for name, (tag, prefix) in variants.items()}
    # a warm-up round first: the page cache, the bytecode cache and the shared server
    timings = compare.alternate({name: functools.partial(timed_build, name) for name in runs}, args.repeat)
    for srv in servers.values():
        end(srv)
    for log in runtime.glob("mlgo-farm-*/*.log"):
        pid = server_pid(log)
        if pid and str(runtime).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():  # ours, still running
            os.kill(pid, signal.SIGTERM)
    in_process = {} if args.no_in_process else {"heuristic": "heuristic"}
    if args.model and not args.no_in_process:
        in_process[f"onnx {args.model.name}"] = str(args.model.absolute())
    ip_runs = compare.alternate({name: functools.partial(build_in_process, units, clang, out / f"ip{i}", spec,
                                                         args.jobs, tc)
                                 for i, (name, spec) in enumerate(in_process.items())}, args.repeat, warmup=False)

    base = "heuristic (plain clang)"
    base_objs = [out / "baseline" / f"{i}.o" for i in range(len(units))]
    base_size = sum(text_sizes(tc, base_objs).values())
    what = "corpus bitcode modules" if args.bitcode else "C files"
    print(f"{args.package}: {len(units)} {what}, -Oz, {args.jobs} jobs, {args.repeat} alternating runs")
    print(f"{'build':<38}{'median s':>10}{'ratio':>8}{'paired':>8}{'cpu ratio':>10}{'paired':>8}{'text bytes':>12}"
          f"{'size vs heur.':>15}{'identical':>11}{'decisions':>11}{'median rt us':>14}")

    base_walls, base_cpus = [t.wall for t in timings[base]], [t.cpu for t in timings[base]]

    def row(name: str, took: list[Timing], objs: list[Path], rts: list[float] | None) -> None:
        """Ratios of the medians, and medians of the ratios to the baseline run of the same round, wall and CPU."""
        walls, cpus = [t.wall for t in took], [t.cpu for t in took]
        size = sum(text_sizes(tc, objs).values())
        same = sum(a.read_bytes() == b.read_bytes() for a, b in zip(objs, base_objs, strict=True))
        decided = f"{len(rts):>11}{compare.median(rts) * 1e6 if rts else 0:>14.1f}" if rts is not None else ""
        print(f"{name:<38}{compare.median(walls):>10.3f}{compare.ratio(walls, base_walls):>8.2f}"
              f"{compare.paired(walls, base_walls):>8.2f}{compare.ratio(cpus, base_cpus):>10.2f}"
              f"{compare.paired(cpus, base_cpus):>8.2f}{size:>12}"
              f"{(size - base_size) / base_size:>+14.2%} {same:>5}/{len(objs):<5}{decided}")

    for name, (tag, prefix) in variants.items():
        objs = [out / tag / f"{j}.o" for j in range(len(units))]
        rts = None
        if prefix is not None:
            lines = [json.loads(ln) for ln in Path(stats(tag)).read_text().splitlines()]
            rts = [t for s in lines for t in s["response_times"]]
        row(name, timings[name], objs, rts)
    for i, (name, got) in enumerate(ip_runs.items()):
        objs = [out / f"ip{i}" / f"{j}.o" for j in range(len(units))]
        row(name + " in-process", [t for t, _ in got], objs, got[-1][1])  # the round trips of the last run
    print("target: policy build within 1.3x of the heuristic build's wall time; 'paired': median over rounds of "
          "the ratio to that round's baseline run (steadier when other jobs load the machine)")
    print("in-process rows: run_compile from one Python process, i.e. the host's own cost without the "
          "per-compile interpreter start-up")
    print(f"load after: {load()}")
    shutil.rmtree(out)
    shutil.rmtree(runtime, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
