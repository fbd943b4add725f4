"""Warm-started retraining against cold: link prediction, drift between versions, and a policy's view.

    .venv/bin/python -m bench.bench_vocab_warm [--v1 zlib,bzip2,lua5.4] [--v2 libzstd,jansson]
        [--epochs 1000] [--seeds 0,1] [--policy] [--work var/bench/warm]

Two consecutive IR datasets as a growing corpus makes them: v1 from the `--v1` packages, v2 from
the same plus `--v2` (the policy trainer's Debian corpora under <var>/policy/corpus, merged with hard
links; one LLVM, so one entity list). Then, for each seed:

* v1: trained cold (the farm's default recipe, `--epochs`);
* v2 cold: trained as every retrain was before (fresh random vectors, the seed's own);
* v2 warm: started from v1's vectors (vocabgen/training.py `WarmStart`), as a retrain now is.

Quality is the held-out filtered link prediction of v2 (MRR, Hits@10), measured twice for warm:
started from v1 as published (trained on every v1 triple, some of which are v2's held-out
triples: what production does) and started from a v1 trained without v2's held-out triples (the
clean number). Drift between v1 and v2 (vocabgen/compare.py): mean raw cosine drift, mean drift
after orthogonal Procrustes alignment, and mean nearest-neighbour overlap. With `--policy`: an
inliner policy trained (`policy train --recipe demo`) with v1, then evaluated held out with v1,
v2 cold and v2 warm (`policy heldout --evaluation ...`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import time
from pathlib import Path

from bench.harness import MLGO_FARM, ROOT
from bench.harness.corpora import merged_corpus
from bench.harness.header import print_header
from bench.harness.policy import PolicyBench, train_policy


def dataset(work: Path, packages: list[str], pb: PolicyBench) -> Path:
    """The IR dataset of the trainer's corpora of `packages` merged."""
    from workers.triplets import build_dataset

    out = work / ("ds-" + "+".join(packages))
    if not (out / "manifest.json").is_file():
        t0 = time.monotonic()
        corpus = merged_corpus(work / ("corpus-" + "+".join(packages)), {p: pb.package_dir(p) for p in packages})
        build_dataset(corpus, out, "ir", pb.toolchain, jobs=1)
        print(f"dataset {out.name}: {time.monotonic() - t0:.0f} s", flush=True)
    return out


def _matrix(data: bytes, entities: list[str]):
    import numpy as np

    from vocabgen.layout import placement

    vocab = json.loads(data)
    return np.array([vocab[s][k] for s, k in placement("ir", entities)])


def _trained(manifest: dict, entities: list[str]):
    import numpy as np

    from vocabgen.layout import placement

    filler = {(s, k) for s, c in manifest["coverage"].items() for k in c["filler"]}
    return np.array([(s, k) not in filler for s, k in placement("ir", entities)])


def vocab(work: Path, name: str, make) -> tuple[bytes, dict]:
    """A trained vocabulary, cached under `work/name`."""
    from vocabgen.build import read_local, write_local

    out = work / name
    if not (out / "manifest.json").is_file():
        t0 = time.monotonic()
        data, manifest = make()
        write_local(out, data, manifest)
        h = manifest["metrics"]["holdout"]
        print(f"{name}: MRR {h['mrr']:.3f} Hits@10 {h['hits_at_10']:.3f} ({time.monotonic() - t0:.0f} s)", flush=True)
    return read_local(out)


def drift(a: tuple[bytes, dict], b: tuple[bytes, dict], entities: list[str]) -> dict:
    from vocabgen.compare import compare

    anchors = _trained(a[1], entities) & _trained(b[1], entities)
    c = compare(_matrix(a[0], entities), _matrix(b[0], entities), anchors)
    return {"raw": float(c.raw[anchors].mean()), "aligned": float(c.aligned[anchors].mean()),
            "overlap": float(c.overlap[anchors].mean()), "structure": float(c.structure[anchors].mean()),
            "anchors": c.anchors, "k": c.k}


def clean_holdout(ds1, ds2, p) -> dict:
    """v2's held-out metrics warm-started from a v1 that never saw v2's held-out triples."""
    import numpy as np

    from vocabgen import layout
    from vocabgen.training import factory, holdout_metrics, train_all
    from vocabgen.warm import WarmStart

    tf = factory(ds2.triples, ds2.entities, ds2.relations)
    _, test = tf.split([1 - p.holdout, p.holdout], random_state=p.seed)
    held = {tuple(x) for x in test.mapped_triples.numpy()[:, [0, 2, 1]].tolist()}  # (head, tail, relation)
    rel1 = {n: i for i, n in enumerate(ds1.relations)}
    held1 = {(h, t, rel1[ds2.relations[r]]) for h, t, r in held if ds2.relations[r] in rel1}
    keep = np.array([tuple(x) not in held1 for x in ds1.triples.tolist()])
    ds1c = dataclasses.replace(ds1, triples=ds1.triples[keep])
    vectors = train_all(ds1c, p).vectors
    known = np.zeros(len(ds1.entities), bool)
    known[ds1c.trained_entities] = True
    filled, _ = layout.fill_unseen("ir", ds1.entities, vectors, ds1c.trained_entities)
    warm = WarmStart(filled.astype(np.float32), known, {"from": "v1 without v2's held-out triples"})
    return {**holdout_metrics(ds2, p, warm), "removed": int((~keep).sum())}


def run(work: Path, d1: Path, d2: Path, args: argparse.Namespace) -> None:
    from vocabgen.build import train_vocabulary
    from vocabgen.dataset import load_dataset
    from vocabgen.params import TrainParams
    from vocabgen.training import ensure_pystow_home
    from vocabgen.warm import from_vocab

    ensure_pystow_home(ROOT / "var")
    ds1, ds2 = load_dataset(d1, "ir"), load_dataset(d2, "ir")
    assert ds1.entities == ds2.entities, "one LLVM, one entity list"
    print(f"v1 {d1.name}: {len(ds1.triples)} unique triples; v2 {d2.name}: {len(ds2.triples)}", flush=True)
    results = {}
    for seed in [int(x) for x in args.seeds.split(",")]:
        p = TrainParams(epochs=args.epochs, seed=seed).resolved("ir")
        tag = f"e{args.epochs}-s{seed}"
        v1 = vocab(work, f"v1-{tag}", lambda p=p: train_vocabulary(ds1, dataclasses.replace(p, warm_start=False)))
        cold = vocab(work, f"v2-cold-{tag}",
                     lambda p=p: train_vocabulary(ds2, dataclasses.replace(p, warm_start=False)))
        full = dataclasses.replace(p, warm_epochs=args.epochs)  # warm, as many epochs as cold
        warm = vocab(work, f"v2-warm-{tag}", lambda p=full, v1=v1: train_vocabulary(
            ds2, p, warm=from_vocab("ir", ds2.entities, v1[0], v1[1], p.dim, "v1")))
        for e in args.warm_epochs:
            short = dataclasses.replace(p, warm_epochs=e)
            vocab(work, f"v2-warm-{tag}-w{e}", lambda p=short, v1=v1: train_vocabulary(
                ds2, p, warm=from_vocab("ir", ds2.entities, v1[0], v1[1], p.dim, "v1")))
        clean_file = work / f"clean-{tag}.json"
        if not clean_file.is_file():
            clean_file.write_text(json.dumps(clean_holdout(ds1, ds2, full)))  # as "v2 warm": 1,000 epochs
        row = {"v1": v1[1]["metrics"]["holdout"], "cold": cold[1]["metrics"]["holdout"],
               "warm": warm[1]["metrics"]["holdout"], "warm_clean": json.loads(clean_file.read_text()),
               "drift_cold": drift(v1, cold, ds1.entities), "drift_warm": drift(v1, warm, ds1.entities),
               "warm_start": warm[1]["warm_start"]}
        for e in args.warm_epochs:
            short = vocab(work, f"v2-warm-{tag}-w{e}", None)
            row[f"warm_{e}"] = short[1]["metrics"]["holdout"]
            row[f"drift_warm_{e}"] = drift(v1, short, ds1.entities)
        results[seed] = row
        print(json.dumps(row, indent=1), flush=True)
    seeds = list(results)
    if len(seeds) > 1:  # the noise floor: the same data, another seed
        a, b = (f"e{args.epochs}-s{x}" for x in seeds[:2])
        for name in ("v1", "v2-cold"):
            d = drift(vocab(work, f"{name}-{a}", None), vocab(work, f"{name}-{b}", None), ds1.entities)
            print(f"{name}, seed {seeds[0]} against seed {seeds[1]}: raw {d['raw']:.3f} aligned {d['aligned']:.3f} "
                  f"NN overlap {d['overlap']:.2f} structure {d['structure']:.2f}")
    print("\nseed | v2 cold MRR / H@10 | v2 warm | warm, clean | drift cold raw / aligned / NN / structure | "
          "drift warm")
    for seed, r in results.items():
        def q(h):
            return f"{h['mrr']:.3f} / {h['hits_at_10']:.3f}"

        def dr(d):
            return f"{d['raw']:.3f} / {d['aligned']:.3f} / {d['overlap']:.2f} / {d['structure']:.2f}"

        print(f"{seed} | {q(r['cold'])} | {q(r['warm'])} | {q(r['warm_clean'])} | {dr(r['drift_cold'])} | "
              f"{dr(r['drift_warm'])}")
        for e in args.warm_epochs:
            print(f"{seed} | warm, {e} epochs: {q(r[f'warm_{e}'])} | drift {dr(r[f'drift_warm_{e}'])}")
    (work / f"results-e{args.epochs}.json").write_text(json.dumps(results, indent=1))
    if args.policy:
        policy(work, f"e{args.epochs}-s{args.seeds.split(',')[0]}", args.evaluation,
               [f"-w{e}" for e in args.warm_epochs[:1]])


def policy(work: Path, tag: str, evaluation: str, extra: list[str]) -> None:
    """A policy trained with v1 (demo recipe), evaluated held out with v1, v2 cold and v2 warm."""
    model = work / f"policy-v1-{tag}.onnx"
    if not model.is_file():
        record = train_policy("demo", model, "--evaluation", evaluation, "--vocab",
                              str(work / f"v1-{tag}" / "vocab.json"))
        print(f"policy trained with v1: {record['seconds']:.0f} s", flush=True)
    trained = json.loads(model.with_suffix(".json").read_text())
    (work / f"heldout-v1-{tag}.json").write_text(json.dumps(trained["heldout"]))  # its own final table
    print(f"policy: validation {trained['validation']:.4f}x, chosen {trained['chosen']}", flush=True)
    for label, suffix in (("v1", ""), ("v2-cold", ""), ("v2-warm", ""), *(("v2-warm", x) for x in extra)):
        out = work / f"heldout-{label}-{tag}{suffix}.json"
        if not out.is_file():
            r = subprocess.run([MLGO_FARM, "policy", "heldout", str(model), "--vocab",
                                str(work / f"{label}-{tag}{suffix}" / "vocab.json"), "--evaluation", evaluation,
                                "--json"],
                               check=True, capture_output=True, text=True)
            out.write_text(r.stdout)
        table = json.loads(out.read_text())
        print(f"policy (trained with v1) read with {label}{suffix}: held-out geomean {table['geomean']:.4f}x, "
              f"worst {table['worst']:.4f}x", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--v1", default="zlib,bzip2,lua5.4")
    ap.add_argument("--v2", default="libzstd,jansson")
    ap.add_argument("--epochs", type=int, default=1000)
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--warm-epochs", default="100,300", type=lambda x: [int(e) for e in x.split(",") if e],
                    help="also warm retrains of these many epochs (a fine-tune)")
    ap.add_argument("--policy", action="store_true")
    ap.add_argument("--evaluation", default="zlib,bzip2,cjson")
    ap.add_argument("--datasets-only", action="store_true")
    ap.add_argument("--work", default=str(ROOT / "var" / "bench" / "warm"))
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    os.nice(15)
    pb = PolicyBench.load()
    print_header(pb.toolchain)
    p1 = args.v1.split(",")
    d1, d2 = dataset(work, p1, pb), dataset(work, p1 + args.v2.split(","), pb)
    if args.datasets_only:
        return
    run(work, d1, d2, args)


if __name__ == "__main__":
    main()
