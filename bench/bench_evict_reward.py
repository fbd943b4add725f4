"""How far the static eviction reward can be trusted: does RegAllocScore rank PGO builds as callgrind does?

    .venv/bin/python -m bench.bench_evict_reward --benchmarks zlib,bzip2,minisat
        [--policies heuristic,spill,rebuilt,perturbed:0.05:0,...,var/bench/evict/small.onnx] [--opt=-O2] [--jobs 2]

ml-compiler-opt trains regalloc eviction on a static reward, LLVM's RegAllocScore, and its authors warn it "didn't
work too well for out-of-order CPUs"; the farm computes the same score (policytrain/evict_reward.py) and judges a
policy by callgrind instructions of real benchmarks (regression/). Before a training optimises the one to win the
other, this bench measures how well they agree. Per benchmark (regression/benchmarks.py), the profile is made once
with the heuristic (regression/pgo.py, as `regress run --pgo` does), then the benchmark is built per file with
`-fprofile-use` (regression/build.py `build_benchmark`) under each policy: LLVM's own advisor (`heuristic`), built-ins
(`spill`), ONNX scorers (a path), and the bench's own spread (bench/evict_policies.py: `rebuilt`, `perturbed:P:SEED`,
`random:SEED`). For each build:

* the static reward: every module compiled again through the same policy with the same profile flags, stopped after
  the virtregrewriter (`mir_args`), RegAllocScore summed over its functions (`function_scores`), then over modules
  (a cost: lower is better);
* callgrind instructions of each measured workload (deterministic: one run each), the outputs checked against the
  heuristic build's (a build computing something else is left out of the ranking).

It prints per benchmark the table (policy, reward / heuristic's, instructions / heuristic's, per workload too) and
the Spearman rank correlation between reward and total instructions over the builds (all of them, and without the
`random:` ones, whose large losses any sensible reward ranks last: what is left is the range a training moves in);
then the mean correlation over benchmarks. No target: it says how far the reward can be trusted. Numbers:
bench/README.md#bench_evict_reward.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bench import evict_policies
from bench.harness.header import print_header

DEFAULT_POLICIES = ("heuristic,spill,rebuilt,perturbed:0.02:0,perturbed:0.02:1,perturbed:0.1:0,perturbed:0.3:0,"
                    "random:0,random:1")


@dataclass
class Build:
    """One policy's build of a benchmark: its reward and each workload's instructions (None when not measured)."""

    policy: str
    reward: float | None = None
    instructions: dict[str, int] = field(default_factory=dict)
    binary: Path | None = None
    same_as_heuristic: bool = False
    error: str | None = None

    @property
    def total(self) -> int:
        return sum(self.instructions.values())


def spearman(xs: list[float], ys: list[float]) -> float:
    """Spearman's rho (ties get their mean rank); NaN with fewer than three pairs or a constant side."""
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return math.nan
    from scipy.stats import spearmanr

    return float(spearmanr(xs, ys).statistic)


def label(spec: str) -> str:
    return Path(spec).name if spec.endswith(".onnx") else spec


def variant_of(spec: str):
    """The build variant that compiles through `spec`: plain clang for `heuristic`, policy-cc for a built-in or an
    ONNX path, this bench's launcher for its own Python policies."""
    from regression.build import Variant, heuristic_variant, policy_variant

    if spec == "heuristic":
        return heuristic_variant()
    if evict_policies.is_bench_policy(spec):
        return Variant(spec, evict_policies.launcher(spec))
    return policy_variant(str(Path(spec).absolute()) if spec.endswith(".onnx") else spec, advisor="regalloc")


def module_reward(toolchain, variant, args: list[str], src: Path, mir: Path, timeout: float = 600) -> float:
    """RegAllocScore of one module compiled through the variant with the build's own flags (`args`)."""
    from farm.errors import FarmError
    from policytrain.evict_reward import function_scores, mir_args
    from regression.build import run_bounded

    mir.parent.mkdir(parents=True, exist_ok=True)
    status, stderr = run_bounded(variant.argv(toolchain, [*args, *mir_args(src, mir)]), timeout)
    if status != 0 or not mir.is_file():
        lines = stderr.decode(errors="replace").strip().splitlines()
        raise FarmError(f"MIR of {src.name} through {variant.name}: exit {status}: {lines[-1] if lines else ''}")
    return sum(function_scores(toolchain, mir).values())


def reward(toolchain, bench, root: Path, variant, out: Path, opt_flags: list[str], profile_flags: list[str],
           jobs: int) -> float:
    """The build's static reward: RegAllocScore summed over the benchmark's modules."""
    flags = bench.compile_flags(root)
    srcs = bench.source_files(root)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(module_reward, toolchain, variant, [*opt_flags, *profile_flags, *flags], src,
                               out / (src.relative_to(root).as_posix().replace("/", "__") + ".mir"))
                   for src in srcs]
        return sum(f.result() for f in futures)


def measure(bench, builds: list[Build], inputs: Path, work: Path, jobs: int) -> None:
    """Callgrind instructions of every workload of every build (one run each); a build whose output differs from
    the heuristic's on any workload gets an error instead."""
    from farm.errors import FarmError
    from farm.progress import steps
    from regression.measure import callgrind_instructions

    ok = [b for b in builds if b.error is None]
    tasks = [(b, w) for b in ok for w in bench.workloads]

    def one(task):
        b, w = task
        try:
            return callgrind_instructions(w.argv(b.binary, inputs), stdin=w.stdin_path(inputs), cwd=work,
                                          status=w.status)
        except FarmError as e:
            return e

    digests: dict[tuple[str, str], str] = {}
    with steps(len(tasks), f"{bench.name}: callgrind runs") as progress, \
            ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for (b, w), got in zip(tasks, pool.map(one, tasks), strict=True):
            progress.update()
            if isinstance(got, Exception):
                b.error = f"{w.name}: {got}"
                continue
            b.instructions[w.name], digests[b.policy, w.name] = got
    base = ok[0].policy
    for b in ok:
        if b.error is None and any(digests.get((b.policy, w.name)) != digests.get((base, w.name))
                                   for w in bench.workloads):
            b.error = "wrong output: differs from the heuristic build's"


def run_benchmark(toolchain, bench, specs: list[str], sources: Path, work: Path, opt_flags: list[str],
                  jobs: int) -> list[Build]:
    """Profile once, then build, score and measure the benchmark under every policy; the first spec is the
    baseline (the heuristic)."""
    from farm.errors import FarmError
    from farm.progress import steps
    from regression import benchmarks
    from regression.build import build_benchmark
    from regression.pgo import describe_stale, use_flags
    from regression.pgo import train as train_profile

    root = benchmarks.fetch(bench, sources)
    inputs = work / "inputs"
    benchmarks.prepare_inputs(bench, root, inputs)
    profile_flags = use_flags(train_profile(toolchain, bench, root, work / "pgo", opt_flags, jobs).path)
    builds = []
    with steps(len(specs), f"{bench.name}: builds and rewards") as progress:
        for i, spec in enumerate(specs):
            b, variant = Build(label(spec)), variant_of(spec)
            out = work / f"b{i:02d}"  # equal-length paths: a binary's path length changes the loader's count
            built = build_benchmark(toolchain, bench, root, variant, out, opt_flags, jobs, profile_flags=profile_flags)
            if built.error:
                b.error = describe_stale(bench, built.error)
            else:
                b.binary = built.binary
                try:
                    b.reward = reward(toolchain, bench, root, variant, out / "mir", opt_flags, profile_flags, jobs)
                except FarmError as e:  # one build's scoring failure is its row, not the run's end
                    b.error = str(e)
            builds.append(b)
            progress.update()
    base = builds[0]
    if base.binary is not None:
        for b in builds[1:]:
            b.same_as_heuristic = b.binary is not None and b.binary.read_bytes() == base.binary.read_bytes()
    measure(bench, builds, inputs, work, jobs)
    return builds


def report(bench, builds: list[Build]) -> float:
    """Print the benchmark's table and correlations; its rho over all measured builds (NaN if none)."""
    base = builds[0]
    if base.error is not None:
        print(f"{bench.name}: the heuristic build failed, nothing to compare: {base.error}")
        return math.nan
    good = [b for b in builds if b.error is None]
    rho = spearman([b.reward for b in good], [b.total for b in good])
    near = [b for b in good if not b.policy.startswith("random:")]
    rho_near = spearman([b.reward for b in near], [b.total for b in near])
    names = [w.name for w in bench.workloads]
    print(f"{bench.name}: Spearman rho(reward, instructions) {rho:+.3f} over {len(good)} builds, "
          f"{rho_near:+.3f} over the {len(near)} without random: (heuristic reward {base.reward:,.0f}, "
          f"{base.total:,} instructions)")
    print(f"  {'policy':22} {'reward':>8} {'instr':>8}  " + "  ".join(f"{n:>10}" for n in names))
    for b in builds:
        if b.error is not None:
            print(f"  {b.policy:22} {b.error}")
            continue
        per = "  ".join(f"{b.instructions[n] / base.instructions[n]:>10.4f}" for n in names)
        same = "  (= heuristic's binary)" if b.same_as_heuristic else ""
        print(f"  {b.policy:22} {b.reward / base.reward:>8.4f} {b.total / base.total:>8.4f}  {per}{same}")
    return rho


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmarks", default="zlib,bzip2,minisat", help="comma-separated (regression/benchmarks.py)")
    ap.add_argument("--policies", default=DEFAULT_POLICIES,
                    help="comma-separated, the heuristic first: heuristic, spill, an ONNX path, rebuilt, "
                         "perturbed:P:SEED, random:SEED")
    ap.add_argument("--opt", default="-O2", help="optimisation flags, space-separated")
    ap.add_argument("--work", type=Path, help="work directory (default <var>/bench/evict-reward)")
    ap.add_argument("--sources", type=Path, help="benchmark sources cache (default <var>/regression/sources)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    from farm.config import load_settings
    from farm.toolchain import Toolchain
    from regression.benchmarks import lookup

    settings = load_settings()
    toolchain = Toolchain.from_settings(settings)
    print_header(toolchain)
    specs = [s.strip() for s in args.policies.split(",") if s.strip()]
    if specs[:1] != ["heuristic"]:
        specs = ["heuristic", *(s for s in specs if s != "heuristic")]
    var = Path(settings.var_dir)
    work = args.work or var / "bench" / "evict-reward"
    sources = args.sources or var / "regression" / "sources"
    opt_flags = args.opt.split()
    print(f"policies: {', '.join(map(label, specs))}; {' '.join(opt_flags)} + PGO per file; reward = RegAllocScore "
          f"summed over modules (lower is better)", flush=True)
    rhos = {}
    for name in (n.strip() for n in args.benchmarks.split(",") if n.strip()):
        bench, start = lookup(name), time.monotonic()
        builds = run_benchmark(toolchain, bench, specs, sources, work / name, opt_flags, args.jobs)
        rhos[name] = report(bench, builds)
        print(f"  ({time.monotonic() - start:.0f}s)", flush=True)
    known = [r for r in rhos.values() if not math.isnan(r)]
    mean = statistics.mean(known) if known else math.nan
    print(f"mean Spearman rho over {len(known)} benchmark(s): {mean:+.3f} ("
          + ", ".join(f"{n} {r:+.3f}" for n, r in rhos.items()) + ")")


if __name__ == "__main__":
    main()
