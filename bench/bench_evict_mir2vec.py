"""Does a MIR2Vec vocabulary help an eviction policy? The same training with the farm's MIR vocabulary, with a
control vocabulary of random vectors, and with none, judged on held-out benchmarks in PGO builds.

    .venv/bin/python -m bench.bench_evict_mir2vec --mir-vocab VOCAB.json [--intree x86SeedEmbeddingVocab100D.json]
        [--train libzstd,lzo2] [--validation lz4] [--benchmarks zlib,bzip2,minisat,gperf,lua] [--recipe small]

Issue 46 asks for the policy trained with the farm's MIR vocabulary, with LLVM's in-tree
`x86SeedEmbeddingVocab100D.json` and with none, same seeds, side by side. Each arm is `policy train-evict` with the
same recipe, seed and packages (`--mir-vocab` adds the embedding of each decision's function:
policytrain/evict_context.py); the random vocabulary (same dimension, every entity this LLVM lists, seeded) is the
control that tells information in a vocabulary from the mere presence of more inputs. LLVM's in-tree vocabulary is
an arm when its file is given: this machine cannot fetch it (bench/data keeps only its keys).

Every arm is then built and measured as bench_evict_reward.py measures a policy: per benchmark (none of them a
training or validation package), the heuristic's profile once, each arm's PGO build per file, callgrind
instructions of the measured workloads against LLVM's own advisor in the same run, and the static reward beside
it. A model reading embeddings is served by bench/evict_policies.py (`mir2vec:MODEL:VOCAB`), which reads them off
LLVM's own allocation of the same compile first. Numbers: bench/README.md#bench_evict_mir2vec.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import time
from pathlib import Path

from bench.harness import MLGO_FARM
from bench.harness.header import print_header


def random_vocab(toolchain, out: Path, dim: int, seed: int) -> Path:
    """A MIR vocabulary of seeded normal vectors over every entity this LLVM lists (written once)."""
    import numpy as np

    from farm.embeddings import SECTIONS, placement
    from workers import mirtriplets

    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    probe = out.with_suffix(".probe.c")
    probe.write_text("long f(long a, long b) { return a * b + 1; }\n")
    mir = out.with_suffix(".probe.mir")
    toolchain.run("clang", ["-O2", "-S", probe, "-mllvm", "-stop-after=virtregrewriter", "-o", mir])
    rng = np.random.default_rng(seed)
    vocab: dict[str, dict] = {s: {} for s in SECTIONS["mir"]}
    for section, key in placement("mir", list(mirtriplets.vocabulary(toolchain, mir).names)):
        vocab[section][key] = rng.normal(size=dim).round(6).tolist()
    out.write_text(json.dumps(vocab))
    return out


def train(arm: str, vocab: Path | None, work: Path, args) -> Path:
    """One arm's model (trained once: kept under `work`)."""
    model = work / f"{arm}.onnx"
    if not model.is_file():
        cmd = [MLGO_FARM, "policy", "train-evict", "--train", args.train, "--validation", args.validation,
               "-o", str(model), "--recipe", args.recipe, "--jobs", str(args.jobs),
               *(["--mir-vocab", str(vocab)] if vocab else [])]
        print("$ " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    from farm import jsonio

    record = jsonio.load_file(model.with_suffix(".json"), "training record")
    print(f"{arm}: chosen at {record['chosen']}, validation {record['validation']}, {record['seconds']:.0f}s, "
          f"{record['failed_compiles']} failed compile(s)", flush=True)
    return model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mir-vocab", type=Path, required=True, help="the farm's MIR vocabulary (vocab.json)")
    ap.add_argument("--intree", type=Path, help="LLVM's x86SeedEmbeddingVocab100D.json, when this machine has it")
    ap.add_argument("--train", default="libzstd,lzo2")
    ap.add_argument("--validation", default="lz4")
    ap.add_argument("--benchmarks", default="zlib,bzip2,minisat,gperf,lua")
    ap.add_argument("--recipe", default="small")
    ap.add_argument("--opt", default="-O2")
    ap.add_argument("--work", type=Path, help="default <var>/bench/evict-mir2vec")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    from bench.bench_evict_reward import report, run_benchmark
    from farm.config import load_settings
    from farm.toolchain import Toolchain
    from policytrain.evict_context import FunctionEmbedder
    from regression.benchmarks import lookup

    settings = load_settings()
    toolchain = Toolchain.from_settings(settings)
    print_header(toolchain)
    var = Path(settings.var_dir)
    work = args.work or var / "bench" / "evict-mir2vec"
    dim = FunctionEmbedder.load(args.mir_vocab).dim
    vocabs = {"none": None, "farm": args.mir_vocab.absolute(),
              "random": random_vocab(toolchain, work / "random-vocab.json", dim, seed=0).absolute()}
    if args.intree:
        vocabs["intree"] = args.intree.absolute()
    else:
        print("intree: not run (LLVM's x86SeedEmbeddingVocab100D.json is not on this machine: --intree PATH)")
    specs = ["heuristic"]
    for arm, vocab in vocabs.items():
        model = train(arm, vocab, work, args)
        specs.append(str(model) if vocab is None else f"mir2vec:{model}:{vocab}")
    totals: dict[str, list[float]] = {s: [] for s in specs[1:]}
    for name in (n.strip() for n in args.benchmarks.split(",") if n.strip()):
        bench, start = lookup(name), time.monotonic()
        builds = run_benchmark(toolchain, bench, specs, var / "regression" / "sources", work / "runs" / name,
                               args.opt.split(), args.jobs)
        report(bench, builds)
        base = builds[0]
        for spec, b in zip(specs[1:], builds[1:], strict=True):
            ok = b.error is None and base.error is None
            totals[spec].append(b.total / base.total if ok else math.nan)
        print(f"  ({time.monotonic() - start:.0f}s)", flush=True)
    print("geomean of instructions / heuristic's over the benchmarks (worst benchmark):")
    for spec, ratios in totals.items():
        good = [r for r in ratios if not math.isnan(r)]
        if len(good) < len(ratios):
            print(f"  {spec}: failed on {len(ratios) - len(good)} benchmark(s): no geomean")
            continue
        print(f"  {spec}: {statistics.geometric_mean(good):.4f}x (worst {max(good):.4f}x)")


if __name__ == "__main__":
    main()
