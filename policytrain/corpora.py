"""The corpora of a run's packages: which corpora train, validate and evaluate, checked before anything compiles.

A package is a Debian source package compiled once to a corpus, or `NAME=CORPUS_DIR`. Everything a command line
can get wrong about them is found in two steps, cheapest first, so that a mistake costs a second and not the
minutes of preparing the other splits (fetching Debian sources for the overlap check, compiling corpora):

    plan_splits   names (no split empty, no package in two), every NAME=DIR read (a corpus directory of -Oz
                  bitcode), and no corpus under two names: names alone let one directory train as `a` and
                  validate as `b`, so directories are compared resolved and their corpora by content,
                  module by module (a corpus holding another's modules and more is no new code)
    build_splits  code the Debian packages of different splits share with no decision (policytrain/overlap.py),
                  then each Debian package's corpus, compiled once

The splits the farm declares, when a command line names none, are data read by policytrain/splitdata.py; this
module turns the specs of either into `Package`s with their corpora. policytrain/trainer.py re-exports all of it
(its callers import it from there).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from farm.errors import InputError
from farm.toolchain import Toolchain
from policytrain.recipes import TrainingRecipe
from policytrain.units import LEVEL, Unit, corpus_units
from workers.shipped import Output

SPLITS = ("train", "validation", "evaluation")


@dataclass(frozen=True)
class Package:
    """A whole package of modules (a corpus directory) under one name; `shipped` names the modules its binary
    packages install (workers/shipped.py), None when it declares no split between shipped and other code."""

    name: str
    units: tuple[Unit, ...]
    shipped: frozenset[str] | None = None
    #: the linked files its binary packages install (workers/data/shipped.toml outputs): judged linked when any
    outputs: tuple[Output, ...] = ()


def package(name: str, corpus_dir: Path, most: int | None = None) -> Package:
    from workers.corpus import sample_names
    from workers.shipped import shipping

    units = corpus_units(corpus_dir)
    if most is not None and len(units) > most:
        keep = sample_names((u.name for u in units), most)
        units = [u for u in units if u.name in keep]
    s = shipping(name)
    if s is None:
        return Package(name, tuple(units))
    return Package(name, tuple(units), frozenset(u.name for u in units if s.ships(u.name)), s.outputs)


def names(ps: Sequence[Package]) -> str:
    return ", ".join(p.name for p in ps) or "none"


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
                                 f"(train: {names(self.train)}; validation: {names(self.validation)})")


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


def named(option: str, given: str | None, otherwise: str) -> None:
    """A split option given on the command line names at least one package: `--evaluation ""` is not the declared
    split (that is the option left out), and a table of no packages would pass in silence. `otherwise` says what
    else the user may mean."""
    if given is not None and not comma_list(given):
        raise InputError(f"{option} {given!r} names no packages: name them, {otherwise}")


def specs(split: str, given: str | None, rec: TrainingRecipe | None = None) -> list[str]:
    """Comma-separated package specs of one split; None: the recipe's, else the split splitdata.py declares (the C++
    one, `cxx-SPLIT`, for a recipe of C++: TrainingRecipe.cxx)."""
    if given is None and rec is not None and rec.split(split) is not None:
        given = ",".join(rec.split(split))
    if given is None:
        from policytrain.splitdata import SPLITS as DECLARED

        given = ",".join(DECLARED[f"cxx-{split}" if rec is not None and rec.cxx else split])
    return comma_list(given)


def comma_list(given: str | None) -> list[str]:
    """The package specs of a comma-separated option, blanks dropped (`" zlib, ,bzip2"`: zlib and bzip2)."""
    return [x.strip() for x in (given or "").split(",") if x.strip()]


def debian_dir(var_dir: Path, name: str, most: int | None = None, level: str = LEVEL) -> Path:
    """Where Debian package `name` is compiled once by a `level` front end (only the `most` modules training samples,
    when given): `<var>/policy/corpus/debian-NAME-LEVEL[-most]`. The level is in the name because a module's bitcode
    carries it, so the inliner's -Oz corpora and the eviction trainer's -O2 ones never share a directory."""
    return var_dir / "policy" / "corpus" / (f"debian-{name}-{level}" + (f"-{most}" if most else ""))


def thin_package(p: Package, corpus_dir: Path, out: Path, toolchain: Toolchain, most: int | None = None) -> Package:
    """Package `p`, read from `corpus_dir`, in the ThinLTO regime: its ThinLTO corpus (workers/thinlto.py: every
    module of its linked outputs pre-linked and thin-linked, compiled as backends with their indexes), made once in
    `out`; `most` samples its modules after the thin link (the indexes need every module)."""
    from farm.locks import made_once
    from workers.corpus import load, sample_names
    from workers.thinlto import outputs_of, thin_corpus

    made_once(out, "corpus_description.json", lambda: thin_corpus(p.name, load(corpus_dir), p.outputs, out, toolchain))
    every = corpus_units(out)
    keep = sample_names((u.name for u in every), most)
    units = tuple(u for u in every if u.name in keep)
    whole = len(units) == len(every)  # a sample links nothing
    return Package(p.name, units, frozenset(keep), outputs_of(out) if whole else ())


def given_corpora(wanted: Mapping[str, Sequence[str]], var_dir: Path,
                  most: Mapping[str, int | None] | None = None) -> dict[tuple[str, str], Package]:
    """Every `NAME=CORPUS_DIR` of `wanted` (split: specs) read as a package, keyed by (split, spec), before any
    Debian source is fetched or corpus compiled; one line for a directory that is no corpus or not of -Oz bitcode,
    and for one corpus under two names (its resolved directory, a Debian package's cached corpus, or the same
    modules: the corpus digest), or a module of one corpus in another (its bitcode's digest: a superset or subset of
    another package's corpus). `most` caps a split's packages (the recipe's cap on training packages)."""
    from workers.corpus import digest_of, load

    most = most or {}
    found: dict[tuple[str, str], Package] = {}
    seen: dict[str, tuple[str, str]] = {}  # what identifies a corpus -> (package, split)

    def claim(key: str, why: str, name: str, split: str, is_: str = "is the corpus of") -> None:
        if key in seen and seen[key] != (name, split):
            first, where = seen[key]
            raise InputError(f"package {name} ({split}) {is_} package {first} ({where}): {why}; a corpus "
                             "is one package in one split")
        seen[key] = (name, split)

    for split, given in wanted.items():
        for spec in given:
            name, eq, path = spec.partition("=")
            if not eq:
                for dir_ in {debian_dir(var_dir, name), debian_dir(var_dir, name, most.get(split))}:
                    claim(f"dir:{os.path.realpath(dir_)}", f"the same directory, {dir_}", name, split)
                continue
            if not (Path(path) / "corpus_description.json").is_file():
                raise InputError(f"package {name}: {path} is not a corpus directory (no corpus_description.json)")
            real = os.path.realpath(path)
            claim(f"dir:{real}", f"the same directory, {real}", name, split)
            # by content, module by module: a corpus that is another's modules plus one (or a few of them) shares
            # their code as surely as a copy does, and its whole-corpus digest differs
            shas = [(m.name, hashlib.sha256(m.bitcode.read_bytes()).hexdigest()) for m in load(Path(path)).modules]
            digest = digest_of(shas)
            claim(f"digest:{digest}", f"the same modules (corpus digest {digest[:12]})", name, split)
            for module, sha in shas:
                claim(f"module:{sha}", f"module {module} is the same bitcode (sha256 {sha[:12]})", name, split,
                      "holds a module of")
            found[(split, spec)] = package(name, Path(path), most.get(split))
    return found


def package_corpus(spec: str, var_dir: Path, toolchain: Toolchain, most: int | None = None,
                   thinlto: bool = False) -> Package:
    """`NAME=CORPUS_DIR`, or a Debian source package compiled once, by an -Oz front end, into
    `<var>/policy/corpus/debian-NAME-Oz[-most]` (only the `most` modules training samples, by the same name-hash
    rule). A corpus of another level is refused when its units are read (policytrain/units.py LEVEL). `thinlto`: the
    package in the ThinLTO regime (`thin_package`), its ThinLTO corpus under `<var>/policy/corpus/thinlto-NAME-...`."""
    from farm.locks import made_once
    from workers.corpus import from_debian

    name, eq, path = spec.partition("=")
    if thinlto:  # the whole per-file corpus first: a thin link needs every module of an output
        whole = package_corpus(spec, var_dir, toolchain)
        where = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:12] if eq else "debian"
        return thin_package(whole, Path(path) if eq else debian_dir(var_dir, name),
                            var_dir / "policy" / "corpus" / f"thinlto-{name}-{where}-{LEVEL}", toolchain, most)
    if eq:
        if not (Path(path) / "corpus_description.json").is_file():
            raise InputError(f"package {name}: {path} is not a corpus directory (no corpus_description.json)")
        return package(name, Path(path), most)
    out = debian_dir(var_dir, name, most)
    made_once(out, "corpus_description.json",
              lambda: from_debian(name, out, toolchain, var_dir / "debsrc", sample=most, level=LEVEL))
    return package(name, out, most)


@dataclass(frozen=True)
class Plan:
    """The splits a command line asks for, checked as far as is possible without fetching or compiling anything."""

    wanted: dict[str, list[str]]
    given: dict[tuple[str, str], Package]
    most: int | None
    #: every package in the ThinLTO regime (TrainingRecipe.thinlto)
    thinlto: bool = False


def plan_splits(train: str | None, validation: str | None, evaluation: str | None, var_dir: Path,
                rec: TrainingRecipe | None = None) -> Plan:
    """The three splits' package specs (None: the recipe's or the declared ones) with names checked and every
    `NAME=CORPUS_DIR` read (`given_corpora`); the recipe's `max_modules` caps each training package."""
    most = rec.max_modules if rec is not None else None
    wanted = {s: specs(s, g, rec) for s, g in zip(SPLITS, (train, validation, evaluation), strict=True)}
    check_names({s: [n.partition("=")[0] for n in wanted[s]] for s in SPLITS})
    return Plan(wanted, given_corpora(wanted, var_dir, {"train": most}), most, bool(rec is not None and rec.thinlto))


def build_splits(plan: Plan, var_dir: Path, toolchain: Toolchain, desc: str = "policy") -> Splits:
    """The planned splits' packages, after the Debian packages' sources are checked for code shared across splits
    with no decision (policytrain/overlap.py); each Debian package's corpus is compiled once. Both stages show their
    progress (farm/progress.py), a line per package, under `desc` (the verb)."""
    from policytrain.overlap import check_specs

    fetch_sources(sorted({n for s in SPLITS for n in plan.wanted[s] if "=" not in n}), var_dir, desc)
    check_specs(plan.wanted, var_dir / "debsrc")
    return Splits(*corpora([[(n, plan.given.get((s, n)), plan.most if s == "train" else None) for n in plan.wanted[s]]
                            for s in SPLITS], var_dir, toolchain, desc, plan.thinlto))


def fetch_sources(names: Sequence[str], var_dir: Path, desc: str = "policy") -> None:
    """Each Debian package's source fetched (or found) under `<var>/debsrc`, a progress line per package."""
    from farm.progress import steps
    from workers.debsrc import fetch_source

    with steps(len(names), f"{desc}: package sources fetched", unit="pkg") as bar:
        for name in names:
            fetch_source(name, var_dir / "debsrc")
            bar.update()


def corpora(groups: Sequence[Sequence[tuple[str, Package | None, int | None]]], var_dir: Path, toolchain: Toolchain,
            desc: str = "policy", thinlto: bool = False) -> list[tuple[Package, ...]]:
    """Each group's packages, (spec, the package already read or None, most) each: a Debian package's corpus
    compiled once (`package_corpus`; with `thinlto`, its ThinLTO corpus, a package read already included), a
    progress line per package."""
    from farm.progress import steps

    if thinlto:
        groups = [[(spec, None, most) for spec, _, most in g] for g in groups]
    todo = sum(1 for g in groups for _, given, _ in g if given is None)
    out: list[tuple[Package, ...]] = []
    with steps(todo, f"{desc}: package corpora built", unit="pkg") as bar:
        for g in groups:
            got = []
            for spec, given, most in g:
                if given is None:
                    given = package_corpus(spec, var_dir, toolchain, most, thinlto=thinlto)
                    bar.update()
                got.append(given)
            out.append(tuple(got))
    return out


def resolve_splits(train: str | None, validation: str | None, evaluation: str | None, var_dir: Path,
                   toolchain: Toolchain, rec: TrainingRecipe | None = None) -> Splits:
    """The three splits from comma-separated package specs: `plan_splits`, then `build_splits`."""
    return build_splits(plan_splits(train, validation, evaluation, var_dir, rec), var_dir, toolchain)
