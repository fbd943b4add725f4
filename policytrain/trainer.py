"""The inliner-for-size trainer: explore, clone, evolve, keep the best on validation, report held out.

One loop, many configurations (ml-compiler-opt's one runner per problem): a `TrainingRecipe` says how
hard each stage works, `Splits` which packages train, validate and evaluate, and a `Fanout`
where the compiles run (threads here, Celery workers on a farm: policytrain/fanout.py).

    round r:  explore every training module from the current base (heuristic, then the policy)
              -> weighted behavioural cloning on the best trajectories -> measure on validation
    then:     evolution strategies from the best clone, measured on validation after each step
    returns:  the policy best on validation (even when it does not beat the heuristic: the
              promotion gate holds such a policy back with its numbers), and its held-out table

"Best on validation" is judged by the promotion gate's two bars, not by the geomean alone: a
checkpoint that grows no validation package past `cap` (the gate's `1 + policy_size_tolerance`)
beats every one that does, and among those the lower geomean wins. A geomean alone lets one
package's gains hide another's growth, which is what the gate refuses on the evaluation packages.

Validation and evaluation packages are whole packages never trained on: a policy that only
memorised its training modules shows it there. A split that leaves any of the three empty, names one corpus
twice, or whose packages share code nobody decided on (policytrain/overlap.py), is one clear line before anything
compiles (policytrain/corpora.py, re-exported here).
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from farm import hold, jsonio
from farm.errors import InputError
from farm.numeric import geomean
from farm.toolchain import Toolchain
from policytrain import draws, mlp_io, native_export
from policytrain.corpora import (
    SPLITS,
    Package,
    Plan,
    Splits,
    build_splits,
    check_names,
    package,
    package_corpus,
    plan_splits,
    resolve_splits,
    specs,
)
from policytrain.corpora import names as _names
from policytrain.explore import ModuleResult, merge
from policytrain.heldout import chosen, format_table, heldout_table, package_row
from policytrain.improve import Adam, bagged, bc_dataset, es_step, fit_bc, fit_prior, reward
from policytrain.mlp import LIMITS, Mlp, average
from policytrain.problem import INLINE_SIZE
from policytrain.recipes import TrainingRecipe, recipe
from policytrain.units import Fanout, Unit
from workers.linked import CXX_SUFFIXES

__all__ = ["SPLITS", "Measured", "Package", "Plan", "Splits", "Trainer", "build_splits", "check_names",
           "package", "package_corpus", "plan_splits", "resolve_splits", "specs", "train_to"]
log = logging.getLogger(__name__)

def _which(seed: int | None, seeds: int) -> str:
    """Which clone a round kept, for its progress line: one of several seeds, or their average (seed None)."""
    if seeds < 2:
        return ""
    return f", {seeds} seeds averaged" if seed is None else f", seed {seed} of {seeds}"


@dataclass(frozen=True)
class Measured:
    """A checkpoint on validation: `.text` policy / heuristic per package (None: a compile failed), and their geomean
    and worst (NaN while a package has no ratio)."""

    packages: tuple[tuple[str, float | None], ...]

    @property
    def failed(self) -> list[str]:
        return [n for n, r in self.packages if r is None]

    @property
    def geomean(self) -> float:
        return float("nan") if self.failed else geomean([r for _, r in self.packages])

    @property
    def worst(self) -> float:
        return float("nan") if self.failed else max(r for _, r in self.packages)

    def fields(self) -> dict:
        """A history row's or the result's validation fields (`validation` stays the geomean the dashboard plots)."""
        return {"validation": self.geomean, "validation_worst": self.worst, "validation_packages": dict(self.packages)}

    def rank(self, cap: float | None) -> tuple[int, float]:
        """Lower is better: every checkpoint within `cap` before any beyond it; then geomean, or the worst
        package for those beyond (the least growth is the nearest to acceptable). A checkpoint that failed a
        compile comes last: what it does to the package it failed on is unknown."""
        if self.failed:
            return (2, float(len(self.failed)))
        if cap is None or self.worst <= cap:
            return (0, self.geomean)
        return (1, self.worst)

    def __str__(self) -> str:
        if self.failed:
            return f"no ratio (failed compiles in {', '.join(self.failed)})"
        return f"{self.geomean:.4f}x (worst package {self.worst:.4f}x)"


@dataclass
class Trainer:
    """State of one training run; `progress` receives one line per stage (the Buildbot step shows them)."""

    toolchain: Toolchain
    splits: Splits
    recipe: TrainingRecipe
    fanout: Fanout
    progress: Callable[[str], None] = print
    #: the IR2Vec vocabulary whose embeddings the policy reads (None: LLVM's features alone)
    vocab: Path | None = None
    #: no validation package above this ratio, if a checkpoint can manage it (Measured.rank); None: geomean only
    cap: float | None = None
    history: list[dict] = field(default_factory=list)
    #: the training stage's progress (farm/progress.py `steps`): a step per round and per ES step; None: no count
    stage: Any = None
    _heuristic: dict[str, int | None] = field(default_factory=dict)
    _heuristic_links: dict[str, dict] = field(default_factory=dict)

    @property
    def _vocab(self) -> str | None:
        return None if self.vocab is None else str(self.vocab)

    # -- measuring ------------------------------------------------------------------------------
    def heuristic_sizes(self, units: Sequence[Unit]) -> list[int | None]:
        """LLVM's heuristic `.text` per module (measured once per run)."""
        keys = [u.digest() for u in units]  # each reads the module's bitcode: once per call, not three times
        todo = [(k, u) for k, u in zip(keys, units, strict=True) if k not in self._heuristic]
        sizes = self.fanout("size", [{"unit": u.as_json(), "policy": None} for _, u in todo])  # needs no vocabulary
        self._heuristic.update({k: s for (k, _), s in zip(todo, sizes, strict=True)})
        return [self._heuristic[k] for k in keys]

    def policy_sizes(self, units: Sequence[Unit], policy: Mlp | None, model: str | None = None,
                     why: list[str | None] | None = None) -> list[int | None]:
        """`.text` per module compiled with the network `policy`, or with the ONNX file `model`; `why`, when given,
        receives each compile's failure (None where it compiled) for the line a failed table ends with."""
        p = None if policy is None else mlp_io.as_json(policy)
        got = self.fanout("size", [{"unit": u.as_json(), "policy": p, "model": model, "vocab": self._vocab,
                                    **({} if why is None else {"why": True})} for u in units])
        if why is None:
            return got
        pairs = [r if isinstance(r, list) else [r, None] for r in got]  # (a worker of an older release: the size)
        why += [e for _, e in pairs]
        return [s for s, _ in pairs]

    def package_ratios(self, packages: Sequence[Package], policy: Mlp | None, model: str | None = None) -> list[dict]:
        """Each package's row (policytrain/heldout.py `package_row`): policy / heuristic `.text` over all its modules
        and over those it ships, and of the files it links (`linked`, for a package that declares them); no ratio
        for a package with a failed compile or link."""
        linked = self.linked(packages, policy, model)
        rows = []
        for p in packages:
            if p.name in linked:
                h, s = linked[p.name]
                rows.append(package_row(p, h["sizes"], s["sizes"], s["errors"], linked=(h, s)))
                continue
            h = self.heuristic_sizes(p.units)
            why: list[str | None] = []
            s = self.policy_sizes(p.units, policy, model, why) if policy is not None or model else h
            rows.append(package_row(p, h, s, why))
        return rows

    def linked(self, packages: Sequence[Package], policy: Mlp | None, model: str | None = None
               ) -> dict[str, tuple[dict, dict]]:
        """The packages that declare linked files, each compiled and linked (policytrain/fanout.py `link_job`) with
        the heuristic (once per run) and with the policy: package -> (heuristic's, policy's) results. All of them in
        one fan-out call, so the packages link side by side."""
        todo = [p for p in packages if p.outputs]
        if not todo:
            return {}

        def item(p: Package, pol: Mlp | None, mod: str | None) -> dict:
            heuristic = pol is None and not mod
            return {"package": p.name, "units": [u.as_json() for u in p.units],
                    "outputs": [o.as_json() for o in p.outputs], "vocab": None if heuristic else self._vocab,
                    "policy": None if pol is None else mlp_io.as_json(pol), "model": mod}

        keys = {p.name: jsonio.dumps([p.name, [u.digest() for u in p.units], [o.as_json() for o in p.outputs]])
                for p in todo}
        fresh = [p for p in todo if keys[p.name] not in self._heuristic_links]
        with_policy = policy is not None or bool(model)
        got = self.fanout("link", [item(p, None, None) for p in fresh]
                          + ([item(p, policy, model) for p in todo] if with_policy else []))
        self._heuristic_links.update({keys[p.name]: r for p, r in zip(fresh, got, strict=False)})
        mine = got[len(fresh):]
        return {p.name: (self._heuristic_links[keys[p.name]],
                         mine[i] if with_policy else self._heuristic_links[keys[p.name]]) for i, p in enumerate(todo)}

    def validate(self, policy: Mlp) -> Measured:
        """A checkpoint's ratio per validation package: of the files it links where it declares them (what the
        linker keeps), else of all its modules."""
        return Measured(tuple((r["package"], chosen(r)["ratio"])
                              for r in self.package_ratios(self.splits.validation, policy)))

    @property
    def choose_cap(self) -> float | None:
        """The cap a checkpoint is chosen under: the recipe's own (`TrainingRecipe.cap`), else the gate's."""
        return self.cap if self.recipe.cap is None else self.recipe.cap

    def _better(self, a: Measured, b: Measured | None) -> bool:
        return b is None or a.rank(self.choose_cap) < b.rank(self.choose_cap)

    # -- stages -----------------------------------------------------------------------------------
    def explore(self, base: Mlp | None, units: Sequence[Unit], prior: Mlp | None = None) -> list[ModuleResult]:
        b, budget = (None if base is None else mlp_io.as_json(base)), dataclasses.asdict(self.recipe.budget)
        p = None if prior is None else mlp_io.as_json(prior)
        found = self.fanout("explore", [{"unit": u.as_json(), "base": b, "budget": budget, "vocab": self._vocab,
                                         "prior": p} for u in units])
        return [ModuleResult.from_json(d) for d in found]

    def guided(self, found: list[ModuleResult], units: Sequence[Unit], r: int) -> list[ModuleResult]:
        """The heuristic searched again, most promising flips first (TrainingRecipe.prior); each module's two searches
        merged."""
        prior = fit_prior(found, self.recipe.prior)
        if prior is None:
            self.progress(f"round {r}: too few smaller flips to learn an exploration prior from; one search")
            return found
        again = self.explore(None, units, prior)
        better = sum(1 for m in again if m.flips)
        self.progress(f"round {r}: guided search of the heuristic: {better} of {len(again)} modules smaller")
        self._record(stage="guided", round=r, improved=better)
        return [merge(a, b) for a, b in zip(found, again, strict=True)]

    def linked_units(self, packages: Sequence[Package]) -> list[Unit]:
        """The packages' modules, each measured by what it adds to its package's linked files: a COMDAT group
        (template, inline function) that another module of the package carries too is kept by the linker whatever
        this module does, so it counts nothing in this module's size (`Unit.shared`, from one heuristic compile of
        every module). Without this a search and ES are paid for inlining away copies the linker drops (issue 45).
        C has no COMDAT groups: a package without C++ modules is returned as it is, at no cost."""
        cxx = [p for p in packages if any(u.name.endswith(CXX_SUFFIXES) for u in p.units)]
        parts = self.fanout("parts", [{"unit": u.as_json()} for p in cxx for u in p.units])
        found = iter(parts)
        shared: dict[tuple[str, str], frozenset[str]] = {}
        for p in cxx:
            mine = [next(found) for _ in p.units]
            counts = Counter(g for part in mine if part for g in part["groups"])
            for u, part in zip(p.units, mine, strict=True):
                shared[p.name, u.name] = frozenset(g for g in (part or {}).get("groups", {}) if counts[g] > 1)
        return [replace(u, shared=shared.get((p.name, u.name), frozenset())) for p in packages for u in p.units]

    def run(self) -> tuple[Mlp, dict]:
        self.splits.check()
        units = self.linked_units(self.splits.train)
        if any(u.shared for u in units):
            self.progress(f"linked accounting: {sum(1 for u in units if u.shared)} of {len(units)} training modules "
                          "share COMDAT groups with another module of their package; those count once, in none")
        self.progress(f"train on {len(units)} modules of {_names(self.splits.train)}; validate on "
                      f"{_names(self.splits.validation)}")
        best: tuple[Measured | None, Mlp | None, str] = (None, None, "none")
        base: Mlp | None = None
        results: list[ModuleResult] = []
        for r in range(1, self.recipe.rounds + 1):
            found = self.explore(base, units)
            hold.checkpoint("policy training")  # tests only (farm/hold.py); returns at once otherwise
            if base is None and self.recipe.prior is not None:
                found = self.guided(found, units, r)
            results += found  # every round's trajectories stay in the cloning set
            saved = sum((m.base_size or 0) - (m.best_size or 0) for m in found)
            total = sum(m.base_size or 0 for m in found) or 1
            better = sum(1 for m in found if m.flips)
            every = bc_dataset(results, self.recipe.bc)
            clones = [(seed, self._clone(results, every, seed)) for seed in self.recipe.seeds]
            if self.recipe.ensemble:
                clones = [(None, average([net for _, net in clones]))]
            held = {"hold_no": self.recipe.hold_no, **{lim.name: getattr(self.recipe, lim.name) for lim in LIMITS}}
            val, seed, policy = min(((self.validate(p), seed, p) for seed, net in clones
                                     for p in (replace(net, stick=k, **held) for k in self.recipe.sticks)),
                                    key=lambda vsp: vsp[0].rank(self.choose_cap))
            self._record(stage="bc", round=r, explored=len(found), improved=better, explore_saved=saved / total,
                         **val.fields(), stick=policy.stick, seed=seed)
            self.progress(f"round {r}/{self.recipe.rounds}: explored {len(found)} modules, {better} smaller "
                          f"(-{100 * saved / total:.2f}% .text), cloned policy on validation {val} "
                          f"(stick {policy.stick:g}{_which(seed, len(self.recipe.seeds))})")
            if self._better(val, best[0]):
                best = (val, policy, f"bc round {r}")
            base = policy
            self._step()
        start = best[1] or base
        best = self._evolve(start, units, best)
        verdict = "smaller than" if best[0].geomean < 1 else "NOT smaller than"
        self.progress(f"best on validation: {best[2]} at {best[0]} the heuristic ({verdict} it)")
        return best[1], {**best[0].fields(), "chosen": best[2], "history": self.history}

    def _clone(self, results: Sequence[ModuleResult], every: tuple, seed: int) -> Mlp:
        """One seed's clone: of `every` explored module's data (bc_dataset, made once a round), or of its own
        bootstrap draw (TrainingRecipe.bag), normalised on every module either way, so that the seeds' clones can be
        averaged."""
        bc = replace(self.recipe.bc, seed=seed)
        data = bc_dataset(bagged(results, seed), bc) if self.recipe.bag else every
        return fit_bc(*data, bc, init=Mlp.init(every[0], every[1], bc.hidden, seed))

    def _evolve(self, policy: Mlp, units: Sequence[Unit], best: tuple) -> tuple:
        es = self.recipe.es
        if es.steps <= 0:
            return best
        heur = self.heuristic_sizes(units)
        usable = [i for i, h in enumerate(heur) if h]
        adam = Adam(es.step_size)

        def evaluate(jobs: list[tuple[Mlp, int]]) -> list[float | None]:
            sizes = self.fanout("size", [{"unit": units[usable[i]].as_json(), "policy": mlp_io.as_json(pol),
                                          "vocab": self._vocab} for pol, i in jobs])
            return [None if s is None else reward(s, heur[usable[i]], es.growth_weight)
                    for s, (_, i) in zip(sizes, jobs, strict=True)]

        for step in range(1, es.steps + 1):
            policy, info = es_step(policy, adam, es, step, len(usable), evaluate)
            val = self.validate(policy)
            self._record(stage="es", **val.fields(), **info)
            if self._better(val, best[0]):
                best = (val, policy, f"es step {step}")
            self.progress(f"es step {step}/{es.steps}: {info['compiled']}/{2 * es.pairs} compiled, mean reward "
                          f"{info['mean_reward'] if info['mean_reward'] is not None else float('nan'):+.4f}, "
                          f"validation {val} (best {best[0]})")
            self._step()
        return best

    def _record(self, **row) -> None:
        self.history.append(row)

    def _step(self) -> None:
        if self.stage is not None:
            self.stage.update()

    @property
    def steps(self) -> int:
        """The training stage's steps: each draw's rounds and ES steps (what `stage` counts)."""
        return max(1, self.recipe.draws) * (self.recipe.rounds + max(0, self.recipe.es.steps))


KIND = INLINE_SIZE.kind


def train_to(output: Path, toolchain: Toolchain, splits: Splits, recipe_name: str, fanout: Fanout, *,
             vocab: Path | None = None, vocab_version: str | None = None,
             progress: Callable[[str], None] = print, key: bytes | None = None, cap: float | None = None,
             desc: str = "policy train") -> dict:
    """Train, measure held out, write OUTPUT.onnx, OUTPUT.npz, OUTPUT.weights (policytrain/native_export.py) and the
    signed OUTPUT.json; return the record.

    The training and the held-out table show their progress on stderr (farm/progress.py) under `desc`.

    The record is signed with the farm's key over its claims and the model's bytes
    (farm/signing.py), as the warm start's is: publishing takes metrics only from a record this
    farm's training wrote for exactly this model (policyhost/release.py).
    """
    from farm.atomic import write_atomic
    from farm.signing import farm_key, sign
    from policytrain.onnx_export import to_onnx

    output = Path(output)
    if output.suffix != ".onnx":
        raise InputError(f"output {output} must end in .onnx")
    rec = recipe(recipe_name)
    from farm.progress import steps

    t = Trainer(toolchain, splits, rec, fanout, progress=progress, vocab=vocab, cap=cap)
    with steps(t.steps, f"{desc}: training (rounds and ES steps)") as t.stage:
        policy, info = draws.run(t)
    t.stage = None
    table = heldout_table(t, policy, desc=desc)
    meta = {"mlgo.kind": KIND, "mlgo.advice": INLINE_SIZE.advice, "mlgo.recipe": recipe_name,
            "mlgo.validation": f"{info['validation']:.4f}"}
    if splits.evaluation:
        progress("held out (never trained or validated on):\n" + format_table(table, cap))
        if table["geomean"] is not None:  # None: a package has no ratio (the verb fails on it, the model is kept)
            meta["mlgo.heldout_geomean"] = f"{table['geomean']:.4f}"
    else:  # a run that keeps the evaluation packages unseen (an experiment's), not a table of nothing
        progress(f"held out: no evaluation packages; later: mlgo-farm policy heldout {output}")
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(output, to_onnx(policy, meta))
    mlp_io.save(policy, output.with_suffix(".npz"))
    native_export.save_weights(policy, output.with_suffix(native_export.SUFFIX))  # for mlgo-policy-host
    record = {"kind": KIND, "model": str(output), "recipe": recipe_name, "params": rec.as_json(),
              "regime": "thinlto" if rec.thinlto else "per-file",
              "vocab": str(vocab) if vocab else None, "vocab_version": vocab_version, "llvm": toolchain.describe(),
              "splits": {s: [p.name for p in getattr(splits, s)] for s in SPLITS},
              "modules": {s: sum(len(p.units) for p in getattr(splits, s)) for s in SPLITS},
              "features": [f[0] for f in policy.features], "heldout": table, "validation_cap": cap, **info}
    record = sign(output.read_bytes(), record, farm_key() if key is None else key)
    write_atomic(output.with_suffix(".json"), jsonio.dumps(record))
    return record
