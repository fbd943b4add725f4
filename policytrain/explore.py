"""Exploration: find, per module, an inlining trajectory whose object is smaller than the base policy's.

This is how ml-compiler-opt trained inlining-Oz-v1.2 (`generate_bc_trajectories_lib.py`):
replay a base policy's trajectory, flip one decision at a step where the policy is least sure,
let the base policy finish, recompile, and keep the trajectory whose `.text` is strictly
smallest. Here the search is greedy over rounds: round 1 tries single flips on the base
trajectory; each later round tries one more flip after the last kept one on the best trajectory
so far (a flip changes every observation after it, so earlier step numbers stay meaningful only
before it). A module's search ends when a round finds nothing smaller or the budget is spent. With group
flips (`Budget.groups`) a flip also holds every later call of the same callee to the flipped action.

The base is LLVM's heuristic (`inlining_default`) or a network (policytrain/mlp.py). With a
network, the steps tried first are those with the smallest margin, as ml-compiler-opt does; the
heuristic says nothing of its confidence, so its steps are tried in an order seeded by the
module's name, which spreads a small budget over the whole trajectory reproducibly.

A module's result depends only on its bitcode and command, LLVM, the base policy and the search
budget, so it is cached under the digest of exactly those (`ExploreCache`): a nightly run explores
only the modules, or the policy, that changed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from farm import jsonio
from farm.atomic import write_atomic
from farm.errors import FarmError, InputError
from farm.toolchain import Toolchain
from policyhost.launcher import run_compile
from policyhost.runnable import INLINE_DEFAULT
from policytrain.mlp import Mlp, feature_offset
from policytrain.params import Budget
from policytrain.units import Unit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from policyhost.protocol import Header, Observation


def default_offset(features: Sequence[tuple[str, int, str]]) -> int:
    """Where LLVM's own decision sits in a row laid out as `features` (a compiler that sends none: one line)."""
    try:
        return feature_offset(features, INLINE_DEFAULT)
    except ValueError as e:
        raise InputError(str(e)) from None


class ReplayPolicy:
    """Plays `base` (the heuristic when None) and answers the opposite at the steps in `flips`; records every step.

    `prior` (policytrain/improve.py `fit_prior`): with the heuristic as base, how promising a flip of each step
    is, recorded as its margin (the most promising has the smallest), so the search tries it first."""

    name = "replay"

    def __init__(self, base: Mlp | None = None, flips: Sequence[int] = (), prior: Mlp | None = None,
                 groups: bool = False) -> None:
        self.base, self.flips, self.prior = base, frozenset(flips), prior
        #: group flips (Budget.groups): the action each flipped step's callee is held to from there on
        self.groups: dict[tuple[float, ...], int] | None = {} if groups else None
        #: (name, width, dtype) of every feature the compiler sends, in its order: a row's layout
        self.features: list[tuple[str, int, str]] = []
        self.names: list[str] = []
        #: one float64 array a step (a list of Python floats is four times the memory: an LLVM TU's search holds
        #: several trajectories of thousands of rows with IR2Vec's hundreds of values each)
        self.rows: list[np.ndarray] = []
        self.actions: list[int] = []
        self.margins: list[float] = []

    def bind(self, header: Header) -> None:
        feats = [(f.name, f.count, "float32" if f.is_float else "int64") for f in header.features]
        names = [f[0] for f in feats]
        if INLINE_DEFAULT not in names:
            raise InputError(f"exploration needs the '{INLINE_DEFAULT}' feature (-inliner-interactive-include-default)")
        if self.prior is not None and [f[0] for f in self.prior.features] != names:
            raise InputError("the exploration prior's features are not the ones this compiler sends")
        if self.base is not None and [f[0] for f in self.base.features] != names:
            missing = sorted(set(f[0] for f in self.base.features) - set(names))
            raise InputError("the base policy's features are not the ones this compiler sends"
                             + (f" (missing {missing[0]}: was it trained with a vocabulary?)" if missing else ""))
        if self.features and feats != self.features:
            raise InputError("the compiler changed its feature set within one compile")
        self.features, self.names = feats, names
        self._default_at = default_offset(feats)
        self._callee_at = callee_offsets(feats) if self.groups is not None else ()

    def decide(self, obs: Observation) -> int:
        feats = obs.features
        row = np.array([v for n in self.names for v in feats[n]], dtype=np.float64)
        if self.base is None:
            action = int(row[self._default_at])
            margin = float("nan") if self.prior is None else -float(self.prior.margin(row[None])[0])
        else:
            m = float(self.base.margin(row[None])[0])
            action, margin = int(m > 0), abs(m)
        if len(self.actions) in self.flips:
            action = 1 - action
            if self.groups is not None:
                self.groups[callee_key(row, self._callee_at)] = action
        elif self.groups:
            action = self.groups.get(callee_key(row, self._callee_at), action)
        self.rows.append(row)
        self.actions.append(action)
        self.margins.append(margin)
        return action


@dataclass
class Play:
    """One compile of a module with a replay policy: its `.text`, or why it failed, and the trajectory."""

    flips: tuple[int, ...]
    size: int | None
    error: str | None
    policy: ReplayPolicy


def compile_size(unit: Unit, policy: object, toolchain: Toolchain, *, timeout: float = 120,
                 vocab: Path | None = None) -> tuple[int | None, str | None]:
    """(the module's size, None) compiled with any host policy, or (None, why it failed): its object's `.text`, less
    the COMDAT groups its package's other modules carry (`Unit.measure`).

    `vocab`: the IR2Vec vocabulary that adds the embedding features (for a policy that reads them)."""
    with tempfile.TemporaryDirectory(prefix="mlgo-explore-") as tmp:
        obj = Path(tmp) / "m.o"
        error = compile_object(unit, policy, toolchain, obj, timeout=timeout, vocab=vocab)
        return (None, error) if error else (unit.measure(obj, toolchain), None)


def compile_object(unit: Unit, policy: object, toolchain: Toolchain, obj: Path, *, timeout: float = 120,
                   vocab: Path | None = None) -> str | None:
    """Compile `unit` to `obj` with any host policy; None, or why it failed."""
    out = run_compile(unit.argv(obj), policy, vocab=vocab, toolchain=toolchain, timeout=timeout)
    return None if out.ok else out.error


def play(unit: Unit, base: Mlp | None, flips: Sequence[int], toolchain: Toolchain, *, timeout: float = 120,
         vocab: Path | None = None, prior: Mlp | None = None, groups: bool = False) -> Play:
    """Compile `unit` once with `base` flipped at `flips` (and, with `groups`, every later call of their callees);
    measure the object's Berkeley `.text`."""
    pol = ReplayPolicy(base, flips, prior, groups)
    size, error = compile_size(unit, pol, toolchain, timeout=timeout, vocab=vocab)
    return Play(tuple(flips), size, error, pol)


#: A callee's features that stay put at each of its calls (not its users, which fall as they are inlined, nor its
#: embedding, sent only with a vocabulary). Two small callees may share a key: a group flip then holds both.
CALLEE_KEY = ("callee_basic_block_count", "callee_conditionally_executed_blocks", "is_callee_avail_external")


_MATRICES = ("rows", "base_rows", "trial_rows")
_VECTORS = ("actions", "base_actions", "trial_actions", "trial_deltas")


@dataclass
class ModuleResult:
    """The outcome of exploring one module, and the best trajectory found (the base one when nothing beat it)."""

    name: str
    base_size: int | None
    best_size: int | None
    flips: list[int]
    compiles: int
    error: str | None = None
    features: list[tuple[str, int, str]] = field(default_factory=list)
    rows: np.ndarray | None = None
    actions: np.ndarray | None = None
    base_rows: np.ndarray | None = None
    base_actions: np.ndarray | None = None
    #: every flip tried, as counterfactual data: the state, the action tried there (the opposite of the
    #: trajectory's), and the `.text` it changed by against the trajectory it was tried on (negative: smaller)
    trial_rows: np.ndarray | None = None
    trial_actions: np.ndarray | None = None
    trial_deltas: np.ndarray | None = None

    @property
    def saved(self) -> float:
        """The fraction of the base `.text` the best trajectory saves (0 when nothing did better)."""
        if not self.base_size or self.best_size is None:
            return 0.0
        return (self.base_size - self.best_size) / self.base_size

    def as_json(self) -> dict:
        """Everything, arrays as lists: what a Celery task sends back."""
        arrays = {k: (None if getattr(self, k) is None else getattr(self, k).tolist()) for k in _MATRICES + _VECTORS}
        return {"name": self.name, "base_size": self.base_size, "best_size": self.best_size, "flips": self.flips,
                "compiles": self.compiles, "error": self.error, "features": [list(f) for f in self.features],
                **arrays}

    @classmethod
    def from_json(cls, d: dict) -> ModuleResult:
        feats = [(str(n), int(w), str(t)) for n, w, t in d["features"]]
        width = sum(f[1] for f in feats)
        mats = {k: None if d.get(k) is None else np.asarray(d[k], dtype=np.float64).reshape(len(d[k]), width)
                for k in _MATRICES}
        vecs = {k: None if d.get(k) is None else np.asarray(d[k], dtype=np.int64) for k in _VECTORS}
        return cls(d["name"], d["base_size"], d["best_size"], list(d["flips"]), d["compiles"], d["error"],
                   feats, **mats, **vecs)

    def summary(self) -> dict:
        return {"module": self.name, "base_size": self.base_size, "best_size": self.best_size, "flips": self.flips,
                "compiles": self.compiles, "steps": 0 if self.actions is None else len(self.actions),
                "error": self.error}


def callee_offsets(features: Sequence[tuple[str, int, str]]) -> tuple[int, ...]:
    """Where the features that name a callee (CALLEE_KEY) sit in a row (a compiler that sends none: one line)."""
    try:
        return tuple(feature_offset(features, name) for name in CALLEE_KEY)
    except ValueError as e:
        raise InputError(f"group flips: {e}") from None


def callee_key(row: Sequence[float], at: Sequence[int]) -> tuple[float, ...]:
    return tuple(row[i] for i in at)


def candidate_steps(p: Play, after: int, count: int, seed: str, groups: bool = False) -> list[int]:
    """Up to `count` steps after `after` to try flipping: least sure first, or a content-seeded order. With
    `groups`, only each callee's first step after `after` (flipping it flips the callee's later ones too)."""
    steps = list(range(after, len(p.policy.actions)))
    if groups and steps:
        at, leaders = callee_offsets(p.policy.features), {}
        for s in steps:
            leaders.setdefault(callee_key(p.policy.rows[s], at), s)
        steps = sorted(leaders.values())
    margins = np.asarray(p.policy.margins)
    if steps and not np.isnan(margins[steps]).any():
        steps.sort(key=lambda s: (margins[s], s))
    else:
        rng = np.random.default_rng(int(seed[:16], 16))
        steps = [steps[i] for i in rng.permutation(len(steps))]
    return steps[:count]


class Abandoned(Exception):
    """A search given up before its end because the run is stopping (`stop` said so): nothing is cached."""


def explore(unit: Unit, base: Mlp | None, toolchain: Toolchain, budget: Budget = Budget(), *,
            timeout: float = 120, vocab: Path | None = None, prior: Mlp | None = None,
            stop: Callable[[], bool] | None = None) -> ModuleResult:
    """Greedy flip search on one module (see the module docstring); never raises for a failing compile.
    `prior`: the order of a heuristic's steps (ReplayPolicy). `stop`, asked before every compile: the run
    is being interrupted, so the search raises Abandoned instead of holding the run's exit for its remaining
    compiles (an LLVM TU's search is a minute of them)."""
    def play_unless_stopped(flips: tuple[int, ...]) -> Play:
        if stop is not None and stop():
            raise Abandoned(unit.name)
        return play(unit, base, flips, toolchain, timeout=timeout, vocab=vocab, prior=prior, groups=budget.groups)

    first = play_unless_stopped(())
    if first.size is None:
        return ModuleResult(unit.name, None, None, [], 1, error=first.error)
    # the order of a heuristic's steps follows the module's name, not where its bitcode lies (the bytes name it)
    best, compiles, seed = first, 1, hashlib.sha256(unit.name.encode()).hexdigest()
    trials: list[tuple[np.ndarray, int, int]] = []  # (state, action tried there, `.text` it cost or saved)
    for _ in range(budget.rounds):
        after = best.flips[-1] + 1 if best.flips else 0
        won: Play | None = None  # the smallest trial so far; the others' trajectories are dropped as they end
        for s in candidate_steps(best, after, budget.per_round, seed, budget.groups):
            t = play_unless_stopped((*best.flips, s))
            compiles += 1
            if t.size is None:
                continue
            trials.append((best.policy.rows[s], 1 - best.policy.actions[s], t.size - best.size))
            if t.size < best.size and (won is None or (t.size, t.flips) < (won.size, won.flips)):
                won = t
        if won is None:
            break
        best = won
    width = sum(f[1] for f in first.policy.features)

    def matrix(rows: list[np.ndarray]) -> np.ndarray:
        return np.asarray(rows, dtype=np.float64).reshape(len(rows), width)

    return ModuleResult(unit.name, first.size, best.size, list(best.flips), compiles, features=first.policy.features,
                        rows=matrix(best.policy.rows), actions=np.asarray(best.policy.actions, dtype=np.int64),
                        base_rows=matrix(first.policy.rows),
                        base_actions=np.asarray(first.policy.actions, dtype=np.int64),
                        trial_rows=matrix([t[0] for t in trials]),
                        trial_actions=np.asarray([t[1] for t in trials], dtype=np.int64),
                        trial_deltas=np.asarray([t[2] for t in trials], dtype=np.int64))


def merge(a: ModuleResult, b: ModuleResult) -> ModuleResult:
    """Two searches of one module as one: the smaller best trajectory, and every flip either tried."""
    pick = b if b.best_size is not None and (a.best_size is None or b.best_size < a.best_size) else a
    trials = {}
    for k in ("trial_rows", "trial_actions", "trial_deltas"):
        parts = [x for x in (getattr(a, k), getattr(b, k)) if x is not None and len(x)]
        trials[k] = np.concatenate(parts) if parts else getattr(pick, k)
    return dataclasses.replace(pick, compiles=a.compiles + b.compiles, **trials)


def base_digest(base: Mlp | None) -> str:
    """What names the base policy in cache keys: `heuristic`, or the digest of the network's parameters."""
    if base is None:
        return "heuristic"
    held = np.float64(base.hold_no).tobytes() if base.hold_no else b""  # networks without one keep their keys
    limits = b"".join(lim.name.encode() + np.float64(getattr(base, lim.name)).tobytes()  # (so do unguarded ones)
                      for lim in base.limits)
    h = hashlib.sha256(base.flat().astype("<f8").tobytes() + base.mean.tobytes() + base.std.tobytes()
                       + np.float64(base.stick).tobytes() + held + limits)
    return h.hexdigest()[:16]


class ExploreCache:
    """Module results on disk, keyed by module content, LLVM, base policy and budget (one .npz per key)."""

    def __init__(self, root: Path | None) -> None:
        self.root = Path(root) if root is not None else None

    @classmethod
    def under(cls, var_dir: Path | str) -> ExploreCache:
        """The farm's cache in `<var>/cache/explore`: one for the trainer, its Celery jobs and the benches."""
        return cls(Path(var_dir) / "cache" / "explore")

    def key(self, unit: Unit, toolchain: Toolchain, base: Mlp | None, budget: Budget, vocab: Path | None,
            prior: Mlp | None = None) -> str:
        vocab_digest = hashlib.sha256(Path(vocab).read_bytes()).hexdigest() if vocab else None
        what = [unit.digest(), toolchain.describe(), base_digest(base), budget.as_json(), vocab_digest, 3]
        if prior is not None:  # (appended only then: an unguided search keeps the keys it always had)
            what.append(["prior", base_digest(prior)])
        what = json.dumps(what, sort_keys=True, default=str)
        return hashlib.sha256(what.encode()).hexdigest()[:24]

    def get(self, key: str, name: str) -> ModuleResult | None:
        if self.root is None or not (self.root / f"{key}.npz").is_file():
            return None
        try:
            with np.load(self.root / f"{key}.npz") as z:
                meta = json.loads(str(z["meta"]))
                arrays = {k: z[k] for k in _MATRICES + _VECTORS if k in z.files}
        except (OSError, ValueError, KeyError):
            return None  # a damaged entry is explored again
        return ModuleResult(name, meta["base_size"], meta["best_size"], meta["flips"], 0, meta["error"],
                            [tuple(f) for f in meta["features"]], **arrays)

    def put(self, key: str, r: ModuleResult) -> None:
        if self.root is None:
            return
        meta = {"base_size": r.base_size, "best_size": r.best_size, "flips": r.flips, "error": r.error,
                "features": r.features}
        arrays = {k: getattr(r, k) for k in _MATRICES + _VECTORS if getattr(r, k) is not None}
        self.root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=self.root, suffix=".tmp", delete=False) as f:
            np.savez_compressed(f, meta=np.array(json.dumps(meta)), **arrays)
        os.replace(f.name, self.root / f"{key}.npz")


def explore_cached(unit: Unit, base: Mlp | None, toolchain: Toolchain, budget: Budget, cache: ExploreCache,
                   *, timeout: float = 120, vocab: Path | None = None, prior: Mlp | None = None,
                   stop: Callable[[], bool] | None = None) -> ModuleResult:
    key = cache.key(unit, toolchain, base, budget, vocab, prior)
    hit = cache.get(key, unit.name)
    if hit is not None:
        return hit
    try:
        result = explore(unit, base, toolchain, budget, timeout=timeout, vocab=vocab, prior=prior, stop=stop)
    except FarmError as e:  # the policy could not answer this module's compiler: skip and list it
        result = ModuleResult(unit.name, None, None, [], 0, error=str(e))
    cache.put(key, result)
    return result


def write_summary(results: Sequence[ModuleResult], path: Path) -> None:
    write_atomic(path, jsonio.dumps([r.summary() for r in results]))
