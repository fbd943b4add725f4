"""The inliner-for-size trainer: explore, clone, evolve, keep the best on validation, report held out.

One loop, many configurations (ml-compiler-opt's one runner per problem): a `Recipe` says how
hard each stage works, `Splits` which packages train, validate and evaluate, and a `Fanout`
where the compiles run (threads here, Celery workers on a farm: policyhost/train_tasks.py).

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
memorised its training modules shows it there. A split that leaves any of the three empty, or whose
packages share code nobody decided on (workers/overlap.py), is one clear line before anything compiles.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from farm import hold, jsonio
from farm.errors import InputError
from farm.toolchain import Toolchain
from policyhost import draws
from policyhost.explore import ModuleResult, merge
from policyhost.heldout import format_table, heldout_table
from policyhost.improve import Adam, bagged, bc_dataset, es_step, fit_bc, fit_prior, geomean, reward
from policyhost.mlp import LIMITS, Mlp, average
from policyhost.recipes import Recipe, recipe
from policyhost.units import LEVEL, Unit, corpus_units

log = logging.getLogger(__name__)

#: run(kind, items) -> results in order: `kind` a job of policyhost/train_tasks.py (`explore`, `size`), each item
#: plain JSON; threads or Celery tasks (train_tasks.thread_fanout, celery_fanout)
Fanout = Callable[[str, Sequence[dict]], list]


@dataclass(frozen=True)
class Package:
    """A whole package of modules (a corpus directory) under one name; `shipped` names the modules its binary
    packages install (workers/shipped.py), None when it declares no split between shipped and other code."""

    name: str
    units: tuple[Unit, ...]
    shipped: frozenset[str] | None = None


def package(name: str, corpus_dir: Path, most: int | None = None) -> Package:
    from workers.corpus import sample_names
    from workers.shipped import shipping

    units = corpus_units(corpus_dir)
    if most is not None and len(units) > most:
        keep = sample_names((u.name for u in units), most)
        units = [u for u in units if u.name in keep]
    s = shipping(name)
    return Package(name, tuple(units), None if s is None else frozenset(u.name for u in units if s.ships(u.name)))


@dataclass(frozen=True)
class Splits:
    train: tuple[Package, ...]
    validation: tuple[Package, ...]
    evaluation: tuple[Package, ...] = ()

    def check(self) -> None:
        """One line naming what is missing or shared, before anything compiles."""
        check_names({s: [p.name for p in getattr(self, s)] for s in SPLITS})
        for what in ("train", "validation"):
            if not any(p.units for p in getattr(self, what)):
                raise InputError(f"the corpus is too small to split honestly: no {what} package has a module "
                                 f"(train: {_names(self.train)}; validation: {_names(self.validation)})")


SPLITS = ("train", "validation", "evaluation")


def check_names(splits: dict[str, Sequence[str]]) -> None:
    """Train and validation named, and no package in two splits (any the mapping holds): checked on names, before any
    corpus is built."""
    for what in ("train", "validation"):
        if not splits.get(what):
            raise InputError(f"the corpus is too small to split honestly: no {what} package "
                             f"(train: {', '.join(splits.get('train') or ()) or 'none'}; validation: "
                             f"{', '.join(splits.get('validation') or ()) or 'none'})")
    seen: dict[str, str] = {}
    for what in splits:
        for name in splits[what] or ():
            if name in seen:
                raise InputError(f"package {name} is in both the {seen[name]} and the {what} split")
            seen[name] = what


def package_corpus(spec: str, var_dir: Path, toolchain: Toolchain, most: int | None = None) -> Package:
    """`NAME=CORPUS_DIR`, or a Debian source package compiled once, by an -Oz front end, into
    `<var>/policy/corpus/debian-NAME-Oz[-most]` (only the `most` modules training samples, by the same name-hash
    rule). A corpus of another level is refused when its units are read (policyhost/units.py LEVEL)."""
    from farm.locks import made_once
    from workers.corpus import from_debian

    name, eq, path = spec.partition("=")
    if eq:
        if not (Path(path) / "corpus_description.json").is_file():
            raise InputError(f"package {name}: {path} is not a corpus directory (no corpus_description.json)")
        return package(name, Path(path), most)
    out = var_dir / "policy" / "corpus" / (f"debian-{name}-{LEVEL}" + (f"-{most}" if most else ""))
    made_once(out, "corpus_description.json",
              lambda: from_debian(name, out, toolchain, var_dir / "debsrc", sample=most, level=LEVEL))
    return package(name, out, most)


def specs(split: str, given: str | None, rec: Recipe | None = None) -> list[str]:
    """Comma-separated package specs of one split; None: the recipe's, else the split workers/packages.py declares."""
    if given is None and rec is not None and rec.split(split) is not None:
        given = ",".join(rec.split(split))
    if given is None:
        from workers.packages import SPLITS as DECLARED

        given = ",".join(DECLARED[split])
    return [x.strip() for x in given.split(",") if x.strip()]


def resolve_splits(train: str | None, validation: str | None, evaluation: str | None, var_dir: Path,
                   toolchain: Toolchain, rec: Recipe | None = None) -> Splits:
    """The three splits from comma-separated package specs (None: the recipe's or the declared ones), checked on
    names before any corpus is compiled, and the Debian packages' sources for code shared across splits with no
    decision (workers/overlap.py); the recipe's `max_modules` caps the modules of each training package."""
    from workers.overlap import check_specs

    most = rec.max_modules if rec is not None else None
    wanted = {s: specs(s, g, rec) for s, g in zip(SPLITS, (train, validation, evaluation), strict=True)}
    check_names({s: [n.partition("=")[0] for n in wanted[s]] for s in SPLITS})
    check_specs(wanted, var_dir / "debsrc")
    return Splits(*(tuple(package_corpus(n, var_dir, toolchain, most if s == "train" else None) for n in wanted[s])
                    for s in SPLITS))


def _which(seed: int | None, seeds: int) -> str:
    """Which clone a round kept, for its progress line: one of several seeds, or their average (seed None)."""
    if seeds < 2:
        return ""
    return f", {seeds} seeds averaged" if seed is None else f", seed {seed} of {seeds}"


def _names(ps: Sequence[Package]) -> str:
    return ", ".join(p.name for p in ps) or "none"


@dataclass(frozen=True)
class Measured:
    """A checkpoint on validation: `.text` policy / heuristic per package, and their geomean and worst."""

    packages: tuple[tuple[str, float], ...]

    @property
    def geomean(self) -> float:
        return geomean([r for _, r in self.packages])

    @property
    def worst(self) -> float:
        return max(r for _, r in self.packages)

    def fields(self) -> dict:
        """A history row's or the result's validation fields (`validation` stays the geomean the dashboard plots)."""
        return {"validation": self.geomean, "validation_worst": self.worst, "validation_packages": dict(self.packages)}

    def rank(self, cap: float | None) -> tuple[int, float]:
        """Lower is better: every checkpoint within `cap` before any beyond it; then geomean, or the worst
        package for those beyond (the least growth is the nearest to acceptable)."""
        if cap is None or self.worst <= cap:
            return (0, self.geomean)
        return (1, self.worst)

    def __str__(self) -> str:
        return f"{self.geomean:.4f}x (worst package {self.worst:.4f}x)"


@dataclass
class Trainer:
    """State of one training run; `progress` receives one line per stage (the Buildbot step shows them)."""

    toolchain: Toolchain
    splits: Splits
    recipe: Recipe
    fanout: Fanout
    progress: Callable[[str], None] = print
    #: the IR2Vec vocabulary whose embeddings the policy reads (None: LLVM's features alone)
    vocab: Path | None = None
    #: no validation package above this ratio, if a checkpoint can manage it (Measured.rank); None: geomean only
    cap: float | None = None
    history: list[dict] = field(default_factory=list)
    _heuristic: dict[str, int | None] = field(default_factory=dict)

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

    def policy_sizes(self, units: Sequence[Unit], policy: Mlp | None, model: str | None = None) -> list[int | None]:
        """`.text` per module compiled with the network `policy`, or with the ONNX file `model`."""
        p = None if policy is None else policy.as_json()
        return self.fanout("size", [{"unit": u.as_json(), "policy": p, "model": model, "vocab": self._vocab}
                                    for u in units])

    def package_ratios(self, packages: Sequence[Package], policy: Mlp | None, model: str | None = None) -> list[dict]:
        """Per package: `.text` summed over the modules both builds compiled, policy / heuristic, over all its
        modules (`ratio`: what validation chooses on, the most decisions) and over the modules it ships (`shipped`:
        what a held-out table judges; None when the package declares no split, so all of them count)."""
        rows = []
        for p in packages:
            h = self.heuristic_sizes(p.units)
            s = self.policy_sizes(p.units, policy, model) if policy is not None or model else h
            sizes = [(u.name, a, b) for u, a, b in zip(p.units, h, s, strict=True) if a is not None and b is not None]
            failed = [u.name for u, b in zip(p.units, s, strict=True) if b is None]
            row = {"package": p.name, **_summed(sizes), "failed": failed, "shipped": None}
            if p.shipped is not None:
                row["shipped"] = _summed([x for x in sizes if x[0] in p.shipped])
            rows.append(row)
        return rows

    def validate(self, policy: Mlp) -> Measured:
        return Measured(tuple((r["package"], r["ratio"]) for r in self.package_ratios(self.splits.validation, policy)))

    @property
    def choose_cap(self) -> float | None:
        """The cap a checkpoint is chosen under: the recipe's own (`Recipe.cap`), else the gate's."""
        return self.cap if self.recipe.cap is None else self.recipe.cap

    def _better(self, a: Measured, b: Measured | None) -> bool:
        return b is None or a.rank(self.choose_cap) < b.rank(self.choose_cap)

    # -- stages -----------------------------------------------------------------------------------
    def explore(self, base: Mlp | None, units: Sequence[Unit], prior: Mlp | None = None) -> list[ModuleResult]:
        b, budget = (None if base is None else base.as_json()), dataclasses.asdict(self.recipe.budget)
        p = None if prior is None else prior.as_json()
        found = self.fanout("explore", [{"unit": u.as_json(), "base": b, "budget": budget, "vocab": self._vocab,
                                         "prior": p} for u in units])
        return [ModuleResult.from_json(d) for d in found]

    def guided(self, found: list[ModuleResult], units: Sequence[Unit], r: int) -> list[ModuleResult]:
        """The heuristic searched again, most promising flips first (Recipe.prior); each module's two searches
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

    def run(self) -> tuple[Mlp, dict]:
        self.splits.check()
        units = [u for p in self.splits.train for u in p.units]
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
        start = best[1] or base
        best = self._evolve(start, units, best)
        verdict = "smaller than" if best[0].geomean < 1 else "NOT smaller than"
        self.progress(f"best on validation: {best[2]} at {best[0]} the heuristic ({verdict} it)")
        return best[1], {**best[0].fields(), "chosen": best[2], "history": self.history}

    def _clone(self, results: Sequence[ModuleResult], every: tuple, seed: int) -> Mlp:
        """One seed's clone: of `every` explored module's data (bc_dataset, made once a round), or of its own
        bootstrap draw (Recipe.bag), normalised on every module either way, so that the seeds' clones can be
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
            sizes = self.fanout("size", [{"unit": units[usable[i]].as_json(), "policy": pol.as_json(),
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
        return best

    def _record(self, **row) -> None:
        self.history.append(row)


def _summed(sizes: Sequence[tuple[str, int, int]]) -> dict:
    """Modules, `.text` summed per build, and policy / heuristic, of (module, heuristic, policy) sizes."""
    ht, pt = sum(a for _, a, _ in sizes), sum(b for _, _, b in sizes)
    return {"modules": len(sizes), "heuristic": ht, "policy": pt, "ratio": pt / ht if ht else 1.0}


KIND = "inline-es"


def train_to(output: Path, toolchain: Toolchain, splits: Splits, recipe_name: str, fanout: Fanout, *,
             vocab: Path | None = None, vocab_version: str | None = None,
             progress: Callable[[str], None] = print, key: bytes | None = None, cap: float | None = None) -> dict:
    """Train, measure held out, write OUTPUT.onnx, OUTPUT.npz and the signed OUTPUT.json; return the record.

    The record is signed with the farm's key over its claims and the model's bytes
    (farm/signing.py), as the warm start's is: publishing takes metrics only from a record this
    farm's training wrote for exactly this model (policyhost/release.py).
    """
    from farm.atomic import write_atomic
    from farm.signing import farm_key, sign

    output = Path(output)
    if output.suffix != ".onnx":
        raise InputError(f"output {output} must end in .onnx")
    rec = recipe(recipe_name)
    t = Trainer(toolchain, splits, rec, fanout, progress=progress, vocab=vocab, cap=cap)
    policy, info = draws.run(t)
    table = heldout_table(t, policy)
    meta = {"mlgo.kind": KIND, "mlgo.advice": "inlining_decision", "mlgo.recipe": recipe_name,
            "mlgo.validation": f"{info['validation']:.4f}"}
    if splits.evaluation:
        progress("held out (never trained or validated on):\n" + format_table(table, cap))
        meta["mlgo.heldout_geomean"] = f"{table['geomean']:.4f}"
    else:  # a run that keeps the evaluation packages unseen (an experiment's), not a table of nothing
        progress(f"held out: no evaluation packages; later: mlgo-farm policy heldout {output}")
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(output, policy.to_onnx(meta))
    policy.save(output.with_suffix(".npz"))
    record = {"kind": KIND, "model": str(output), "recipe": recipe_name, "params": rec.as_json(),
              "vocab": str(vocab) if vocab else None, "vocab_version": vocab_version, "llvm": toolchain.describe(),
              "splits": {s: [p.name for p in getattr(splits, s)] for s in SPLITS},
              "modules": {s: sum(len(p.units) for p in getattr(splits, s)) for s in SPLITS},
              "features": [f[0] for f in policy.features], "heldout": table, "validation_cap": cap, **info}
    record = sign(output.read_bytes(), record, farm_key() if key is None else key)
    write_atomic(output.with_suffix(".json"), jsonio.dumps(record))
    return record
