"""Benchmark: a policy build through the native host against plain clang, in the same run (issue 39, item 6).

Baseline: plain `clang -Oz -c` of every C file of a Debian source package (bzip2, lua5.4) with the flags its recipe
gives, two compiles at a time (`make -j2`). Ours: the same compiles with the farm's newest published inliner policy
through the native host users build with one line (`mlgo-policy-host --weights model.weights --vocab vocab.json --`,
policyhost/standalone/mlgo-policy-host.c, weights written by policytrain/native_export.py from the published ONNX);
for reference the Python standalone host the policy page showed until now (`python mlgo-cc.py --model model.onnx`,
an interpreter and onnxruntime per compile: 1.84x on bzip2 in the issue), and the farm's own lean launcher as its
builds ran before they took the native host (`policy-cc --print-launcher`: an interpreter per compile asking a
shared `policy serve`; 1.19x in the issue). The native host's row is what the farm's own builds run now for a
version published with its weights (policyhost/native.py). Rounds alternate, after a warm-up round;
it prints each build's median wall time, the ratio of medians and the median of each round's ratio to that round's
plain build (`paired`), the CPU ratio, and whether every native object's `.text` equals the ONNX policy's (the Python
host's). Target: native at most 1.10x plain clang. The load average is printed before and after: others share the
cores.

    nice -n 10 .venv/bin/python -m bench.bench_policy_native [--packages bzip2,lua5.4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import functools
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.bench_policy_build import build, sources
from bench.harness import compare
from bench.harness.header import load, print_header
from farm.toolchain import Toolchain, text_sizes


def newest_policy(version: str | None) -> tuple[str, Path, Path]:
    """(version, model.onnx, vocab.json) of the farm's newest published inliner policy (or `version`), fetched
    and checked through the farm's own store code."""
    from farm.artifacts import POLICIES
    from farm.config import load_settings
    from farm.objectstore import store_from_settings
    from policyhost.launcher import resolve_vocab
    from policyhost.publish import fetch_cached

    settings = load_settings()
    store = store_from_settings(settings)
    if version is None:
        version = [v for v in POLICIES.read_index(store) if v.get("advisor") == "inline"][-1]["version"]
    model, manifest = fetch_cached(store, "inline", version, Path(settings.var_dir) / "cache" / "policies")
    return version, model, resolve_vocab(f"store:{manifest['vocab_version']}", "inline")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packages", default="bzip2,lua5.4", help="Debian source packages, comma-separated")
    ap.add_argument("--repeat", type=int, default=3, help="measured rounds (after one warm-up round)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--work", type=Path, default=Path("var/bench"))
    ap.add_argument("--version", help="the published policy version (default: the newest)")
    args = ap.parse_args()

    from policyhost import standalone
    from policyhost.cc import launcher_command
    from policytrain.native_export import save_weights

    tc = Toolchain.from_settings()
    print_header(tc, "bench_policy_native")
    version, model, vocab = newest_policy(args.version)
    out = Path(tempfile.mkdtemp(prefix="bench-native-"))
    clang = str(tc.path("clang"))
    host = out / standalone.NATIVE_NAME
    subprocess.run([clang, "-O2", "-o", host, standalone.NATIVE_SOURCE, "-lm"], check=True)
    weights = save_weights(model.read_bytes(), out / "model.weights")
    print(f"policy {version}, vocabulary {vocab.stem}; host built with `{standalone.NATIVE_BUILD}`", flush=True)
    launchers = {"plain clang": [],
                 "native host": [str(host), "--weights", str(weights), "--vocab", str(vocab), "--"],
                 "python host (onnxruntime)": [sys.executable, str(standalone.SOURCE), "--model", str(model),
                                               "--vocab", str(vocab), "--"],
                 # the farm's own launcher as it was before its builds took the native host (policyhost/native.py)
                 "farm launcher, python": launcher_command(str(model), vocab=str(vocab), native=False)}
    failed_bar = False
    for package in args.packages.split(","):
        units = sources(package, args.work)
        _, failed = build([[clang, *a, "-o", "/dev/null"] for _, a in units], args.jobs)
        units = [u for i, u in enumerate(units) if i not in failed]  # what the plain compiler builds

        def commands(tag: str, prefix: list[str], units=units, package=package) -> list[list[str]]:
            (out / package / tag).mkdir(parents=True, exist_ok=True)
            return [[*prefix, clang, *a, "-o", str(out / package / tag / f"{i}.o")] for i, (_, a) in enumerate(units)]

        runs = {name: commands(str(i), prefix) for i, (name, prefix) in enumerate(launchers.items())}

        def timed(name: str, runs=runs):
            took, bad = build(runs[name], args.jobs)
            if bad:
                sys.exit(f"{name}: {len(bad)} compiles failed, first: {' '.join(runs[name][bad[0]])}")
            return took

        timings = compare.alternate({n: functools.partial(timed, n) for n in runs}, args.repeat)
        objs = {name: [out / package / str(i) / f"{j}.o" for j in range(len(units))]
                for i, name in enumerate(launchers)}
        texts = {name: text_sizes(tc, o) for name, o in objs.items()}
        same = sum(texts["native host"][a] == texts["python host (onnxruntime)"][b]
                   for a, b in zip(objs["native host"], objs["python host (onnxruntime)"], strict=True))
        differs = sum(texts["plain clang"][a] != texts["python host (onnxruntime)"][b]
                      for a, b in zip(objs["plain clang"], objs["python host (onnxruntime)"], strict=True))
        print(f"\n{package}: {len(units)} C files, -Oz, {args.jobs} at a time, {args.repeat} alternating rounds; "
              f"native .text = ONNX policy's on {same}/{len(units)} objects; the policy's differ from plain "
              f"clang's on {differs}")
        print(f"{'build':<28}{'median s':>10}{'ratio':>8}{'paired':>8}{'cpu ratio':>10}")
        base = timings["plain clang"]
        for name, took in timings.items():
            walls, cpus = [t.wall for t in took], [t.cpu for t in took]
            r = compare.ratio(walls, [t.wall for t in base])
            print(f"{name:<28}{compare.median(walls):>10.3f}{r:>8.3f}"
                  f"{compare.paired(walls, [t.wall for t in base]):>8.3f}"
                  f"{compare.ratio(cpus, [t.cpu for t in base]):>10.3f}", flush=True)
            failed_bar |= name == "native host" and r > 1.10
        failed_bar |= same != len(units)
    print(f"\ntarget: native host at most 1.10x plain clang's wall time, .text equal to the ONNX policy's: "
          f"{'MISSED' if failed_bar else 'met'}; load after: {load()}")
    shutil.rmtree(out)
    return 1 if failed_bar else 0


if __name__ == "__main__":
    sys.exit(main())
