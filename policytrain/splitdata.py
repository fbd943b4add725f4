"""The declared splits, as data: which Debian source packages the inliner policy trains on, is validated on, and is
judged on.

A policy that shrinks the code it trained on may still grow other code (ml-compiler-opt's issues
#10 and #331), so it is judged on whole packages it never saw: no package is in two splits, and a
package's modules never straddle a split. The splits are data (`policytrain/data/splits.toml`, with why each
split is what it is), every package in them has a recipe (`workers/data/recipes.toml`), so `mlgo-farm corpus
debian PKG` makes its corpus, and the table is checked when this module is imported.

Chosen for variety of C code: an interpreter, compressors, regular-expression engines, cryptography,
audio and image codecs, parsers, a DNS resolver, a memory-mapped database, colour management, a
tracker-music player, hashing, zip archives, an event loop, suffix sorting. speexdsp has a recipe but no
split: two of its files are near-copies of speex's, a retired evaluation package. Of nineteen more packages
(training on them too ranked worse), eight decide between
recipes and eleven are in no split. LLVM's own code (`llvm-toolchain-19`) is C++ and feeds the
vocabularies, not the policy, so it is in no split.

An evaluation table stays honest only while nobody chooses knowing it: every look at an evaluation package's
numbers is counted (policytrain/data/looks.toml), and a package looked at MAX_LOOKS times retires (the check fails
until it is moved), as LNT ages out old regressions and chromeperf wants fresh points. Retired packages still never
train, validate or decide.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path

from farm import datafile
from farm.errors import InputError
from workers.debrecipes import RECIPES

#: The splits and the decided overlaps, as data: a package moves between splits by editing one list.
DATA = Path(__file__).parent / "data" / "splits.toml"
#: The splits a package can be in, in the order `policy splits` shows them: the C ones, then the C++ ones (issue 45:
#: size users ship linked C++, where a sum of objects and the linked files disagree; LLVM's own code and C++ Debian
#: packages, each judged by what it links); each language has a split its recipes are compared on (`decision`,
#: `cxx-decision`), whose looks do not retire it.
SPLIT_NAMES = ("train", "validation", "decision", "evaluation", "retired", "cxx-train", "cxx-validation",
               "cxx-decision", "cxx-evaluation")
#: The splits judged as held out: each needs MIN_EVALUATION packages, and each look at them is counted.
EVALUATIONS = ("evaluation", "cxx-evaluation")
_SCHEMA = {"packages": (list, True, "a list of Debian source package names"),
           "why": (str, True, "what the entry is for, or the decision taken")}


def load(path: Path = DATA) -> tuple[dict[str, tuple[str, ...]], dict[frozenset[str], str]]:
    """The splits (`SPLIT_NAMES` order) and the decided overlaps of a splits file; one InputError line naming the file,
    the table and the key for anything else (an unknown split, a missing one, a package name that is not text)."""
    where = str(path)
    data = datafile.read(path, "package splits")
    unknown = sorted(set(data) - {"split", "overlap"})
    if unknown:
        raise InputError(f"{where}: unknown table [{unknown[0]}] (tables: [split.NAME], [overlap.NAME])")
    splits = datafile.tables(data.get("split", {}), _SCHEMA, where, "split")
    overlaps = datafile.tables(data.get("overlap", {}), _SCHEMA, where, "overlap")
    for kind, entries in (("split", splits), ("overlap", overlaps)):
        for name, entry in entries.items():
            if not all(isinstance(p, str) and p for p in entry["packages"]):
                raise InputError(f"{where}: [{kind}.{name}] packages must be package names (text)")
    bad = sorted(set(splits) ^ set(SPLIT_NAMES))
    if bad:
        raise InputError(f"{where}: [split.{bad[0]}] " + ("is not a split" if bad[0] in splits else "is missing")
                         + f" (splits: {', '.join(SPLIT_NAMES)})")
    return ({name: tuple(splits[name]["packages"]) for name in SPLIT_NAMES},
            {frozenset(e["packages"]): e["why"] for e in overlaps.values()})


SPLITS, OVERLAPS = load()
#: The splits by name, as the trainer and the tests read them.
TRAIN, VALIDATION, DECISION, EVALUATION, RETIRED, CXX_TRAIN, CXX_VALIDATION, CXX_DECISION, CXX_EVALUATION = (
    SPLITS[name] for name in SPLIT_NAMES)

#: Fewer evaluation packages than this and one odd package decides the verdict.
MIN_EVALUATION = 5
#: An evaluation package whose numbers have been looked at this many times (policytrain/data/looks.toml) is retired:
#: each look informs the next choice, so after a few a table on it is no longer held out. Moved to RETIRED, it
#: still never trains, validates or decides, and `policy heldout --split retired` still measures it.
MAX_LOOKS = 3
LOOKS = Path(__file__).parent / "data" / "looks.toml"
_LOOKS_SCHEMA = {"looks": (int, True, "a whole number of looks"), "where": (str, True, "which tables looked")}


@cache
def looks(path: Path = LOOKS) -> dict[str, int]:
    """How many times each package's numbers have been looked at (a package without an entry: never)."""
    entries = datafile.tables(datafile.read(path), _LOOKS_SCHEMA, str(path))
    bad = next((name for name, e in entries.items() if e["looks"] < 0), None)
    if bad:
        raise InputError(f"{path}: [{bad}] looks must not be negative")
    return {name: e["looks"] for name, e in entries.items()}


def check(splits: Mapping[str, tuple[str, ...]] = SPLITS, recipes: Mapping[str, object] = RECIPES,
          overlaps: Mapping[frozenset[str], str] | None = None, counts: Mapping[str, int] | None = None) -> None:
    """Raise InputError (one line) unless the splits are known, disjoint, have recipes, every decided overlap (by
    default OVERLAPS, for the declared splits) joins two packages of different splits with a reason, evaluation
    is big enough, and no evaluation package has been looked at MAX_LOOKS times (`counts`, default `looks()`)."""
    if overlaps is None:
        overlaps = OVERLAPS if splits is SPLITS else {}
    unknown = sorted(set(splits) - set(SPLITS))
    if unknown:
        raise InputError(f"package splits: unknown split {unknown[0]!r} ({', '.join(SPLITS)})")
    seen: dict[str, str] = {}
    for name, packages in splits.items():
        for pkg in packages:
            if pkg in seen:
                where = "twice in" if seen[pkg] == name else f"in {seen[pkg]} and in"
                raise InputError(f"package splits: {pkg} is {where} {name}")
            seen[pkg] = name
            if pkg not in recipes:
                raise InputError(f"package splits: {pkg} ({name}) has no recipe in workers/data/recipes.toml")
    for pair, why in overlaps.items():
        where = [seen.get(pkg) for pkg in pair]
        if len(pair) != 2 or not why or None in where or len(set(where)) != 2:
            raise InputError(f"package splits: the overlap of {' and '.join(sorted(pair))} needs two packages of "
                             "different splits and a reason")
    counts = looks() if counts is None else counts
    for held in EVALUATIONS:
        if held not in splits and held != "evaluation":
            continue
        n = len(splits.get(held, ()))
        if n < MIN_EVALUATION:
            raise InputError(f"package splits: {n} {held} package(s), at least {MIN_EVALUATION} needed")
        often = [(pkg, counts[pkg]) for pkg in splits.get(held, ()) if counts.get(pkg, 0) >= MAX_LOOKS]
        if often:
            raise InputError(f"package splits: {held} package {often[0][0]} has been looked at {often[0][1]} times "
                             f"(policytrain/data/looks.toml; {MAX_LOOKS} retire a package): move it to the retired "
                             "split")


def split_of(package: str) -> str | None:
    """The split `package` belongs to, or None if it is in none."""
    return next((name for name, packages in SPLITS.items() if package in packages), None)


check()
