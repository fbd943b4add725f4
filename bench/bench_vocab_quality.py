"""The farm's IR vocabulary against LLVM's in-tree one: coverage, analogies, and the inliner warm start.

    .venv/bin/python -m bench.bench_vocab_quality [--packages zlib,lua5.4,bzip2,libzstd]
        [--levels O0,O1,O2,O3,Oz] [--seeds 0,1,2] [--jobs 1] [--work var/bench/quality]

Every step runs niced and is cached under --work (a step whose output exists is reused):

1. Corpus: `mlgo-farm corpus debian P` for each package, merged into one corpus (hard links;
   module names prefixed with the package).
2. Dataset and vocabulary: `mlgo-farm triplets ir` at the levels, `mlgo-farm vocab train` with
   the default recipe (validated by LLVM; the farm's predicate triplets included), and once more
   per `--recipe="TRAINING OPTIONS"` (e.g. `--recipe="--optimizer SGD --lr 0.05"`), each one
   more variant in the steps below.
3. LLVM's in-tree vocabulary (bench/data/seedEmbeddingVocab75D.json): LLVM 22 loads it (every
   entry it reads back equals the file, every other entity reads as zeros, the sample modules
   embed to non-zero vectors), and its coverage.
4. Analogies (vocabgen/analogy.py) on both: over the questions whose entities are trained, and
   over all questions with untrained counting as wrong. The farm's filler entries (the
   manifest's `coverage.*.filler`) count as untrained, as do the in-tree file's missing entries.
5. Downstream: the inliner warm start (policytrain/warmstart.py) with IR2Vec features from
   (a) no vocabulary, (b) the in-tree one, (c) the farm's (each recipe): decisions logged from the same corpus,
   the same seeds (same held-out modules per seed), held-out agreement with LLVM's heuristic, and
   the held-out modules' `.text` (llvm-size) compiled with each trained policy against the
   heuristic's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from bench.harness import LLVM_IR_VOCAB, ROOT
from bench.harness.commands import farm
from bench.harness.corpora import merged_corpus
from bench.harness.header import print_header


def corpus(work: Path, packages: list[str], jobs: int) -> Path:
    merged = work / "corpus"
    if (merged / "corpus_description.json").is_file():
        return merged
    for p in packages:
        one = work / f"corpus-{p}"
        if not (one / "corpus_description.json").is_file():
            farm("corpus", "debian", p, "-j", str(jobs), "-o", str(one))
    return merged_corpus(merged, {p: work / f"corpus-{p}" for p in packages})


def farm_vocabs(work: Path, corpus_dir: Path, levels: str, jobs: int, recipes: list[str]) -> dict[str, Path]:
    """label -> trained vocabulary directory: `farm` (default recipe), `farm RECIPE` for each extra one."""
    ds = work / "ds-ir"
    if not (ds / "manifest.json").is_file():
        farm("triplets", "ir", str(corpus_dir), "-j", str(jobs), "--opt-levels", levels, "-o", str(ds))
    out = {}
    for recipe in ["", *recipes]:
        slug = "_".join(a.lstrip("-") for a in recipe.split())
        vocab = work / (f"vocab-farm-{slug}" if slug else "vocab-farm")
        if not (vocab / "manifest.json").is_file():
            farm("vocab", "train", str(ds), "-o", str(vocab), *recipe.split())
        out[f"farm {recipe}".strip()] = vocab
    return out


def in_tree_loads(toolchain) -> dict:
    """LLVM reads the file as written (entries equal, missing entities zero) and embeds the samples."""
    from farm.vocabfile import check_schema, parse
    from vocabgen import layout
    from vocabgen.validate import compile_samples, llvm_loads, llvm_printed_vocab

    vocab = parse(LLVM_IR_VOCAB.read_bytes())
    dim = check_schema("ir", vocab)
    with tempfile.TemporaryDirectory() as tmp:
        printed = llvm_printed_vocab("ir", LLVM_IR_VOCAB, toolchain, Path(tmp))
        loads = llvm_loads("ir", LLVM_IR_VOCAB, dim, toolchain, compile_samples("ir", toolchain, Path(tmp)))
    read, zero = 0, 0
    for (name, vec), (section, key) in zip(printed.items(), layout.placement("ir", list(printed)), strict=True):
        mine = vocab[section].get(key)
        if mine is None:
            assert not any(vec), f"LLVM gives {name} a vector the file does not have"
            zero += 1
        else:
            assert all(abs(a - b) <= 0.0051 for a, b in zip(mine, vec, strict=True)), name
            read += 1
    return {"entries": sum(map(len, vocab.values())), "entities": len(printed), "read": read, "zero": zero,
            "functions": sum(r["functions"] for r in loads)}


def vectors_of(path: Path, names: list[str], filler: set[tuple[str, str]]):
    """(vectors, trained ids, coverage per section): entries missing, zero or listed as filler are untrained."""
    import numpy as np

    from vocabgen.layout import placement

    vocab = json.loads(path.read_text())
    dim = len(next(iter(next(iter(vocab.values())).values())))
    vec = np.zeros((len(names), dim))
    trained, cover = [], {}
    for i, (section, key) in enumerate(placement("ir", names)):
        x = vocab.get(section, {}).get(key)
        ok = x is not None and any(x) and (section, key) not in filler
        if x is not None:
            vec[i] = x
        trained += [i] if ok else []
        t, n = cover.get(section, (0, 0))
        cover[section] = (t + ok, n + 1)
    return vec, np.array(trained, dtype=np.int64), cover


def analogies(toolchain, farms: dict[str, Path]) -> dict:
    from vocabgen.analogy import analogy_score, answers
    from vocabgen.validate import llvm_entities

    names = llvm_entities("ir", toolchain)
    out = {}
    for label, path in (("in-tree", LLVM_IR_VOCAB), *((label, d / "vocab.json") for label, d in farms.items())):
        fill: set[tuple[str, str]] = set()
        if label != "in-tree":
            manifest = json.loads((path.parent / "manifest.json").read_text())
            fill = {(s, k) for s, c in manifest["coverage"].items() for k in c["filler"]}
        vec, trained, cover = vectors_of(path, names, fill)
        out[label] = {"coverage": cover, "score": analogy_score("ir", names, vec, trained),
                      "answers": answers("ir", names, vec, trained)}
    return out


def compile_text(toolchain, corpus_dir: Path, modules: list[str], work: Path, policy=None,
                 vocab: Path | None = None) -> int:
    """Total `.text` of `modules` compiled at -Oz, by LLVM's heuristic (no policy) or through `policy`."""
    from policyhost.launcher import run_compile
    from regression.measure import text_sizes

    objs = []
    for i, name in enumerate(modules):
        obj = work / f"{i}.o"
        argv = ["clang", "-Oz", "-c", str(corpus_dir / f"{name}.bc"), "-o", str(obj)]
        if policy is None:
            toolchain.run("clang", argv[1:], subject=name)
        else:
            outcome = run_compile(argv, policy, vocab=vocab, timeout=300, toolchain=toolchain)
            if not outcome.ok:
                raise RuntimeError(f"{name}: {outcome.error}")
        objs.append(obj)
    return sum(text_sizes(toolchain, objs).values())


def downstream(toolchain, corpus_dir: Path, farms: dict[str, Path], work: Path, seeds: list[int], jobs: int,
               epochs: int) -> dict:
    from policyhost.runnable import OnnxPolicy
    from policytrain import warmstart as ws

    variants = {"none": None, "in-tree": LLVM_IR_VOCAB, **{label: d / "vocab.json" for label, d in farms.items()}}
    out: dict = {"heuristic": {}, **{v: {} for v in variants}}
    logs = {}
    for label, vocab in variants.items():
        saved = work / f"decisions-{'_'.join(a.lstrip('-') for a in label.split())}.npz"
        if not saved.is_file():
            ws.collect(corpus_dir, toolchain, jobs=jobs, vocab=str(vocab) if vocab else None).save(saved)
        logs[label] = ws.DecisionLog.load(saved)
    modules = {tuple(d.modules) for d in logs.values()}
    assert len(modules) == 1, "every variant must log decisions from the same modules"
    for seed in seeds:
        held = None
        for label, vocab in variants.items():
            model, metrics = ws.train(logs[label], seed=seed, epochs=epochs)
            held = held or metrics["heldout_modules"]
            assert metrics["heldout_modules"] == held, "the same seed holds out the same modules"
            with tempfile.TemporaryDirectory(dir=work) as tmp:
                onnx = Path(tmp) / "policy.onnx"
                ws.export_onnx(model, logs[label], onnx, {"mlgo.seed": str(seed)})
                text = compile_text(toolchain, corpus_dir, held, Path(tmp), OnnxPolicy(onnx), vocab)
            out[label][seed] = {"agreement": metrics["heldout_agreement"], "text": text,
                                "decisions": metrics["heldout_decisions"], "majority": metrics[
                                    "heldout_majority_baseline"], "features": logs[label].x.shape[1]}
            print(f"  seed {seed} {label:8s} held-out agreement {metrics['heldout_agreement']:.4f} "
                  f".text {text}", flush=True)
        with tempfile.TemporaryDirectory(dir=work) as tmp:
            out["heuristic"][seed] = {"text": compile_text(toolchain, corpus_dir, held, Path(tmp)),
                                      "modules": len(held)}
    return out


def report(loads: dict, farms: dict[str, Path], quality: dict, down: dict, seeds: list[int]) -> None:
    print(f"\nLLVM's in-tree IR vocabulary: {loads['entries']} entries; LLVM 22 reads {loads['entities']} "
          f"entities: {loads['read']} from the file, {loads['zero']} as zero vectors; "
          f"{loads['functions']} sample functions embed to non-zero vectors")
    for label, d in farms.items():
        manifest = json.loads((d / "manifest.json").read_text())
        holdout, ds = manifest["metrics"]["holdout"], manifest["dataset"]
        print(f"{label}: dataset {ds['id']} ({ds['triplets']} unique triplets, {ds['relations']} relations), "
              f"held-out MRR {holdout['mrr']:.3f} Hits@10 {holdout['hits_at_10']:.3f}")
    print("\ncoverage (trained/total)   " + "   ".join(f"{s:>10s}" for s in ("Opcodes", "Types", "Arguments")))
    for label, q in quality.items():
        c = q["coverage"]
        total = sum(t for t, _ in c.values())
        print(f"  {label:8.8s} {total:3d}/110      " + "   ".join(f"{c[s][0]:>4d}/{c[s][1]:<5d}" for s in
                                                            ("Opcodes", "Types", "Arguments")))
    print("\nanalogies                   trained-only          all questions (untrained = wrong)")
    for label, q in quality.items():
        s = q["score"]
        print(f"  {label:24s} {s['correct']:>3d}/{s['asked']:<3d} = {s['score'] or 0:.3f}        "
              f"{s['correct']:>3d}/{s['total']} = {s['score_all']:.3f}")
    print("\n  question" + " " * 42 + "".join(f"{label[:17]:18s}" for label in quality))
    for i, q in enumerate(quality["in-tree"]["answers"]):
        row = [quality[label]["answers"][i] for label in quality]
        print(f"  {q['question']:48s}  " + "".join(f"{r['outcome']:9s}{r['answer'] or '':>8.8s} " for r in row))
    print("\ninliner warm start, held-out (same modules per seed)")
    print("  seed  variant   features  agreement  majority  .text     vs heuristic")
    for seed in seeds:
        h = down["heuristic"][seed]["text"]
        for label in (v for v in down if v != "heuristic"):
            r = down[label][seed]
            print(f"  {seed:>4d}  {label:8.8s}  {r['features']:>8d}  {r['agreement']:.4f}     {r['majority']:.4f}    "
                  f"{r['text']:>7d}   {r['text'] / h:.4f}x  (heuristic {h}, {down['heuristic'][seed]['modules']} "
                  f"modules)")
    for label in (v for v in down if v != "heuristic"):
        ag = [down[label][s]["agreement"] for s in seeds]
        tx = [down[label][s]["text"] / down["heuristic"][s]["text"] for s in seeds]
        print(f"  mean  {label:24s}  agreement {statistics.mean(ag):.4f}  .text {statistics.mean(tx):.4f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--packages", default="zlib,lua5.4,bzip2,libzstd")
    ap.add_argument("--levels", default="O0,O1,O2,O3,Oz")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=60, help="warm-start training epochs (policy train-bc's default)")
    ap.add_argument("--work", type=Path, default=ROOT / "var" / "bench" / "quality")
    ap.add_argument("--recipe", action="append", default=[],
                    help="also train and compare a vocabulary with these `vocab train` options (repeatable)")
    args = ap.parse_args()
    from farm.toolchain import Toolchain

    os.nice(15)
    work = args.work.absolute()
    work.mkdir(parents=True, exist_ok=True)
    toolchain = Toolchain.from_settings()
    print_header(toolchain)
    seeds = [int(s) for s in args.seeds.split(",")]
    corpus_dir = corpus(work, args.packages.split(","), args.jobs)
    farms = farm_vocabs(work, corpus_dir, args.levels, args.jobs, args.recipe)
    loads = in_tree_loads(toolchain)
    quality = analogies(toolchain, farms)
    down = downstream(toolchain, corpus_dir, farms, work, seeds, args.jobs, args.epochs)
    report(loads, farms, quality, down, seeds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
