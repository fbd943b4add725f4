"""Benchmark: a policy build of a real corpus at -Oz against the heuristic build, in the same run.

Baseline: plain `clang -Oz -c` of every C file of a Debian source package, with the flags its
recipe gives (`--bitcode`: of every module of its corpus instead). Ours: the same compiles
through the launcher, `mlgo-farm policy-cc ... -- clang ...` (Python start-up, FIFO pair, policy
host and all), with the built-in `heuristic` policy and, with --model or --train, an ONNX policy
(--train clones the heuristic on the package's corpus first), loaded per compile and through one
shared `policy serve`. Runs alternate, `--jobs` compiles at a time; prints the median wall-time
ratio per policy (target: within 1.3x), the median host round trip per decision (microseconds,
from reading an observation to writing its advice), and the `.text` comparison.

    .venv/bin/python bench/bench_policy_build.py --package lua5.4 --repeat 3 --train
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from farm.toolchain import Toolchain
from workers import corpus
from workers.parallel import default_jobs

MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))


def cpu_seconds(include_self: bool = False) -> float:
    """User+system CPU of finished children (and of this process): steadier than wall time on a busy host."""
    who = [resource.RUSAGE_CHILDREN] + ([resource.RUSAGE_SELF] if include_self else [])
    return sum(r.ru_utime + r.ru_stime for r in map(resource.getrusage, who))


CPU: dict[str, list[float]] = {}


def build(commands: list[list[str]], jobs: int, tag: str = "") -> tuple[float, list[int]]:
    """Run every compile, `jobs` at a time, like `make -j`; wall seconds and the failed indices."""
    def one(cmd: list[str]) -> bool:
        return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0

    start, cpu0 = time.perf_counter(), cpu_seconds()
    with ThreadPoolExecutor(jobs) as pool:
        ok = list(pool.map(one, commands))
    CPU.setdefault(tag, []).append(cpu_seconds() - cpu0)
    return time.perf_counter() - start, [i for i, good in enumerate(ok) if not good]


def build_in_process(units: list[tuple[str, list[str]]], clang: str, out: Path, spec: str, jobs: int,
                     tc: Toolchain) -> tuple[float, list[float]]:
    """The same compiles through `run_compile` from one Python process (no interpreter start per compile)."""
    import threading

    from regression.launcher import run_compile
    from regression.policies import load_policy

    local = threading.local()
    out.mkdir(exist_ok=True)

    def one(i: int) -> list[float]:
        if not hasattr(local, "policy"):
            local.policy = load_policy(spec)  # one loaded model per thread, as one per host process
        o = run_compile([clang, *units[i][1], "-o", str(out / f"{i}.o")], local.policy, toolchain=tc)
        if not o.ok:
            sys.exit(f"in-process compile failed: {o.error}")
        return o.response_times

    start, cpu0 = time.perf_counter(), cpu_seconds(include_self=True)
    with ThreadPoolExecutor(jobs) as pool:
        rts = [t for r in pool.map(one, range(len(units))) for t in r]
    CPU.setdefault(f"{spec} in-process", []).append(cpu_seconds(include_self=True) - cpu0)
    return time.perf_counter() - start, rts


def sources(package: str, work: Path) -> list[tuple[str, list[str]]]:
    """(name, clang arguments without -o) per C file, as the package's recipe compiles it."""
    from workers import debsrc

    tree = debsrc.fetch_source(package, work / "debsrc")
    r = debsrc.recipe(package)
    return [(f"{sub}/{j.name}", [*j.args, "-c", str(j.source)])
            for sub in r.subdirs for j in corpus.jobs_from_directory(tree / sub, ("-Oz", "-g0", *r.flags))]


def text_size(tc: Toolchain, objs: list[Path]) -> int:
    total = 0
    for i in range(0, len(objs), 200):
        lines = tc.run("llvm-size", objs[i:i + 200]).stdout.decode().splitlines()[1:]
        total += sum(int(ln.split()[0]) for ln in lines)
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", default="lua5.4", help="Debian source package for the corpus")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=default_jobs())
    ap.add_argument("--work", type=Path, default=Path("var/bench"))
    ap.add_argument("--model", type=Path, help="an ONNX policy to benchmark besides the heuristic")
    ap.add_argument("--train", action="store_true", help="train a warm-start ONNX policy on the corpus first")
    ap.add_argument("--bitcode", action="store_true", help="compile the corpus bitcode instead of the C sources")
    args = ap.parse_args()

    tc = Toolchain.from_settings()
    corpus_dir = args.work / f"corpus-{args.package}"
    if not (corpus_dir / corpus.DESCRIPTION).is_file():
        corpus.from_debian(args.package, corpus_dir, tc, args.work / "debsrc")
    if args.bitcode:
        units = [(m.name, ["-Oz", "-c", str(m.bitcode)]) for m in corpus.load(corpus_dir).modules]
    else:
        units = sources(args.package, args.work)
    out = Path(tempfile.mkdtemp(prefix="bench-policy-"))
    clang = str(tc.path("clang"))
    # keep what the plain compiler builds (a recipe may name a file the package never compiles alone)
    _, failed = build([[clang, *a, "-o", "/dev/null"] for _, a in units], args.jobs)
    units = [u for i, u in enumerate(units) if i not in failed]

    policies = {"heuristic": "heuristic"}
    if args.train:
        from regression import warmstart

        t0 = time.perf_counter()
        r = warmstart.train_from(corpus_dir, out / "bc.onnx", tc, seed=0, jobs=args.jobs)
        print(f"warm start: {r['decisions']} decisions from {r['modules']} modules in "
              f"{time.perf_counter() - t0:.1f}s; held-out agreement {r['heldout_agreement']:.3f} "
              f"(majority baseline {r['heldout_majority_baseline']:.3f}) on {r['heldout_decisions']} decisions")
        args.model = out / "bc.onnx"
    servers = []
    if args.model:
        policies[f"onnx {args.model.name}"] = str(args.model.absolute())
        sock = out / "policy.sock"
        servers.append(subprocess.Popen([MLGO_FARM, "policy", "serve", "--policy", str(args.model.absolute()),
                                         "--socket", str(sock)], stdout=subprocess.DEVNULL))
        deadline = time.monotonic() + 60
        while not sock.exists() and time.monotonic() < deadline and servers[0].poll() is None:
            time.sleep(0.05)
        if not sock.exists():
            sys.exit("policy serve did not start")
        policies[f"onnx {args.model.name} (served)"] = f"server:{sock}"

    def commands(tag: str, policy: str | None) -> list[list[str]]:
        (out / tag).mkdir(exist_ok=True)
        cmds = []
        for i, (_, a) in enumerate(units):
            cc = [clang, *a, "-o", str(out / tag / f"{i}.o")]
            if policy is not None:
                how = ["--server", policy[7:]] if policy.startswith("server:") else ["--policy", policy]
                cc = [MLGO_FARM, "policy-cc", *how, "--stats", str(out / f"{tag}.jsonl"), "--", *cc]
            cmds.append(cc)
        return cmds

    runs = {"baseline": commands("baseline", None)}
    for i, (name, pol) in enumerate(policies.items()):
        runs[name] = commands(f"p{i}", pol)
    for cmds in runs.values():
        build(cmds, args.jobs)  # warm the page cache and the Python bytecode cache
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.repeat):
        for i, (name, cmds) in enumerate(runs.items()):
            (out / f"p{i - 1}.jsonl").unlink(missing_ok=True)  # keep the stats of the last run only
            wall, failed = build(cmds, args.jobs, tag=name)
            if failed:
                sys.exit(f"{name}: {len(failed)} compiles failed, first: {' '.join(cmds[failed[0]])}")
            times[name].append(wall)
    for srv in servers:
        srv.terminate()
        srv.wait()
    in_process = {name: spec for name, spec in policies.items() if not spec.startswith("server:")}
    ip_times: dict[str, list[float]] = {k: [] for k in in_process}
    ip_rts: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        for i, (name, spec) in enumerate(in_process.items()):
            wall, ip_rts[name] = build_in_process(units, clang, out / f"ip{i}", spec, args.jobs, tc)
            ip_times[name].append(wall)

    modules = units
    base_objs = [out / "baseline" / f"{i}.o" for i in range(len(modules))]
    base_t = statistics.median(times["baseline"])
    base_size = text_size(tc, base_objs)
    what = "corpus bitcode modules" if args.bitcode else "C files"
    print(f"{args.package}: {len(modules)} {what}, -Oz, {args.jobs} jobs, {args.repeat} alternating runs")
    base_cpu = statistics.median(CPU["baseline"])
    print(f"{'build':<30}{'median s':>10}{'ratio':>8}{'cpu ratio':>10}{'text bytes':>12}{'size vs heur.':>15}"
          f"{'identical':>11}{'decisions':>11}{'median rt us':>14}")
    print(f"{'heuristic (plain clang)':<30}{base_t:>10.3f}{1.0:>8.2f}{1.0:>10.2f}{base_size:>12}")
    for i, name in enumerate(policies):
        objs = [out / f"p{i}" / f"{j}.o" for j in range(len(modules))]
        size = text_size(tc, objs)
        same = sum(a.read_bytes() == b.read_bytes() for a, b in zip(objs, base_objs, strict=True))
        stats = [json.loads(ln) for ln in (out / f"p{i}.jsonl").read_text().splitlines()]
        rts = [t for s in stats for t in s["response_times"]]
        med = statistics.median(times[name])
        cpu = statistics.median(CPU[name]) / base_cpu
        print(f"{name:<30}{med:>10.3f}{med / base_t:>8.2f}{cpu:>10.2f}{size:>12}"
              f"{(size - base_size) / base_size:>+14.2%} "
              f"{same:>5}/{len(objs):<5}{len(rts):>11}{statistics.median(rts) * 1e6 if rts else 0:>14.1f}")
    for i, name in enumerate(in_process):
        objs = [out / f"ip{i}" / f"{j}.o" for j in range(len(modules))]
        size = text_size(tc, objs)
        same = sum(a.read_bytes() == b.read_bytes() for a, b in zip(objs, base_objs, strict=True))
        med, rts = statistics.median(ip_times[name]), ip_rts[name]
        cpu = statistics.median(CPU[f"{in_process[name]} in-process"]) / base_cpu
        print(f"{name + ' in-process':<30}{med:>10.3f}{med / base_t:>8.2f}{cpu:>10.2f}{size:>12}"
              f"{(size - base_size) / base_size:>+14.2%} {same:>5}/{len(objs):<5}{len(rts):>11}"
              f"{statistics.median(rts) * 1e6 if rts else 0:>14.1f}")
    print("target: policy build within 1.3x of the heuristic build's wall time")
    print("in-process rows: run_compile from one Python process, i.e. the host's own cost without the "
          "per-compile interpreter start-up of the CLI launcher")
    shutil.rmtree(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
