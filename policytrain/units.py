"""A unit of the policy trainer's work: one module, its bitcode, the flags it is compiled with, and what its object
is measured by.

Exploration, the trainer's splits and the Celery jobs all pass modules as `Unit`s; a job carries
one as JSON, and its digest is the part of a cache key that says which module was compiled how and measured how.

A module's size is what it adds to the linked file, not its object's `.text`: `shared` names the COMDAT groups
(templates, inline functions) other modules of its package carry too, which the linker keeps one copy of whatever
this module does, so they count nothing (farm/toolchain.py `TextParts.without`). A search or an ES step is then not
paid for inlining away a copy the linker would have dropped (issue 45). For C, and for a module with no COMDAT
group another module carries, `shared` is empty and the size is the object's `.text`, as before.

Units are compiled where a `Fanout` runs them: the trainer (policytrain/trainer.py) hands it jobs, and
policytrain/fanout.py makes one of threads or of Celery tasks. The type is here, below both, so that the module
that runs the jobs does not stand on the loop that hands them out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from policytrain.problem import INLINE_SIZE

if TYPE_CHECKING:
    from farm.toolchain import Toolchain

#: The problem's optimization level (policytrain/problem.py says why `-Oz`, front end and compile).
LEVEL = INLINE_SIZE.level

#: run(kind, items) -> results in order: `kind` a job of policytrain/fanout.py (`explore`, `size`), each item
#: plain JSON; threads or Celery tasks (fanout.thread_fanout, celery_fanout)
Fanout = Callable[[str, Sequence[dict]], list]


@dataclass(frozen=True)
class Unit:
    """One module to compile: its name, its pre-optimization bitcode and the flags to compile it with."""

    name: str
    bitcode: Path
    flags: tuple[str, ...] = (f"-{LEVEL}",)
    #: COMDAT group signatures other modules of the package carry: counted nothing in this module's size
    shared: frozenset[str] = frozenset()

    def digest(self) -> str:
        """What the module's compile and its measure depend on: the bitcode's bytes, the flags and the groups
        counted elsewhere (not where it lies)."""
        h = hashlib.sha256(self.bitcode.read_bytes())
        h.update(json.dumps([_content(f) for f in self.flags]).encode())
        if self.shared:  # (only then: a module measured by its whole object keeps its key)
            h.update(json.dumps(sorted(self.shared)).encode())
        return h.hexdigest()

    def as_json(self) -> dict:
        d = {"name": self.name, "bitcode": str(self.bitcode), "flags": list(self.flags)}
        return {**d, "shared": sorted(self.shared)} if self.shared else d

    @classmethod
    def from_json(cls, d: dict) -> Unit:
        return cls(str(d["name"]), Path(d["bitcode"]), tuple(d["flags"]), frozenset(d.get("shared", ())))

    def measure(self, obj: Path, toolchain: Toolchain) -> int:
        """The module's size from its object: Berkeley `.text`, less the COMDAT groups in `shared`."""
        from farm.toolchain import text_parts, text_sizes

        if not self.shared:
            return text_sizes(toolchain, [obj])[obj]
        return text_parts(toolchain, [obj])[obj].without(self.shared)

    def argv(self, obj: Path) -> list[str]:
        return ["clang", *self.flags, "-c", str(self.bitcode), "-o", str(obj)]


#: The flag naming a ThinLTO backend's index (workers/thinlto.py): the index names, by their hashes, the modules it
#: imports from, so its bytes (not where it lies) are what the compile depends on.
INDEX_FLAG = "-fthinlto-index="


def _content(flag: str) -> str:
    if flag.startswith(INDEX_FLAG):
        return INDEX_FLAG + hashlib.sha256(Path(flag[len(INDEX_FLAG):]).read_bytes()).hexdigest()
    return flag


def thin_flags(index: Path) -> tuple[str, ...]:
    """A ThinLTO backend's flags for a module with `index`, at the problem's level (as a distributed ThinLTO build
    runs its backends: `clang -Oz -x ir M.bc -fthinlto-index=M.thinlto.bc -c`)."""
    return (f"-{LEVEL}", "-x", "ir", f"{INDEX_FLAG}{index}")


def corpus_units(corpus_dir: Path, use: str = "the inliner for size") -> list[Unit]:
    """The modules of a corpus (corpus_description.json layout), each compiled at -Oz (a ThinLTO corpus's as backends
    with their indexes); one line (InputError) if the corpus did not come from an -Oz front end (workers/corpusdir.py
    check_level)."""
    from workers import corpus

    c = corpus.load(Path(corpus_dir))
    corpus.check_level(c, LEVEL, use)
    return [Unit(m.name, Path(m.bitcode)) if m.index is None else Unit(m.name, Path(m.bitcode), thin_flags(m.index))
            for m in c.modules]
