"""What a Debian source package's binary packages ship: which modules, and the linked files they make.

A package's corpus holds every file its recipe compiles, tests, fuzzers, examples and benchmarks included
(cjson's corpus is 29 files, of which Debian ships one, `cJSON.c`; the rest are tests and fuzzers). A held-out
table that sums them all judges a policy mostly on code nobody installs, so the tables count the shipped modules
(the libraries and programs `debian/*.install` puts into the binary packages) and report all modules beside them.

And what ships is not a sum of objects: it is linked files. The linker keeps one copy of each COMDAT function
(templates, inline and `linkonce_odr` functions) that every object carried, so for C++ a sum of objects counts one
function once per object that instantiated it, and a policy that shrinks objects by inlining those copies everywhere
grows the library users install (issue 45: objects 0.974x, linked libraries up to 1.030x). So an entry also says
which files the package links and from which modules (`outputs`): workers/linked.py links them with `ld.lld` as
the package's build does, and that figure judges.

The data is `workers/data/shipped.toml`, one table per package, read once by `load` (one line naming the bad key):

    [bzip2]
    unshipped = []          # fnmatch patterns of module names (paths under the tree) no binary package installs
    why = "debian/*.install: libbz2 and the bzip2, bzip2recover programs"
    [[bzip2.outputs]]
    name = "libbz2.so.1.0"  # the file a binary package installs
    kind = "shared"         # `shared` (a shared library) or `program`
    modules = ["blocksort.c", "huffman.c", "crctable.c", "randtable.c", "compress.c", "decompress.c", "bzlib.c"]
    [[bzip2.outputs]]
    name = "bzip2"
    kind = "program"
    modules = ["bzip2.c"]
    needs = ["libbz2.so.1.0"]   # outputs of the same package it links against, as its build does
    libs = []                   # the rest of its link line: system libraries (`-lm`, `-lz`, `-lpthread`)

Every module an entry ships is in at least one output, and every output's patterns name shipped modules (a pattern
that matches no module of the corpus is an error when the package is linked: a recipe naming an object no rule
builds). A package without an entry has no declared split between shipped and other code: its modules all count,
and `check` says which judged packages lack one.
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
#: What an output can be: a shared library (`ld.lld -shared`) or a program (a position-independent executable, as
#: Debian's compilers make them).
KINDS = ("shared", "program")


@dataclass(frozen=True)
class Output:
    """One linked file a package installs: its name, kind, the modules (patterns) it is made of, the outputs of the
    same package it links against, and the rest of its link line."""

    name: str
    kind: str
    modules: tuple[str, ...]
    needs: tuple[str, ...] = ()
    libs: tuple[str, ...] = ()
    #: the package's unshipped patterns: a module they name is never a member, however broad `modules` is (fnmatch's
    #: `*` crosses `/`: `re2/*.cc` also matches `re2/testing/*.cc`)
    exclude: tuple[str, ...] = ()

    def has(self, module: str) -> bool:
        return (any(fnmatch.fnmatchcase(module, pat) for pat in self.modules)
                and not any(fnmatch.fnmatchcase(module, pat) for pat in self.exclude))

    def members(self, modules: Iterable[str]) -> list[str]:
        """The names of `modules` this output is made of, in the order given (the link order)."""
        return [m for m in modules if self.has(m)]

    def as_json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "modules": list(self.modules), "needs": list(self.needs),
                "libs": list(self.libs), "exclude": list(self.exclude)}

    @classmethod
    def from_json(cls, d: Mapping) -> Output:
        return cls(str(d["name"]), str(d["kind"]), tuple(d["modules"]), tuple(d.get("needs", ())),
                   tuple(d.get("libs", ())), tuple(d.get("exclude", ())))

    def unmatched(self, modules: Iterable[str]) -> list[str]:
        """The output's patterns no shipped module of `modules` matches: objects no rule builds."""
        names = [m for m in modules if not any(fnmatch.fnmatchcase(m, pat) for pat in self.exclude)]
        return [pat for pat in self.modules if not any(fnmatch.fnmatchcase(m, pat) for m in names)]


@dataclass(frozen=True)
class Shipping:
    """One package's modules that no binary package installs, the files it links, and where that was read."""

    unshipped: tuple[str, ...]
    why: str
    outputs: tuple[Output, ...] = ()

    def ships(self, module: str) -> bool:
        return not any(fnmatch.fnmatchcase(module, pat) for pat in self.unshipped)

    def output(self, name: str) -> Output:
        return next(o for o in self.outputs if o.name == name)


_SCHEMA = {"unshipped": (list, True, "a list of module name patterns"),
           "why": (str, True, "where the shipped files were read"),
           "outputs": (list, False, "a list of [[PACKAGE.outputs]] tables")}
_OUTPUT = {"name": (str, True, "the file a binary package installs"),
           "kind": (str, True, f"one of {', '.join(KINDS)}"),
           "modules": (list, True, "a list of module name patterns"),
           "needs": (list, False, "a list of this package's outputs it links against"),
           "libs": (list, False, "a list of link flags (-lNAME, -Wl,...)")}


def _texts(value: list, where: str, key: str, what: str) -> tuple[str, ...]:
    if not all(isinstance(p, str) and p for p in value):
        raise InputError(f"{where} {key} must be {what}")
    return tuple(value)


def _outputs(pkg: str, entries: list, unshipped: tuple[str, ...], where: str) -> tuple[Output, ...]:
    outs: list[Output] = []
    for i, raw in enumerate(entries):
        at = f"{where}: [{pkg}.outputs] #{i + 1}"
        if not isinstance(raw, dict):
            raise InputError(f"{at} must be a table")
        entry = datafile.tables({f"{pkg}.outputs": raw}, _OUTPUT, where)[f"{pkg}.outputs"]
        at = f"{where}: [{pkg}.outputs] {entry['name']!r}"
        if entry["kind"] not in KINDS:
            raise InputError(f"{at} kind must be one of {', '.join(KINDS)}, not {entry['kind']!r}")
        if "/" in entry["name"] or entry["name"] in (".", ".."):
            raise InputError(f"{at} name must be a file name, not a path")
        out = Output(entry["name"], entry["kind"], _texts(entry["modules"], at, "modules", "module name patterns"),
                     _texts(entry.get("needs", []), at, "needs", "output names"),
                     _texts(entry.get("libs", []), at, "libs", "link flags"), unshipped)
        if not out.modules:
            raise InputError(f"{at} modules must name at least one module")
        bad = [x for x in out.libs if not x.startswith(("-l", "-Wl,", "-pthread"))]
        if bad:
            raise InputError(f"{at} libs: {bad[0]!r} is not a library (-lNAME) or a linker flag (-Wl,...)")
        gone = [p for p in out.modules if any(fnmatch.fnmatchcase(p, u) for u in unshipped)]
        if gone:
            raise InputError(f"{at} modules: {gone[0]!r} is unshipped (the entry's `unshipped` names it)")
        outs.append(out)
    names = [o.name for o in outs]
    for o in outs:
        if names.count(o.name) > 1:
            raise InputError(f"{where}: [{pkg}.outputs] {o.name!r} is declared twice")
        missing = [n for n in o.needs if n not in names or n == o.name]
        if missing:
            raise InputError(f"{where}: [{pkg}.outputs] {o.name!r} needs {missing[0]!r}, which is not another "
                             "output of the package")
        if any(outs[names.index(n)].kind != "shared" for n in o.needs):
            raise InputError(f"{where}: [{pkg}.outputs] {o.name!r} can only link against shared outputs")
    return tuple(outs)


def parse(data: Mapping[str, object], where: str = str(DATA)) -> dict[str, Shipping]:
    """The entries of a parsed shipped.toml; InputError naming the first bad package or key."""
    out: dict[str, Shipping] = {}
    for pkg, entry in datafile.tables(data, _SCHEMA, where).items():
        if not all(isinstance(p, str) and p for p in entry["unshipped"]):
            raise InputError(f"{where}: [{pkg}] unshipped must be a list of module name patterns")
        if not entry["why"].strip():
            raise InputError(f"{where}: [{pkg}] why must say where the shipped files were read")
        unshipped = tuple(entry["unshipped"])
        out[pkg] = Shipping(unshipped, entry["why"], _outputs(pkg, entry.get("outputs", []), unshipped, where))
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


def unlinked(packages: Iterable[str]) -> list[str]:
    """Packages whose entry declares no linked outputs (or that have no entry)."""
    have = load()
    return [p for p in packages if p not in have or not have[p].outputs]
