"""Benchmark: pykeen TransE training per epoch against a plain PyTorch TransE loop, same run, real dataset.

Both sides train on the same IR dataset (built from a Debian package with the farm's own
corpus and triplet steps) with the same dimension, batch size, negatives per positive,
optimizer, learning rate, one CPU thread. The plain loop is the textbook TransE step: L1
distance, margin ranking loss, one corrupted head or tail per positive, entity vectors
renormalised after each step (what pykeen's TransE does). Runs alternate; medians are
compared. For reference, each round also trains with pykeen's own classes (TransE,
SLCWATrainingLoop) with the heap frozen as the farm does, which must give the farm trainer's
bytes, and once stock pykeen (gc.collect() of the whole heap every epoch). Also prints the
held-out link-prediction figures of both (filtered MRR, Hits@1/10) and the load average after
(the header has it before).

    .venv/bin/python -m bench.bench_training --package lua5.4 --epochs 200 --repeat 3
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import time
from pathlib import Path

import numpy as np
import torch

from bench.harness import compare, corpora
from bench.harness.header import load, print_header
from farm.toolchain import Toolchain
from vocabgen.dataset import load_dataset
from vocabgen.params import TrainParams
from vocabgen.training import _quiet_gc, ensure_pystow_home, factory, fit


def plain_transe(triples_hrt: np.ndarray, n_ent: int, n_rel: int, p: TrainParams) -> tuple[torch.Tensor, float]:
    """The plain loop; returns (entity vectors, seconds)."""
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(p.seed)
    ent = torch.nn.Embedding(n_ent, p.dim)
    rel = torch.nn.Embedding(n_rel, p.dim)
    bound = 6 / p.dim**0.5
    torch.nn.init.uniform_(ent.weight, -bound, bound)
    torch.nn.init.uniform_(rel.weight, -bound, bound)
    with torch.no_grad():
        rel.weight.copy_(torch.nn.functional.normalize(rel.weight, dim=1))
    opt = getattr(torch.optim, p.optimizer)([*ent.parameters(), *rel.parameters()], lr=p.lr)
    data = torch.as_tensor(triples_hrt)
    loss_fn = torch.nn.MarginRankingLoss(margin=p.margin)

    def score(h, r, t):
        return -(ent(h) + rel(r) - ent(t)).norm(p=p.norm, dim=1)

    start = time.perf_counter()
    for _ in range(p.epochs):
        order = torch.randperm(len(data), generator=g)
        for i in range(0, len(data), p.batch_size):
            batch = data[order[i:i + p.batch_size]].repeat_interleave(p.negatives, dim=0)
            neg = batch.clone()
            corrupt_head = torch.rand(len(neg), generator=g) < 0.5
            random_ent = torch.randint(n_ent, (len(neg),), generator=g)
            neg[corrupt_head, 0] = random_ent[corrupt_head]
            neg[~corrupt_head, 2] = random_ent[~corrupt_head]
            pos_s = score(batch[:, 0], batch[:, 1], batch[:, 2])
            neg_s = score(neg[:, 0], neg[:, 1], neg[:, 2])
            loss = loss_fn(pos_s, neg_s, torch.ones_like(pos_s))
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                ent.weight.copy_(torch.nn.functional.normalize(ent.weight, dim=1))
    seconds = time.perf_counter() - start
    return (ent.weight.detach(), rel.weight.detach()), seconds


def pykeen_classes_fit(tf, p: TrainParams, epochs: int, frozen_heap: bool) -> tuple[torch.Tensor, float]:
    """pykeen's own TransE and SLCWATrainingLoop, configured as the farm's; returns (entity vectors, seconds)."""
    from pykeen.losses import MarginRankingLoss
    from pykeen.models import TransE
    from pykeen.training import SLCWATrainingLoop
    from pykeen.utils import set_random_seed

    torch.set_num_threads(1)
    set_random_seed(p.seed)
    model = TransE(triples_factory=tf, embedding_dim=p.dim, scoring_fct_norm=p.norm,
                   loss=MarginRankingLoss(margin=p.margin), random_seed=p.seed)
    loop = SLCWATrainingLoop(model=model, triples_factory=tf,
                             optimizer=getattr(torch.optim, p.optimizer)(model.parameters(), lr=p.lr),
                             negative_sampler="basic", negative_sampler_kwargs={"num_negs_per_pos": p.negatives},
                             automatic_memory_optimization=False)
    kw = dict(triples_factory=tf, num_epochs=epochs, batch_size=p.batch_size, use_tqdm=False, pin_memory=False)
    start = time.perf_counter()
    if frozen_heap:
        with _quiet_gc() as refreeze:
            loop.train(callbacks=refreeze, **kw)
    else:
        loop.train(**kw)
    return model.entity_representations[0]().detach(), time.perf_counter() - start


def filtered_ranks(ent: torch.Tensor, rel: torch.Tensor, test: np.ndarray, known: set, norm: int) -> np.ndarray:
    ranks = []
    for h, r, t in test.tolist():
        for side in ("head", "tail"):
            if side == "tail":
                scores = -(ent[h] + rel[r] - ent).norm(p=norm, dim=1)
                true, others = t, [(h, r, x) for x in range(len(ent))]
            else:
                scores = -(ent + rel[r] - ent[t]).norm(p=norm, dim=1)
                true, others = h, [(x, r, t) for x in range(len(ent))]
            mask = torch.tensor([o in known and o[0 if side == "head" else 2] != true for o in others])
            s = scores.masked_fill(mask, float("-inf"))
            better = (s > s[true]).sum().item()
            ties = (s == s[true]).sum().item() - 1
            ranks.append(1 + better + ties / 2)
    return np.array(ranks)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", default="lua5.4", help="Debian source package for the corpus")
    ap.add_argument("--dataset", type=Path, help="use this IR dataset instead of building one")
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path("var/bench"))
    args = ap.parse_args()
    ensure_pystow_home(args.work)
    tc = Toolchain.from_settings()
    print_header(tc)

    ds = load_dataset(args.dataset or corpora.ir_dataset(args.package, args.work, tc), "ir")
    p = dataclasses.replace(TrainParams(epochs=args.epochs), holdout=0.1).resolved("ir")
    tf = factory(ds.triples, ds.entities, ds.relations)
    print(f"dataset {ds.id}: {len(ds.triples)} unique triples, {len(ds.entities)} entities, "
          f"{len(ds.relations)} relations; dim {p.dim}, batch {p.batch_size}, negatives {p.negatives}, "
          f"{p.optimizer} lr {p.lr}, {p.epochs} epochs, 1 thread")

    def farm_trainer() -> tuple[float, bytes]:
        model, _, s = fit(tf, p)
        return s / p.epochs, model.entity_representations[0]().detach().numpy().tobytes()

    def plain_loop() -> float:
        return plain_transe(tf.mapped_triples.numpy(), len(ds.entities), len(ds.relations), p)[1] / p.epochs

    def pykeen_classes() -> tuple[float, bytes]:
        vectors, s = pykeen_classes_fit(tf, p, p.epochs, frozen_heap=True)
        return s / p.epochs, vectors.numpy().tobytes()

    runs = compare.alternate({"ours": farm_trainer, "plain": plain_loop, "classes": pykeen_classes}, args.repeat,
                             warmup=False)
    ours, classes = ([t for t, _ in runs[k]] for k in ("ours", "classes"))
    plain = runs["plain"]
    same_bytes = all(a == b for (_, a), (_, b) in zip(runs["ours"], runs["classes"], strict=True))
    a, b, c = compare.median(ours), compare.median(plain), compare.median(classes)

    def runs(xs: list[float]) -> str:
        return ", ".join(f"{x * 1e3:.2f}" for x in xs)

    print(f"pykeen (farm trainer) {a * 1e3:8.2f} ms/epoch   runs: {runs(ours)}")
    print(f"plain PyTorch loop    {b * 1e3:8.2f} ms/epoch   runs: {runs(plain)}")
    print(f"ratio pykeen/plain    {a / b:8.2f}x   (target: within 2x; median of each round's ratio "
          f"{compare.paired(ours, plain):.2f}x)")
    print(f"pykeen's own classes  {c * 1e3:8.2f} ms/epoch   runs: {runs(classes)}  = {c / b:.2f}x plain "
          f"(heap frozen; {'same' if same_bytes else 'DIFFERENT'} vectors as the farm trainer)")

    stock_epochs = max(5, p.epochs // 20)
    gc.collect()
    _, stock = pykeen_classes_fit(tf, p, stock_epochs, frozen_heap=False)
    stock /= stock_epochs
    print(f"stock pykeen loop     {stock * 1e3:8.2f} ms/epoch   ({stock_epochs} epochs; gc.collect() of the whole heap "
          f"every epoch) = {stock / b:.1f}x plain")
    print(f"load average (1, 5, 15 min) after: {load()}")

    train, test = tf.split([1 - p.holdout, p.holdout], random_state=p.seed)
    from vocabgen.training import holdout_metrics

    h = holdout_metrics(ds, p)
    (ent, rel), _ = plain_transe(train.mapped_triples.numpy(), len(ds.entities), len(ds.relations), p)
    known = {tuple(x) for x in tf.mapped_triples.tolist()}
    ranks = filtered_ranks(ent, rel, test.mapped_triples.numpy(), known, p.norm)
    print(f"held-out link prediction ({h['test_triples']} test triples, filtered, both sides):")
    print(f"  pykeen: MRR {h['mrr']:.3f}  Hits@1 {h['hits_at_1']:.3f}  Hits@10 {h['hits_at_10']:.3f}")
    mrr, h1, h10 = np.mean(1 / ranks), np.mean(ranks <= 1), np.mean(ranks <= 10)
    print(f"  plain : MRR {mrr:.3f}  Hits@1 {h1:.3f}  Hits@10 {h10:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
