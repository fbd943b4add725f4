"""The regalloc-eviction-for-speed trainer: clone LLVM's rule, improve by ES on RegAllocScore, keep the best on
validation.

ml-compiler-opt's recipe for its eviction policy, scaled to a farm worker, on the problem `EVICT_SPEED`
(policytrain/problem.py):

    clone:     compile every training module with LLVM's default eviction rule rebuilt from the features
               (policytrain/evict_model.py `rebuilt_default`: release mode sends no default decision), log every
               decision (the 33 candidates' features, the mask, the rule's choice), and fit the per-candidate
               scorer to it (masked softmax cross-entropy, torch)
    improve:   evolution strategies (policytrain/improve.py `es_step`, Adam): antithetic pairs, each on one
               training module, rewarded by the relative RegAllocScore saving of the module against LLVM's own
               build of it (policytrain/evict_reward.py on MIR stopped after `virtregrewriter`)
    keep:      after cloning and after every ES step, each validation package's score ratio (policy / heuristic,
               functions summed over its modules); the checkpoint with the lowest geomean is written (a checkpoint
               with a failed compile ranks last)

A compile LLVM crashes on, or the host stops (a bad answer, a timeout), is counted and skipped: it yields no reward
and no score, never a hang (every compile and `llc` run has a timeout). Compiles run in `jobs` threads.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from farm.errors import FarmError, InputError, first_line
from farm.numeric import geomean
from farm.toolchain import Toolchain
from policytrain import evict_reward
from policytrain.corpora import Package, names
from policytrain.evict_context import FunctionEmbedder
from policytrain.evict_model import EvictPolicy, Layout, Scorer, scorer_policy, teacher
from policytrain.improve import Adam, es_step
from policytrain.mlp import Mlp
from policytrain.params import EsParams
from policytrain.problem import EVICT_SPEED
from policytrain.units import Unit


@dataclass(frozen=True)
class EvictRecipe:
    """How hard each stage works."""

    hidden: tuple[int, ...] = (32, 32)
    #: (zlib's first 8 -O2 modules, 410 decisions: 48 % of the rule's choices learnt with (8,) x 8 epochs, 74 % with
    #: (16,) x 30, 88 % with (32, 32) x 60)
    epochs: int = 80
    batch: int = 256
    lr: float = 3e-3
    es: EsParams = field(default_factory=lambda: EsParams(steps=8, pairs=8))
    #: at most this many modules per training package (sampled by name hash), None: all; validation takes all
    max_modules: int | None = 40
    #: seconds one compile (or one `llc` run scoring it) may take
    timeout: float = 120.0
    seed: int = 0


RECIPES = {
    # a first real policy: minutes on a 2-core worker for a few packages
    "small": EvictRecipe(),
    # the suite's: a handful of modules, two ES steps of two pairs
    "smoke": EvictRecipe(hidden=(16,), epochs=30, es=EsParams(steps=2, pairs=2, min_compiled=0.5), max_modules=4,
                         timeout=60.0),
}


def recipe(name: str) -> EvictRecipe:
    if name not in RECIPES:
        raise InputError(f"unknown eviction recipe {name!r}: use one of {', '.join(RECIPES)}")
    return RECIPES[name]


def module_score(unit: Unit, policy: object | None, toolchain: Toolchain, timeout: float,
                 embedder: FunctionEmbedder | None = None) -> tuple[float | None, str | None, dict | None]:
    """(the module's RegAllocScore, its functions summed, None, its functions' embeddings) compiled with `policy`
    (None: LLVM's own advisor, no channel), or (None, why it failed, None). The embeddings are read only from LLVM's
    own build, with an `embedder` (policytrain/evict_context.py)."""
    from policyhost.launcher import run_compile

    with tempfile.TemporaryDirectory(prefix="mlgo-evict-") as tmp:
        mir = Path(tmp) / "m.mir"
        args = [*unit.flags, *evict_reward.mir_args(unit.bitcode, mir)]
        try:
            if policy is None:
                toolchain.run("clang", args, timeout=timeout, subject=unit.name)
            else:
                out = run_compile(["clang", *args], policy, advisor=EVICT_SPEED.advisor, toolchain=toolchain,
                                  timeout=timeout)
                if not out.ok:
                    return None, out.error, None
            score = float(sum(evict_reward.function_scores(toolchain, mir, timeout).values()))
            embedded = embedder.embed(toolchain, mir, timeout) if embedder is not None and policy is None else None
            return score, None, embedded
        except FarmError as e:
            return None, first_line(e), None


@dataclass
class EvictTrainer:
    """One training run; `progress` receives a line per stage, `stage` (farm/progress.py `steps`) a step per stage."""

    toolchain: Toolchain
    train: tuple[Package, ...]
    validation: tuple[Package, ...]
    recipe: EvictRecipe
    jobs: int = 2
    progress: Callable[[str], None] = print
    stage: object = None
    history: list[dict] = field(default_factory=list)
    failed: int = 0
    #: the MIR2Vec vocabulary whose function embeddings the policy reads (None: the release features alone)
    embedder: FunctionEmbedder | None = None
    _heuristic: dict[str, float | None] = field(default_factory=dict)
    _embeddings: dict[str, dict] = field(default_factory=dict)

    def _map(self, fn: Callable, items: Sequence) -> list:
        if self.jobs <= 1 or len(items) <= 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(self.jobs) as pool:
            return list(pool.map(fn, items))

    def _scores(self, jobs: Sequence[tuple[Unit, object | None]]) -> list[float | None]:
        """Each (module, policy)'s score, None for a compile that failed: counted, said, skipped."""
        out = self._map(lambda job: module_score(job[0], job[1], self.toolchain, self.recipe.timeout,
                                                 self.embedder), jobs)
        for (unit, _), (_, error, embedded) in zip(jobs, out, strict=True):
            if error is not None:
                self.failed += 1
                self.progress(f"skipped {unit.name}: {error}")
            if embedded is not None:
                self._embeddings[unit.digest()] = embedded
        return [score for score, _, _ in out]

    def heuristic(self, units: Sequence[Unit]) -> list[float | None]:
        """LLVM's own score of each module (computed once)."""
        todo = [u for u in units if u.digest() not in self._heuristic]
        for u, s in zip(todo, self._scores([(u, None) for u in todo]), strict=True):
            self._heuristic[u.digest()] = s
        return [self._heuristic[u.digest()] for u in units]

    @property
    def dim(self) -> int:
        return 0 if self.embedder is None else self.embedder.dim

    def policy(self, unit: Unit, scorer: Scorer) -> EvictPolicy:
        """`scorer` serving `unit`, with its functions' embeddings when the scorer reads them."""
        return scorer_policy(scorer, self._embeddings.get(unit.digest()))

    def validate(self, scorer: Scorer) -> dict[str, float | None]:
        """Each validation package's score ratio, policy / heuristic (None: a compile failed)."""
        units = [u for p in self.validation for u in p.units]
        heur = self.heuristic(units)
        pol = self._scores([(u, self.policy(u, scorer)) for u in units])
        out, at = {}, 0
        for p in self.validation:
            h, s = heur[at:at + len(p.units)], pol[at:at + len(p.units)]
            at += len(p.units)
            ok = all(x is not None for x in h + s) and sum(h) > 0
            out[p.name] = sum(s) / sum(h) if ok else None
        return out

    def clone(self, units: Sequence[Unit]) -> tuple[Scorer, dict]:
        """Log the rebuilt default rule's decisions on the training modules and fit the scorer to them."""
        heur = self.heuristic(units)  # first: LLVM's own build is where the embeddings are read
        logs = [teacher(embeddings=self._embeddings.get(u.digest()), dim=self.dim) for u in units]
        scores = self._scores(list(zip(units, logs, strict=True)))
        good = [pol for pol, score in zip(logs, scores, strict=True) if score is not None and pol.ys]
        both = [(s, h) for s, h in zip(scores, heur, strict=True) if s is not None and h]
        if not good:
            raise InputError(f"no training module gave an eviction decision to learn from ({len(units)} modules; "
                             "eviction needs register pressure)")
        layout = good[0].layout
        x = np.concatenate([np.stack(p.xs) for p in good if p.layout == layout])
        mask = np.concatenate([np.stack(p.masks) for p in good if p.layout == layout])
        y = np.concatenate([np.asarray(p.ys) for p in good if p.layout == layout])
        scorer = fit(layout, x, mask, y, self.recipe)
        agree = float(np.mean(masked_choice(scorer.scores(x), mask) == y))
        teacher_ratio = sum(s for s, _ in both) / sum(h for _, h in both) if both else None
        return scorer, {"decisions": len(y), "modules": len(good), "agreement": agree, "teacher": teacher_ratio}

    def run(self) -> tuple[Scorer, dict]:
        units = [u for p in self.train for u in p.units]
        self.progress(f"train on {len(units)} modules of {names(self.train)}; validate on {names(self.validation)}")
        scorer, info = self.clone(units)
        val = self.validate(scorer)
        self._record("bc", val, **info)
        best = (rank(val), scorer, "bc")
        rule = "" if info["teacher"] is None else f" (the rule scores {info['teacher']:.4f}x the heuristic there)"
        self.progress(f"bc: {info['decisions']} decisions of the default rule on {info['modules']} modules{rule}, "
                      f"clone agrees on {100 * info['agreement']:.1f}%, validation {show(val)}")
        self._step()
        best = self._evolve(scorer, units, best)
        measured = best[0][0] == 0
        self.progress(f"best on validation: {best[2]} at " + (
            f"{best[0][1]:.4f}x the heuristic's RegAllocScore ({'lower' if best[0][1] < 1 else 'NOT lower'} than it)"
            if measured else "no ratio (failed compiles)") + f"; {self.failed} compile(s) failed and were skipped")
        return best[1], {"chosen": best[2], "validation": best[0][1] if measured else None,
                         "failed_compiles": self.failed, "history": self.history}

    def _evolve(self, scorer: Scorer, units: Sequence[Unit], best: tuple) -> tuple:
        es = self.recipe.es
        heur = self.heuristic(units)
        usable = [i for i, h in enumerate(heur) if h]
        if es.steps <= 0 or not usable:
            return best
        adam = Adam(es.step_size)

        def evaluate(jobs: list[tuple[Mlp, int]]) -> list[float | None]:
            scores = self._scores([(units[usable[i]], self.policy(units[usable[i]], scorer.with_net(net)))
                                   for net, i in jobs])
            return [None if s is None else EVICT_SPEED.reward(s, heur[usable[i]], es.growth_weight)
                    for s, (_, i) in zip(scores, jobs, strict=True)]

        net = scorer.net
        for step in range(1, es.steps + 1):
            net, info = es_step(net, adam, es, step, len(usable), evaluate)
            val = self.validate(scorer.with_net(net))
            self._record("es", val, **info)
            if rank(val) < best[0]:
                best = (rank(val), scorer.with_net(net), f"es step {step}")
            mean = info["mean_reward"] if info["mean_reward"] is not None else float("nan")
            self.progress(f"es step {step}/{es.steps}: {info['compiled']}/{2 * es.pairs} compiled, mean reward "
                          f"{mean:+.4f}, validation {show(val)} (best {best[2]})")
            self._step()
        return best

    def _record(self, stage: str, val: dict, **info) -> None:
        r = rank(val)
        self.history.append({"stage": stage, "validation_packages": val, "validation": None if r[0] else r[1], **info})

    def _step(self) -> None:
        if self.stage is not None:
            self.stage.update()


def rank(val: dict[str, float | None]) -> tuple[int, float]:
    """Lower is better: a checkpoint with every package measured before one with a failed compile, then geomean."""
    failed = sum(1 for r in val.values() if r is None)
    return (1, float(failed)) if failed or not val else (0, geomean(list(val.values())))


def show(val: dict[str, float | None]) -> str:
    r = rank(val)
    if r[0]:
        return f"no ratio (failed compiles in {', '.join(n for n, v in val.items() if v is None)})"
    return f"{r[1]:.4f}x (worst package {max(val.values()):.4f}x)"


def masked_choice(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The masked argmax of each row (the first of equal scores, as the host's `masked_argmax`)."""
    return np.where(mask, scores, -np.inf).argmax(axis=1)


def fit(layout: Layout, x: np.ndarray, mask: np.ndarray, y: np.ndarray, rec: EvictRecipe) -> Scorer:
    """The scorer fitted to decisions (x: n x width x F, mask, choices y) by masked softmax cross-entropy (torch,
    seeded, one thread); returned as numpy weights."""
    import torch

    torch.manual_seed(rec.seed)
    torch.set_num_threads(1)
    base = Scorer.init(layout, x[mask], rec.hidden, rec.seed)
    layers = [torch.nn.Linear(w.shape[0], w.shape[1], dtype=torch.float64) for w in base.net.ws]
    with torch.no_grad():
        for lin, w, b in zip(layers, base.net.ws, base.net.bs, strict=True):
            lin.weight.copy_(torch.from_numpy(w.T.copy()))
            lin.bias.copy_(torch.from_numpy(b.copy()))
    mods: list[torch.nn.Module] = []
    for i, lin in enumerate(layers):
        mods += [lin] if i == len(layers) - 1 else [lin, torch.nn.ReLU()]
    net = torch.nn.Sequential(*mods)
    from policytrain.evict_model import clean
    from policytrain.mlp import scale

    h = torch.from_numpy((scale(clean(x)) - base.net.mean) / base.net.std)
    m, yt = torch.from_numpy(mask), torch.from_numpy(y.astype(np.int64))
    opt = torch.optim.Adam(net.parameters(), lr=rec.lr)
    gen = torch.Generator().manual_seed(rec.seed)
    for _ in range(rec.epochs):
        for b in torch.randperm(len(yt), generator=gen).split(rec.batch):
            opt.zero_grad()
            z = net(h[b]).squeeze(-1).masked_fill(~m[b], -1e9)
            torch.nn.functional.cross_entropy(z, yt[b]).backward()
            opt.step()
    with torch.no_grad():
        ws = tuple(lin.weight.detach().numpy().T.copy() for lin in layers)
        bs = tuple(lin.bias.detach().numpy().copy() for lin in layers)
    return base.with_net(Mlp(base.net.features, base.net.mean, base.net.std, ws, bs))


def train_to(output: Path, toolchain: Toolchain, train: tuple[Package, ...], validation: tuple[Package, ...],
             recipe_name: str, *, jobs: int = 2, progress: Callable[[str], None] = print,
             desc: str = "policy train-evict", embedder: FunctionEmbedder | None = None) -> dict:
    """Train, write OUTPUT.onnx, the native host's OUTPUT.weights (policytrain/native_export.py) and the record
    OUTPUT.json; return the record."""
    from farm import jsonio
    from farm.atomic import write_atomic
    from farm.progress import steps
    from farm.signing import farm_key, sign
    from policytrain import native_export
    from policytrain.evict_onnx import to_onnx

    rec = recipe(recipe_name)
    t0 = time.monotonic()
    t = EvictTrainer(toolchain, train, validation, rec, jobs=jobs, progress=progress, embedder=embedder)
    with steps(1 + max(0, rec.es.steps), f"{desc}: training (bc and ES steps)") as t.stage:
        scorer, info = t.run()
    t.stage = None
    val = info["validation"]
    meta = {"mlgo.kind": EVICT_SPEED.kind, "mlgo.advice": EVICT_SPEED.advice, "mlgo.recipe": recipe_name,
            "mlgo.validation": "none" if val is None else f"{val:.4f}",
            "mlgo.mir_vocab": "none" if embedder is None else embedder.name}
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(output, to_onnx(scorer, meta))
    if not scorer.layout.context:  # the native host's file (LLVM sends no function embedding: it serves none)
        native_export.save_weights(scorer.net, output.with_suffix(native_export.SUFFIX))
    record = {"kind": EVICT_SPEED.kind, "advisor": EVICT_SPEED.advisor, "level": EVICT_SPEED.level,
              "measure": EVICT_SPEED.measure, "model": str(output), "recipe": recipe_name,
              "params": dataclasses.asdict(rec), "llvm": toolchain.describe(),
              "splits": {"train": [p.name for p in train], "validation": [p.name for p in validation]},
              "modules": {"train": sum(len(p.units) for p in train),
                          "validation": sum(len(p.units) for p in validation)},
              "features": list(scorer.layout.names), "mir_vocab": None if embedder is None else embedder.name,
              "seconds": round(time.monotonic() - t0, 1), **info}
    # signed over the model's bytes, as the inliner's record: `policy publish` trusts no copied claim
    record = sign(output.read_bytes(), record, farm_key())
    write_atomic(output.with_suffix(".json"), jsonio.dumps(record))
    return record
