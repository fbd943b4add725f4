"""A unit of the policy trainer's work: one module, its bitcode and the flags it is compiled with.

Exploration, the trainer's splits and the Celery jobs all pass modules as `Unit`s; a job carries
one as JSON, and its digest is the part of a cache key that says which module was compiled how.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from policytrain.problem import INLINE_SIZE

#: The problem's optimization level (policytrain/problem.py says why `-Oz`, front end and compile).
LEVEL = INLINE_SIZE.level


@dataclass(frozen=True)
class Unit:
    """One module to compile: its name, its pre-optimization bitcode and the flags to compile it with."""

    name: str
    bitcode: Path
    flags: tuple[str, ...] = (f"-{LEVEL}",)

    def digest(self) -> str:
        """What the module's compile depends on: the bitcode's bytes and the flags (not where it lies)."""
        h = hashlib.sha256(self.bitcode.read_bytes())
        h.update(json.dumps(self.flags).encode())
        return h.hexdigest()

    def as_json(self) -> dict:
        return {"name": self.name, "bitcode": str(self.bitcode), "flags": list(self.flags)}

    @classmethod
    def from_json(cls, d: dict) -> Unit:
        return cls(str(d["name"]), Path(d["bitcode"]), tuple(d["flags"]))

    def argv(self, obj: Path) -> list[str]:
        return ["clang", *self.flags, "-c", str(self.bitcode), "-o", str(obj)]


def corpus_units(corpus_dir: Path, use: str = "the inliner for size") -> list[Unit]:
    """The modules of a corpus (corpus_description.json layout), each compiled at -Oz; one line (InputError) if the
    corpus did not come from an -Oz front end (workers/corpusdir.py check_level)."""
    from workers import corpus

    c = corpus.load(Path(corpus_dir))
    corpus.check_level(c, LEVEL, use)
    return [Unit(m.name, Path(m.bitcode)) for m in c.modules]
