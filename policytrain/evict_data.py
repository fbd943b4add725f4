"""The eviction trainer's packages: `-O2` corpora, named as `policy train` names them, checked before anything compiles.

A package is a Debian source package compiled once to an `-O2` corpus (`<var>/policy/corpus/debian-NAME-O2`,
beside the inliner's `-Oz` ones: a module's bitcode carries its front end's level in its function attributes, so
the two problems never share a corpus), or `NAME=CORPUS_DIR` for a corpus directory made by an `-O2` front end
(`mlgo-farm corpus ... --level O2`). Every mistake a command line can make is one line (InputError, exit 2) before
any source is fetched: a package in two splits, a directory that is no corpus or not of `-O2` bitcode, a Debian name
apt knows no source package of.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from farm.errors import InputError
from farm.toolchain import Toolchain
from policytrain.corpora import Package, check_names, debian_dir
from policytrain.problem import EVICT_SPEED
from policytrain.units import Unit

LEVEL = EVICT_SPEED.level
USE = "regalloc eviction for speed"


def check_splits(train: Sequence[str], validation: Sequence[str]) -> None:
    """Both splits named, no package in both, every corpus directory an -O2 corpus, every Debian name a source
    package apt knows: one line for the first that is not."""
    check_names({"train": [s.partition("=")[0] for s in train], "validation": [s.partition("=")[0] for s in
                                                                                validation]})
    for spec in (*train, *validation):
        name, eq, path = spec.partition("=")
        if eq:
            units(name, Path(path))
        else:
            check_debian(name)


def check_debian(name: str) -> None:
    """InputError unless apt knows a source package `name` (asked of the local apt cache: nothing is fetched)."""
    from workers.debsrc import check_name

    check_name(name)
    if shutil.which("apt-cache") is None:
        return  # fetching it says why it cannot (workers/debsrc.py)
    p = subprocess.run(["apt-cache", "showsrc", "--only-source", name], capture_output=True, text=True, timeout=60)
    if not p.stdout.strip():
        raise InputError(f"package {name}: apt knows no Debian source package of that name (apt-cache showsrc)")


def units(name: str, corpus_dir: Path, most: int | None = None) -> list[Unit]:
    """The modules of an -O2 corpus, each compiled at -O2; `most` samples them by name hash (as the inliner does)."""
    from workers import corpus

    if not (corpus_dir / "corpus_description.json").is_file():
        raise InputError(f"package {name}: {corpus_dir} is not a corpus directory (no corpus_description.json)")
    c = corpus.load(corpus_dir)
    corpus.check_level(c, LEVEL, USE)
    found = [Unit(m.name, Path(m.bitcode), (f"-{LEVEL}",)) for m in c.modules if m.index is None]
    if most is not None and len(found) > most:
        keep = corpus.sample_names((u.name for u in found), most)
        found = [u for u in found if u.name in keep]
    return found


def package(spec: str, var_dir: Path, toolchain: Toolchain, most: int | None = None) -> Package:
    """`NAME=CORPUS_DIR`, or a Debian source package compiled once by an -O2 front end."""
    from farm.locks import made_once
    from workers.corpus import from_debian

    name, eq, path = spec.partition("=")
    if eq:
        return Package(name, tuple(units(name, Path(path), most)))
    out = debian_dir(var_dir, name, level=LEVEL)
    made_once(out, "corpus_description.json",
              lambda: from_debian(name, out, toolchain, var_dir / "debsrc", level=LEVEL))
    return Package(name, tuple(units(name, out, most)))


def packages(given: Sequence[str], var_dir: Path, toolchain: Toolchain, most: int | None, desc: str
             ) -> tuple[Package, ...]:
    """Each package of a split, a progress line per package (farm/progress.py)."""
    from farm.progress import steps

    with steps(len(given), f"{desc}: package corpora", unit="pkg") as bar:
        out = []
        for spec in given:
            out.append(package(spec, var_dir, toolchain, most))
            bar.update()
    return tuple(out)
