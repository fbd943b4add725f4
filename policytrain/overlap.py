"""Source files one policy split shares with another: the check that makes each overlap a decision.

A split by package (policytrain/splitdata.py) is honest only if packages do not carry each other's code. They
sometimes do: lz4 (evaluation) bundles an older xxHash, which libzstd and xxhash (training) compile from a newer
header; speexdsp and speex share near-copies of two files. Found by hand, after a policy had been measured, such an
overlap is a discovery; found here, before anything trains, it is a decision written down in
an `[overlap]` of data/splits.toml with its reason.

Two files overlap when most of the smaller one's code lines are also the other's. A code line is a line with its
comments removed and whitespace collapsed, long enough to mean something; lines found in the files of many packages
(licence boilerplate, `#include <stdio.h>`) say nothing and are not counted. Files are compared across splits only,
through an index of lines, so the whole of the splits' sources is checked in seconds.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from farm.errors import InputError
from policytrain.splitdata import OVERLAPS
from workers import debsrc

#: the C and header files compared (the modules and the headers they inline from)
SUFFIXES = (".c", ".h")
#: a code line shorter than this, whitespace collapsed, is too common to tell copies apart (`return 0;`, `}`)
MIN_LINE = 20
#: a line in the files of more packages than this is boilerplate, not a copy
MAX_PACKAGES = 3
#: two files overlap when at least this many code lines are shared ...
MIN_SHARED = 20
#: ... and they are at least this part of the smaller file's code lines
MIN_FRACTION = 0.4

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_SPACE = re.compile(r"\s+")


def code_lines(text: str) -> frozenset[str]:
    """The file's distinct code lines: comments removed, whitespace collapsed, long enough to count."""
    lines = (_SPACE.sub(" ", line).strip() for line in _COMMENT.sub("\n", text).splitlines())
    return frozenset(line for line in lines if len(line) >= MIN_LINE)


@dataclass(frozen=True)
class Source:
    package: str
    split: str
    path: str  # under the package's tree
    lines: frozenset[str]


@dataclass(frozen=True)
class Overlap:
    """Two files of packages in different splits, most of the smaller one's code in the other."""

    a: Source
    b: Source
    shared: int

    @property
    def fraction(self) -> float:
        return self.shared / min(len(self.a.lines), len(self.b.lines))

    @property
    def packages(self) -> frozenset[str]:
        return frozenset((self.a.package, self.b.package))

    def said(self) -> str:
        return (f"{self.a.split} {self.a.package}:{self.a.path} ~ {self.b.split} {self.b.package}:{self.b.path}: "
                f"{self.shared} code lines shared, {self.fraction:.0%} of the smaller file")


def sources(package: str, split: str, tree: Path, paths: Iterable[str]) -> list[Source]:
    """The files `paths` (under the unpacked `tree`) that have code lines."""
    out = []
    for rel in sorted(set(paths)):
        lines = code_lines((tree / rel).read_text(encoding="utf-8", errors="replace"))
        if lines:
            out.append(Source(package, split, rel, lines))
    return out


def compiled(package: str, tree: Path) -> list[str]:
    """What of the package's tree a corpus takes in: its recipe's modules and the headers under the directories
    it compiles or searches (`-I`). Bundled code its build leaves alone (openjpeg2's thirdparty/ zlib, lcms2 and
    libpng) is not counted, nor are quilt's copies of patched files (`.pc/`)."""
    r = debsrc.recipe(package)
    dirs = {tree / d for d in r.subdirs}
    dirs |= {Path(f[2:]) for f in r.flags_for(tree) if f.startswith("-I")}
    headers = {h.relative_to(tree).as_posix() for d in dirs if d.is_dir() for h in d.rglob("*.h")
               if h.is_file() and h.is_relative_to(tree)}
    headers = {h for h in headers if not {".pc", "debian"} & set(h.split("/"))}
    return sorted(headers | {j.name for j in debsrc.jobs(package, tree)})


def overlaps(files: Iterable[Source]) -> list[Overlap]:
    """Every pair of files from different splits that overlap (see the module docstring), largest first."""
    files = list(files)
    where: dict[str, list[int]] = defaultdict(list)
    for i, f in enumerate(files):
        for line in f.lines:
            where[line].append(i)
    shared: Counter[tuple[int, int]] = Counter()
    for holders in where.values():
        if len({files[i].package for i in holders}) > MAX_PACKAGES:
            continue
        for x, i in enumerate(holders):
            for j in holders[x + 1:]:
                if files[i].split != files[j].split:
                    shared[i, j] += 1
    found = [Overlap(files[i], files[j], n) for (i, j), n in shared.items() if n >= MIN_SHARED]
    found = [o for o in found if o.fraction >= MIN_FRACTION]
    return sorted(found, key=lambda o: (-o.shared, o.a.package, o.a.path, o.b.package, o.b.path))


def of_splits(splits: Mapping[str, Iterable[str]], tree_of: Callable[[str], Path]) -> list[Source]:
    """The compiled files of every package of `splits` (split name: packages), each tree from `tree_of(package)`."""
    out = []
    for split, names in splits.items():
        for package in names:
            tree = tree_of(package)
            out += sources(package, split, tree, compiled(package, tree))
    return out


def between(splits: Mapping[str, Iterable[str]], debsrc_dir: Path) -> list[Overlap]:
    """The overlaps across `splits` (split name: Debian packages), each source fetched (or found) under `debsrc_dir`."""
    return overlaps(of_splits(splits, lambda package: debsrc.fetch_source(package, debsrc_dir)))


def check_specs(specs: Mapping[str, Iterable[str]], debsrc_dir: Path) -> None:
    """`check` the Debian packages among a training's package specs (split name: specs; a `NAME=CORPUS_DIR` spec is
    not a Debian package and is passed over) against the decisions of policytrain/splitdata.py."""
    debian = {split: [s for s in names if "=" not in s] for split, names in specs.items()}
    check(between(debian, debsrc_dir), OVERLAPS)


def undecided(found: Iterable[Overlap], decided: Mapping[frozenset[str], str]) -> list[Overlap]:
    """The overlaps between packages whose pair has no decision written down."""
    return [o for o in found if o.packages not in decided]


def check(found: Iterable[Overlap], decided: Mapping[frozenset[str], str]) -> None:
    """Raise InputError (one line) naming the pairs of packages that share code with no decision written down."""
    left = sorted({" and ".join(sorted(o.packages)) for o in undecided(found, decided)})
    if left:
        raise InputError(f"package splits: {len(left)} pair(s) of packages share code with no decision in "
                         f"policytrain/data/splits.toml [overlap]: {'; '.join(left)}")
