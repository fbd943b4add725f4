"""Which modules of a Debian source package its binary packages ship: the code a user's build of it compiles.

A package's corpus holds every C file its recipe compiles, tests, fuzzers, examples and benchmarks included
(cjson's corpus is 29 files, of which Debian ships one, `cJSON.c`; the rest are tests and fuzzers). A held-out
table that sums them all judges a policy mostly on code nobody installs, so the tables count the shipped modules
(the libraries and programs `debian/*.install` puts into the binary packages) and report all modules beside them.

The data is `workers/data/shipped.toml`, one table per package, read once by `load` (one line naming the bad key):

    [zlib]
    unshipped = ["contrib/*", "examples/*", "test/*"]   # fnmatch patterns of module names (paths under the tree)
    why = "debian/rules builds libz only (minizip is another source package); contrib, examples, tests not installed"

A package without an entry has no declared split between shipped and other code: its modules all count, and
`check` says which judged packages lack one.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from farm import datafile
from farm.errors import InputError

DATA = Path(__file__).parent / "data" / "shipped.toml"


@dataclass(frozen=True)
class Shipping:
    """One package's modules that no binary package installs, and where that was read."""

    unshipped: tuple[str, ...]
    why: str

    def ships(self, module: str) -> bool:
        return not any(fnmatch.fnmatchcase(module, pat) for pat in self.unshipped)


_SCHEMA = {"unshipped": (list, True, "a list of module name patterns"),
           "why": (str, True, "where the shipped files were read")}


def parse(data: Mapping[str, object], where: str = str(DATA)) -> dict[str, Shipping]:
    """The entries of a parsed shipped.toml; InputError naming the first bad package or key."""
    out: dict[str, Shipping] = {}
    for pkg, entry in datafile.tables(data, _SCHEMA, where).items():
        if not all(isinstance(p, str) and p for p in entry["unshipped"]):
            raise InputError(f"{where}: [{pkg}] unshipped must be a list of module name patterns")
        if not entry["why"].strip():
            raise InputError(f"{where}: [{pkg}] why must say where the shipped files were read")
        out[pkg] = Shipping(tuple(entry["unshipped"]), entry["why"])
    return out


@cache
def load(path: Path = DATA) -> dict[str, Shipping]:
    return parse(datafile.read(path), str(path))


def shipping(package: str) -> Shipping | None:
    """The package's entry, None when it has none."""
    return load().get(package)


def shipped_names(package: str, modules: Iterable[str]) -> set[str]:
    """The names of `modules` the package's binary packages ship (all of them when it has no entry)."""
    s = shipping(package)
    return {m for m in modules if s is None or s.ships(m)}


def missing(packages: Iterable[str]) -> list[str]:
    """Packages without an entry."""
    have = load()
    return [p for p in packages if p not in have]
