"""MIR opcodes composed from their parts against the section mean (filler), on opcodes hidden from training.

    .venv/bin/python -m bench.bench_mir_compose [--dataset DS] [--work var/bench/mir-compose]
        [--splits 5] [--fraction 0.1] [--dim 100] [--epochs 1000] [--norm 1] [--among trained|composable]
        [--formula recipe[,mean,siblings,knn,ridge,neighbours]]

Without --dataset, a MIR dataset is made from tests/data/csrc (`mlgo-farm corpus sources`, `mlgo-farm
triplets mir`) under --work. Then:

1. Full training: the dataset plus its part triplets (vocabgen/compose.py `with_parts`), as `vocab train` does.
2. Per split (seeds 0..splits-1): a random `fraction` of the trained opcodes (`--among composable`: of those
   that share a part with another trained opcode, the only ones composition can say anything of) is hidden:
   every triple that mentions one is dropped, its part triplets are kept; the same recipe trains on the rest.
   Each hidden opcode gets (i) the composed vector (`compose` of its parts that a trained, not hidden, opcode shares,
   or another --formula: a part only the hidden opcode has learnt nothing but that opcode's own part triple; with
   no shared part it gets the filler, as `vocab train` would) and (ii) the filler, the mean of the trained (not
   hidden) opcodes, as `vocab train` would give it.
3. (a) Rank of the true vector: both candidates are rotated into the full training's space (orthogonal
   Procrustes on every entity trained in both, vocabgen/compare.py `rotation`); the rank, by cosine, of
   the hidden opcode's full-training vector among all trained opcode vectors of the full training (1 best),
   over the hidden opcodes that have a shared part (the others get the filler either way).
4. (b) Held-out link prediction: the dropped triples of the hidden opcodes that have a shared part, scored by
   the split's model (TransE, the recipe's norm) with the hidden rows set to composed or filler vectors; filtered
   ranks (every known
   triple filtered) of head and tail over LLVM's entities; MRR and Hits@10, apart for the side where the hidden
   opcode is given (the query) and the side where it is the entity ranked (the answer). `filler (unit)` is the
   mean scaled to unit norm like every trained vector: the plain mean is short, so it sits near every point
   and, as an answer, ranks high for any query (a hub), which flatters it. `full` is the full training's own
   score on the same triples (it trained on them: an upper bound, not a competitor).

`--formula` lists the ways to compose, one row each (default `recipe`, what `vocab train` does):

- `recipe`: vocabgen/compose.py `compose` in the recipe's norm, normalize(median_k(part_k - HasX_k)) for L1;
- `mean`: the same with the mean of part_k - HasX_k (L2);
- `siblings`: normalize(mean of the unit trained vectors of the trained opcodes sharing the most parts with it);
- `knn`: the same over the 5 trained opcodes whose `recipe` vectors are nearest (cosine) to its `recipe` vector;
- `ridge`: normalize(its `recipe` vector through the ridge map (lambda 1) from the trained opcodes' `recipe`
  vectors to their trained vectors);
- `neighbours`: normalize(coordinate-wise median of t - r and h + r over the triples of the trained opcodes
  sharing the most parts with it): where TransE would put it if it had its closest siblings' triples.

Figures are medians/means over every hidden opcode (a) or triple (b) of every split; (b) also averages the MRR per
hidden opcode of a split first (a frequent opcode such as MOV otherwise outweighs the rest).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path

from bench.harness import ROOT
from bench.harness.commands import farm
from bench.harness.header import print_header


def dataset(work: Path) -> Path:
    corpus, ds = work / "corpus", work / "ds-mir"
    if not (corpus / "corpus_description.json").is_file():
        farm("corpus", "sources", str(ROOT / "tests" / "data" / "csrc"), "-o", str(corpus))
    if not (ds / "manifest.json").is_file():
        farm("triplets", "mir", str(corpus), "-o", str(ds))
    return ds


def ranks(vectors, relations, triples, known: set, n: int, norm: int, hidden: set):
    """Filtered ranks (1 best) of the head and of the tail of each (h, t, r) triple among entities 0..n-1, each as
    (rank, "answer" when the entity ranked is a hidden opcode else "query", the hidden opcode)."""
    import numpy as np

    out = []
    ent = vectors[:n].astype(np.float64)
    for h, t, r in triples:
        rv = relations[r].astype(np.float64)
        for side in ("tail", "head"):
            if side == "tail":
                d = np.linalg.norm(vectors[h] + rv - ent, ord=norm, axis=1)
                true, others = t, [x for x in range(n) if x != t and (h, x, r) in known]
            else:
                d = np.linalg.norm(ent + rv - vectors[t], ord=norm, axis=1)
                true, others = h, [x for x in range(n) if x != h and (x, t, r) in known]
            d[others] = np.inf
            opcode = true if true in hidden else (h if side == "tail" else t)
            out.append((1 + int(np.sum(d < d[true])), "answer" if true in hidden else "query", opcode))
    return out


FORMULAS = ("recipe", "mean", "siblings", "knn", "ridge", "neighbours")


def composers(vectors, relations, parts: dict, seen, triples, norm: int, compose):
    """`formula -> (opcode's usable parts -> vector)` for the opcodes trained in this split (`seen`), see --formula."""
    import numpy as np

    def unit(x):
        return (x / max(float(np.linalg.norm(x)), 1e-12)).astype(vectors.dtype)

    own = np.array([compose(vectors, relations, parts[int(o)], norm) for o in seen], dtype=np.float64)
    trained = vectors[seen].astype(np.float64)
    trained_unit = trained / np.linalg.norm(trained, axis=1, keepdims=True)
    ridge = np.linalg.solve(own.T @ own + np.eye(own.shape[1]), own.T @ trained)
    part_sets = [{e for _, e in parts[int(o)]} for o in seen]

    def closest(ps):
        share = np.array([len({e for _, e in ps} & s) for s in part_sets])
        return share == share.max()

    def neighbours(ps):
        points = []
        for o in seen[closest(ps)]:
            out, into = triples[triples[:, 0] == o], triples[triples[:, 1] == o]
            points += [vectors[t] - relations[r] for _, t, r in out] + [vectors[h] + relations[r] for h, _, r in into]
        if not points:
            return compose(vectors, relations, ps, norm)
        return unit(np.median(np.array(points, np.float64), axis=0))

    return {
        "recipe": lambda ps: compose(vectors, relations, ps, norm),
        "mean": lambda ps: compose(vectors, relations, ps, 2),
        "siblings": lambda ps: unit(trained_unit[closest(ps)].mean(axis=0)),
        "knn": lambda ps: unit(trained_unit[np.argsort(-(own @ compose(vectors, relations, ps, norm)))[:5]].mean(0)),
        "ridge": lambda ps: unit(compose(vectors, relations, ps, norm).astype(np.float64) @ ridge),
        "neighbours": neighbours,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", type=Path, help="a MIR dataset directory (default: made from tests/data/csrc)")
    ap.add_argument("--work", type=Path, default=ROOT / "var" / "bench" / "mir-compose")
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--fraction", type=float, default=0.1)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=1000)
    ap.add_argument("--norm", type=int, default=1)
    ap.add_argument("--formula", default="recipe",
                    help=f"comma-separated, one row each, of {', '.join(FORMULAS)} (default: recipe, as `vocab train`)")
    ap.add_argument("--among", choices=("trained", "composable"), default="trained",
                    help="hide a fraction of all trained opcodes, or of those with a part another trained opcode has")
    args = ap.parse_args(argv)
    formulas = args.formula.split(",")
    if bad := [f for f in formulas if f not in FORMULAS]:
        ap.error(f"unknown --formula {', '.join(bad)} (of {', '.join(FORMULAS)})")

    import numpy as np

    from vocabgen.compare import rotation
    from vocabgen.compose import compose, with_parts
    from vocabgen.dataset import load_dataset
    from vocabgen.layout import placement
    from vocabgen.params import TrainParams
    from vocabgen.training import ensure_pystow_home, train_all

    print_header(bench="bench_mir_compose")
    ensure_pystow_home(args.work)
    ds = load_dataset(args.dataset or dataset(args.work), "mir")
    p = TrainParams(dim=args.dim, epochs=args.epochs, norm=args.norm).resolved("mir")
    n = len(ds.entities)
    opcodes = np.array([i for i, (s, _) in enumerate(placement("mir", ds.entities)) if s == "Opcodes"])
    trained = ds.trained_entities
    trained_ops = np.intersect1d(opcodes, trained)
    print(f"dataset {ds.id}: {len(ds.triples)} triples, {len(trained_ops)} trained opcodes of {len(opcodes)}; "
          f"dim {p.dim}, {p.epochs} epochs, L{p.norm}, {args.splits} splits hiding {args.fraction:.0%}", flush=True)

    full_parts = with_parts(ds)
    full = train_all(full_parts.ds, p)
    pool_ops = trained_ops
    if args.among == "composable":
        holders: dict[int, int] = {}
        for o in trained_ops:
            for _, e in full_parts.parts[int(o)]:
                holders[e] = holders.get(e, 0) + 1
        pool_ops = np.array([o for o in trained_ops if any(holders[e] > 1 for _, e in full_parts.parts[int(o)])])
        print(f"hiding among the {len(pool_ops)} trained opcodes that share a part with another", flush=True)
    known = {tuple(x) for x in ds.triples.tolist()}
    n_hide = max(1, math.ceil(len(pool_ops) * args.fraction))
    rank_a: dict[str, list[int]] = {f: [] for f in (*formulas, "filler")}
    rank_b: dict[str, list[tuple[int, str, int]]] = {f: [] for f in (*formulas, "filler", "filler (unit)", "full")}
    n_composed = 0
    for split in range(args.splits):
        rng = np.random.default_rng(split)
        hidden = np.sort(rng.choice(pool_ops, n_hide, replace=False))
        drop = np.isin(ds.triples[:, 0], hidden) | np.isin(ds.triples[:, 1], hidden)
        kept = dataclasses.replace(ds, triples=ds.triples[~drop])
        ext = with_parts(kept, mentioned=trained)  # the hidden opcodes keep their part triplets
        assert ext.ds.entities == full_parts.ds.entities, "same part entities as the full training"
        res = train_all(ext.ds, p)
        seen_ops = np.setdiff1d(trained_ops, hidden)
        filler = res.vectors[seen_ops].mean(axis=0)
        # as `vocab train` would: only parts a trained (not hidden) opcode shares; none left, the filler
        shared = {e for o in seen_ops for _, e in ext.parts[int(o)]}
        usable = {int(o): [(r, e) for r, e in ext.parts[int(o)] if e in shared] for o in hidden}
        make = composers(res.vectors, res.relations, ext.parts, seen_ops, kept.triples, p.norm, compose)
        composed = {f: {o: make[f](ps) if ps else filler for o, ps in usable.items()} for f in formulas}
        n_composed += sum(1 for ps in usable.values() if ps)
        # (a) rotate the split's space onto the full training's, anchored on what both trained
        anchors = np.setdiff1d(np.unique(ext.ds.triples[:, :2]), hidden)
        rot = rotation(res.vectors[anchors], full.vectors[anchors])
        pool = full.vectors[trained_ops].astype(np.float64)
        pool /= np.linalg.norm(pool, axis=1, keepdims=True)
        shown = []
        for o in hidden:
            o = int(o)
            if not usable[o] or rot is None:
                shown.append(f"{ds.entities[o]} (no shared part)" if not usable[o] else ds.entities[o])
                continue
            true = int(np.flatnonzero(trained_ops == o)[0])
            got = []
            for label, q in (*((f, composed[f][o]) for f in formulas), ("filler", filler)):
                qa = q.astype(np.float64) @ rot
                sims = pool @ (qa / max(np.linalg.norm(qa), 1e-12))
                rank_a[label].append(1 + int(np.sum(sims > sims[true])))
                got.append(rank_a[label][-1])
            parts = "+".join(full_parts.ds.entities[e] for _, e in usable[o])
            shown.append(f"{ds.entities[o]} [{parts}] {' / '.join(map(str, got[:-1]))} vs {got[-1]}")
        # (b) the hidden opcodes' own triples, scored by the split's model (those of composed opcodes)
        comp = np.array([o for o in usable if usable[o]], dtype=np.int64)
        test = ds.triples[drop & (np.isin(ds.triples[:, 0], comp) | np.isin(ds.triples[:, 1], comp))].tolist()
        hid = {int(o) for o in hidden}
        unit = filler / np.linalg.norm(filler)
        for label in (*formulas, "filler", "filler (unit)"):
            v = res.vectors.copy()
            for o in hid:
                v[o] = composed[label][o] if label in composed else filler if label == "filler" else unit
            rank_b[label] += ranks(v, res.relations, test, known, n, p.norm, hid)
        rank_b["full"] += ranks(full.vectors, full.relations, test, known, n, p.norm, hid)
        print(f"split {split}: hid {len(hidden)} opcodes, (a) rank {' / '.join(formulas)} vs filler: "
              f"{'; '.join(shown)}; "
              f"(b) {len(test)} triples; alignment on {len(anchors)} anchors"
              + ("" if rot is not None else f" NOT UNIQUE (fewer than dim {p.dim}): (a) skipped"), flush=True)

    print(f"{n_composed} of {args.splits * n_hide} hidden opcodes had a part a trained opcode shares (composed); "
          "the others get the filler in both columns")
    print(f"(a) rank of the true vector among {len(trained_ops)} trained opcode vectors (1 best):")
    for label, r in rank_a.items():
        if r:
            a = np.array(r)
            print(f"    {label:13s} median {np.median(a):6.1f}  mean {np.mean(a):6.1f}  top-1 {np.mean(a == 1):.2f}"
                  f"  top-5 {np.mean(a <= 5):.2f}  (n={len(a)})")
    print(f"(b) held-out link prediction of the hidden opcodes' triples (filtered, head and tail, over {n} entities):")
    for side, what in (("query", "the hidden opcode given, the other entity ranked"),
                       ("answer", "the hidden opcode ranked among all entities")):
        print(f"  {what}:")
        for label, rs in rank_b.items():
            r = np.array([x for x, s, _ in rs if s == side])
            by_op: dict[int, list[int]] = {}
            for x, s, o in rs:
                if s == side:
                    by_op.setdefault(o, []).append(x)
            macro = np.mean([np.mean(1 / np.array(v)) for v in by_op.values()]) if by_op else float("nan")
            if len(r):
                print(f"    {label:13s} MRR {np.mean(1 / r):.3f}  Hits@10 {np.mean(r <= 10):.3f}  "
                      f"median rank {np.median(r):.0f}  (n={len(r)}); per-opcode mean MRR {macro:.3f} "
                      f"({len(by_op)} opcode(s) of the splits)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
