"""Benchmark: the farm's inliner-for-size policy against LLVM's -Oz heuristic, on packages it never saw.

Three measurements, each a ratio against a named baseline in the same run:

* `heldout`: train with a recipe (policytrain/trainer.py) on the declared splits
  (policytrain/splitdata.py) and print the evaluation table: per package, `.text` of every module
  compiled at -Oz with the policy / with the heuristic (plain LLVM, same clang, same run).
* `vocab`: what the vocabulary is worth downstream (the experiment of the 2025 LLVM talk
  "Enhancing MLGO Inlining with IR2Vec Embeddings"): the same training with LLVM's features
  alone, with LLVM's in-tree vocabulary (bench/data/seedEmbeddingVocab75D.json) and with the
  farm's vocabulary (a file, or store:VERSION); one held-out table each.
* `throughput`: compiles per second of the training's fan-out with one Celery worker, then two
  (real redis-server and `celery worker` processes, one exploration job per module).

`--recipe` takes production's recipes (policytrain/recipes.py) and the experiments (bench/policy_recipes.py).

    .venv/bin/python -m bench.bench_policy_training heldout --recipe nightly
    .venv/bin/python -m bench.bench_policy_training vocab --recipe demo --farm-vocab store:latest
    .venv/bin/python -m bench.bench_policy_training throughput --package lua5.4 --package libzstd
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import LLVM_IR_VOCAB, ROOT
from bench.harness.header import print_header
from bench.harness.loopback import end, redis_server, until
from bench.harness.policy import PolicyBench, train_policy
from bench.policy_recipes import lookup
from farm.errors import InputError


def train(recipe: str, out: Path, vocab: str | None) -> dict:
    return train_policy(recipe, out, *(["--vocab", vocab] if vocab else []))


def table(record: dict) -> str:
    from farm.config import load_settings
    from policytrain.heldout import format_table

    return format_table(record["heldout"], load_settings().gate.policy_cap)  # both bars, as `policy train` prints


def cmd_heldout(args: argparse.Namespace) -> None:
    out = Path(args.out)
    record = train(args.recipe, out / "inline.onnx", args.vocab)
    print(f"\nrecipe {args.recipe}: {record['seconds']} s, chosen {record['chosen']} "
          f"(validation {record['validation']:.4f}x)")
    print(table(record))


def cmd_vocab(args: argparse.Namespace) -> None:
    out = Path(args.out)
    rows = []
    for label, vocab in (("LLVM features only", None), ("LLVM in-tree vocabulary (75D)", str(LLVM_IR_VOCAB)),
                         ("farm vocabulary", args.farm_vocab)):
        if vocab is None and label != "LLVM features only":
            continue
        record = train(args.recipe, out / f"{label.split()[0].lower()}-{len(rows)}.onnx", vocab)
        rows.append((label, record))
        print(f"\n{label}: validation {record['validation']:.4f}x, held out {record['heldout']['geomean']:.4f}x, "
              f"{record['seconds']} s")
        print(table(record))
    print("\nsummary (held-out geomean, policy / heuristic):")
    for label, record in rows:
        print(f"  {label:<32} {record['heldout']['geomean']:.4f}x  worst {record['heldout']['worst']:.4f}x")


def cmd_throughput(args: argparse.Namespace) -> None:
    """One exploration job per module through Celery, with 1 then 2 single-process workers; compiles/s each."""
    pb = PolicyBench.load()
    units = [u for p in args.package for u in pb.package(p).units]
    items = [{"unit": u.as_json(), "base": None, "budget": {"per_round": args.per_round, "rounds": 1}}
             for u in units]
    with tempfile.TemporaryDirectory() as tmp, redis_server(Path(tmp)) as url:
        env = {**os.environ, "MLGO_FARM_CELERY_BROKER_URL": f"{url}/0", "MLGO_FARM_CELERY_RESULT_BACKEND": f"{url}/1"}
        rates = {}
        for n in (1, 2):
            run_var = Path(tmp) / f"var-{n}"  # a cold exploration cache for each run, every time
            env["MLGO_FARM_PATHS_VAR_DIR"] = str(run_var)
            os.environ.update(env)
            workers = [subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "farm.celery_app", "worker", "--pool=solo",
                 "--loglevel=WARNING", "-n", f"bench{i}@%h", "--without-gossip", "--without-mingle",
                 "--without-heartbeat"], cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL) for i in range(n)]
            try:
                from policytrain.fanout import celery_fanout  # its Celery app reads the environment above

                until(lambda n=n: len(_ping()) >= n, 60, f"{n} worker(s)")
                t0 = time.monotonic()
                results = celery_fanout(3600)("explore", items)
                secs = time.monotonic() - t0
            finally:
                for w in workers:
                    end(w)
            compiles = sum(r["compiles"] for r in results)
            rates[n] = compiles / secs
            print(f"{n} worker(s): {compiles} compiles of {len(items)} modules in {secs:.1f} s, "
                  f"{rates[n]:.2f} compiles/s (load average {os.getloadavg()[0]:.2f})")
        print(f"two workers / one worker: {rates[2] / rates[1]:.2f}x")


def _ping() -> list:
    from farm.celery_app import app

    return app.control.ping(timeout=0.5) or []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    h = sub.add_parser("heldout")
    h.add_argument("--recipe", default="nightly", help="production's (policytrain/recipes.py) or an experiment "
                   "(bench/policy_recipes.py)")
    h.add_argument("--vocab")
    v = sub.add_parser("vocab")
    v.add_argument("--recipe", default="demo")
    v.add_argument("--farm-vocab", help="the farm's IR vocabulary: a file or store:VERSION")
    t = sub.add_parser("throughput")
    t.add_argument("--package", action="append", default=[])
    t.add_argument("--per-round", type=int, default=6)
    for p in (h, v, t):
        p.add_argument("--out", default=str(ROOT / "var" / "bench" / "policy"))
    args = ap.parse_args()
    if args.what != "throughput":
        try:
            lookup(args.recipe)  # one line now, not a training's traceback later
        except InputError as e:
            ap.error(str(e))
    print_header()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    {"heldout": cmd_heldout, "vocab": cmd_vocab, "throughput": cmd_throughput}[args.what](args)


if __name__ == "__main__":
    main()
