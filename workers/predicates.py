"""Compare predicates as triplets: the farm's one extension to `llvm-ir2vec triplets`.

Why it exists: LLVM's `IR2VecTool::generateTriplets` (22.1.8 and tip of tree,
`llvm/tools/llvm-ir2vec/lib/IRUtils/IRUtils.cpp`) emits Type, Next and Arg triplets only, so the
22 predicate entities (`ICMP_eq` ... `FCMP_true`, in the vocabulary's `Arguments` section) are
never mentioned and a vocabulary trained on its output gives all of them the same filler vector.
Yet LLVM's embedder adds the predicate's vector to every `icmp`/`fcmp` it embeds (changing only
`ICMP_eq`'s vector changes the embedding of a function with one `icmp eq`): with filler,
`icmp eq` and `icmp slt` embed alike. So for every compare of a module the farm adds a triplet
from the compare's opcode entity (`ICmp`, `FCmp`) to its predicate entity under a relation of
its own, `Predicate`.

The predicates are read from the module itself, as LLVM prints it (`llvm-dis` of exactly the
bitcode `llvm-ir2vec` reads, streamed: only counts are kept). A module's result is a set of
name pairs (`ICmp\\tICMP_slt`), not numeric ids, so it does not depend on the entity map; the
dataset writer maps names to LLVM's ids and gives `Predicate` the id after LLVM's last relation
(`MAX_RELATION + 1` over the whole dataset), which can never collide with a relation LLVM emits.
The published vocabulary stays loadable by LLVM unchanged: it holds entity vectors only, and
relations are training-only.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from farm.errors import ToolError
from farm.toolchain import Toolchain

RELATION = "Predicate"
OPCODES = {"icmp": "ICmp", "fcmp": "FCmp"}
ICMP = ("eq", "ne", "ugt", "uge", "ult", "ule", "sgt", "sge", "slt", "sle")
FCMP = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "uno", "ueq", "ugt", "uge", "ult", "ule",
        "une", "true")
#: Words LLVM may print between `icmp`/`fcmp` and the predicate (samesign, fast-math flags).
_FLAGS = rb"samesign|nnan|ninf|nsz|arcp|contract|afn|reassoc|fast"
#: An instruction line of a function body: `  %x = icmp slt i32 %a, %b` (names may be quoted).
_COMPARE = re.compile(rb'^\s+%(?:"[^"]*"|[-\w.$]+) = (icmp|fcmp) (?:(?:' + _FLAGS + rb") )*([a-z]+) ")
_KNOWN = {"icmp": frozenset(ICMP), "fcmp": frozenset(FCMP)}


def entity_name(kind: str, predicate: str) -> str:
    """LLVM's entity name of a predicate (`ICMP_slt`, `FCMP_olt`)."""
    return f"{kind.upper()}_{predicate}"


class Reader:
    """A sink for Toolchain.stream: counts (opcode entity, predicate entity) pairs in textual IR as it arrives."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()
        self._tail = b""

    def feed(self, chunk: bytes) -> None:
        lines = (self._tail + chunk).split(b"\n")
        self._tail = lines.pop()
        for line in lines:
            self._line(line)

    def _line(self, line: bytes) -> None:
        if b"cmp " not in line:
            return
        m = _COMPARE.match(line)
        if m is None:
            return
        kind, pred = m[1].decode(), m[2].decode()
        if pred not in _KNOWN[kind]:
            raise ToolError(f"unknown {kind} predicate {pred!r} in llvm-dis output: {line[:80]!r}")
        self.counts[(OPCODES[kind], entity_name(kind, pred))] += 1

    def finish(self) -> Counter[tuple[str, str]]:
        if self._tail:
            self._line(self._tail)
            self._tail = b""
        return self.counts


def read_text(text: bytes) -> Counter[tuple[str, str]]:
    """The compares of a textual IR module (for tests and for text already at hand)."""
    r = Reader()
    r.feed(text)
    return r.finish()


def predicates_of(tc: Toolchain, file: Path, timeout: float, name: str) -> Counter[tuple[str, str]]:
    """Every compare of one IR file: bitcode read off `llvm-dis` as it streams, text (`.ll`, a retargeted
    module at O0) as it is."""
    r = Reader()
    if Path(file).suffix == ".ll":
        with open(file, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                r.feed(chunk)
    else:
        tc.stream("llvm-dis", [file, "-o", "-"], r.feed, timeout=timeout, subject=name)
    return r.finish()


def pair_line(opcode: str, predicate: str) -> bytes:
    """How a module's result and the caches hold one pair: `ICmp\\tICMP_slt`."""
    return f"{opcode}\t{predicate}".encode()


def triplet_lines(pairs: set[bytes], entity_ids: dict[str, int], relation: int) -> set[bytes]:
    """Name pairs as `head\\ttail\\trelation` lines with LLVM's entity ids; a name LLVM does not list is an error."""
    out = set()
    for pair in pairs:
        head, tail = pair.decode().split("\t")
        missing = [n for n in (head, tail) if n not in entity_ids]
        if missing:
            raise ToolError(f"compare predicate entity {missing[0]!r} is not in LLVM's entity list "
                            f"(llvm-ir2vec entities): this LLVM names its predicates differently")
        out.add(b"%d\t%d\t%d" % (entity_ids[head], entity_ids[tail], relation))
    return out


def entity_ids(entities: bytes) -> dict[str, int]:
    """name -> id from `llvm-ir2vec entities` output (count line, then `name<TAB>id`)."""
    ids = {}
    for line in entities.decode().splitlines()[1:]:
        if "\t" in line:
            name, i = line.rsplit("\t", 1)
            ids[name] = int(i)
    return ids
