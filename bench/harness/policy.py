"""The trainer set-up the inliner policy benches share, and `policy train` with any recipe.

`PolicyBench.load()` is what bench_policy_{search,votes,cv,reach,training}.py each built by hand: the farm's settings
and LLVM, the trainer's own corpora of Debian packages (compiled once under `<var>/policy/corpus`, as `policy train`
caches them) and its exploration cache (so a module the nightly searched costs nothing), a thread fan-out, a Trainer
on the declared splits, and a hand-made host policy replayed on a package against LLVM's heuristic.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.harness import ROOT
from farm.jsonio import load_file


@dataclass
class PolicyBench:
    """The farm's settings and LLVM, and `jobs` compiles at a time; `cached`: searches read and fill the trainer's
    exploration cache (False: every search runs afresh)."""

    settings: object
    toolchain: object
    jobs: int = 2
    cached: bool = True

    @classmethod
    def load(cls, jobs: int = 2, cached: bool = True) -> PolicyBench:
        from farm.config import load_settings
        from farm.toolchain import Toolchain

        settings = load_settings()
        return cls(settings, Toolchain.from_settings(settings), jobs, cached)

    @property
    def var(self) -> Path:
        return Path(self.settings.var_dir)

    @functools.cached_property
    def fanout(self):
        """The trainer's thread fan-out (policytrain/fanout.py), over the exploration cache or none."""
        from policytrain.explore import ExploreCache
        from policytrain.fanout import thread_fanout

        return thread_fanout(self.toolchain, ExploreCache.under(self.var) if self.cached else ExploreCache(None),
                             self.jobs)

    def package(self, name: str, most: int | None = None):
        """A Debian package's -Oz corpus as the trainer caches it (`most`: only that many modules, by name hash)."""
        from policytrain.corpora import package_corpus

        return package_corpus(name, self.var, self.toolchain, most)

    def package_dir(self, name: str) -> Path:
        """The directory of the trainer's whole corpus of Debian package `name` (made first if need be)."""
        from policytrain.corpora import debian_dir  # where package_corpus caches it

        self.package(name)
        return debian_dir(self.var, name)

    def trainer(self, recipe: str | None = "nightly"):
        """A Trainer with the production recipe `recipe` on the declared splits, progress printed; `None`: one with no
        recipe and no splits, for measuring only (heuristic_sizes, package_ratios, replay_ratio)."""
        from policytrain.recipes import recipe as named
        from policytrain.trainer import Splits, Trainer, resolve_splits

        if recipe is None:
            return Trainer(self.toolchain, Splits((), ()), None, self.fanout, progress=print)
        rec = named(recipe)
        splits = resolve_splits(None, None, "", self.var, self.toolchain, rec)
        return Trainer(self.toolchain, splits, rec, self.fanout, progress=print)

    def replay_ratio(self, trainer, units: Sequence, make_policy: Callable[[], object]) -> float:
        """Policy / heuristic `.text` over the modules of `units` both compile: each module compiled here with a fresh
        `make_policy()` (a host policy such as a ReplayPolicy subclass, which the fan-out's JSON jobs cannot carry),
        `jobs` at a time; the heuristic's sizes are the trainer's (measured once per run)."""
        from concurrent.futures import ThreadPoolExecutor

        from policytrain.explore import compile_size

        heuristic = trainer.heuristic_sizes(units)
        with ThreadPoolExecutor(self.jobs) as pool:
            sizes = list(pool.map(lambda u: compile_size(u, make_policy(), self.toolchain)[0], units))
        both = [(h, s) for h, s in zip(heuristic, sizes, strict=True) if h and s]
        return sum(s for _, s in both) / sum(h for h, _ in both)


def train_policy(recipe: str, out: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    """`mlgo-farm policy train --recipe RECIPE -o OUT ARGS` in a child process that also knows the experiments of
    bench/policy_recipes.py; the signed training record it writes beside OUT, with the wall `seconds` it took."""
    out = Path(out).absolute()
    cmd = [sys.executable, "-m", "bench.policy_recipes", "policy", "train", "--recipe", recipe, "-o", str(out), *args]
    start = time.monotonic()
    subprocess.run(cmd, check=True, env=env, cwd=ROOT)
    record = load_file(out.with_suffix(".json"))
    record["seconds"] = round(time.monotonic() - start, 1)
    return record
