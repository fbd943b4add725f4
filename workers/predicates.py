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

The predicates are read off the module's bitcode, exactly the bitcode `llvm-ir2vec` reads, by a
small scanner of the farm's own (`workers/cmpscan.c`, built once with the toolchain's clang into
`<var_dir>/bin`): it walks the bitstream as `llvm-bcanalyzer` does, skips every block but the
function bodies by its length word and counts each compare record's predicate, so no IR is built
and no text is printed. (Disassembling every module with `llvm-dis` and reading the text, as the
first version did, cost as much again as `llvm-ir2vec triplets` itself; text already at hand, a
retargeted `.ll` module, is still read as text, and so is bitcode another LLVM wrote.)

A module's result is a set of name pairs (`ICmp\\tICMP_slt`), not numeric ids, so it does not
depend on the entity map; the dataset writer maps names to LLVM's ids and gives `Predicate` the id
after LLVM's last relation (`MAX_RELATION + 1` over the whole dataset), which can never collide
with a relation LLVM emits. The published vocabulary stays loadable by LLVM unchanged: it holds
entity vectors only, and relations are training-only.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import Counter
from pathlib import Path

from farm.config import load_settings
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
#: The scanner's source; its binary is named by a digest of it and of the clang that built it.
SCANNER = Path(__file__).with_name("cmpscan.c")
_scanner_lock = threading.Lock()
_scanners: dict[Path, Path] = {}  # bin_dir -> the scanner built with its clang


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
            raise ToolError(f"unknown {kind} predicate {pred!r} in textual IR: {line[:80]!r}")
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


def _by_number() -> dict[int, tuple[str, str]]:
    """LLVM's `CmpInst::Predicate` numbers (as bitcode stores them) -> (opcode entity, predicate entity)."""
    fcmp = {i: ("FCmp", entity_name("fcmp", p)) for i, p in enumerate(FCMP)}
    return {**fcmp, **{32 + i: ("ICmp", entity_name("icmp", p)) for i, p in enumerate(ICMP)}}


_NUMBERS = _by_number()


def scanner(tc: Toolchain) -> Path:
    """The scanner's executable, built with `tc`'s clang into `<var_dir>/bin` the first time it is needed.

    Named by a digest of its source and of the clang that built it, written under a temporary
    name and renamed, so concurrent builds and workers never see half a binary or another's.
    """
    with _scanner_lock:
        exe = _scanners.get(tc.bin_dir)
        if exe is not None and exe.is_file():
            return exe
        key = SCANNER.read_bytes() + str(tc.path("clang")).encode() + tc.clang_version.encode()
        name = f"cmpscan-{hashlib.sha256(key).hexdigest()[:16]}"
        exe = load_settings().var_dir / "bin" / name
        if not exe.is_file():
            tmp = exe.with_name(f".{name}.{os.getpid()}")
            try:
                exe.parent.mkdir(parents=True, exist_ok=True)
                tc.run("clang", ["-O2", "-std=c11", "-w", SCANNER, "-o", tmp], timeout=300, subject=str(SCANNER))
                os.replace(tmp, exe)
            except OSError as e:
                raise ToolError(f"cannot build the predicate scanner into {exe.parent}: {e.strerror or e}") from None
        _scanners[tc.bin_dir] = exe
        return exe


def read_scan(out: bytes) -> tuple[str, Counter[tuple[str, str]]]:
    """The scanner's output: the bitcode's producer (`LLVM22.1.8`; `-` when unknown) and the
    (opcode entity, predicate entity) counts from its `PREDICATE COUNT` lines."""
    head, *lines = out.decode().splitlines() or [""]
    if not head.startswith("producer "):
        raise ToolError(f"{SCANNER.name} printed no producer line: {head[:60]!r}")
    counts: Counter[tuple[str, str]] = Counter()
    for line in lines:
        number, count = (int(x) for x in line.split())
        if number not in _NUMBERS:
            raise ToolError(f"unknown compare predicate number {number} in {SCANNER.name}'s output")
        counts[_NUMBERS[number]] += count
    return head.removeprefix("producer "), counts


def predicates_of(tc: Toolchain, file: Path, timeout: float, name: str) -> Counter[tuple[str, str]]:
    """Every compare of one IR file: bitcode through the scanner, text (`.ll`, a retargeted module at O0) as it is.

    Bitcode another LLVM wrote (the scanner names its producer) is read as this LLVM prints it
    instead: its reader may upgrade such bitcode into compares the bitstream does not hold (the
    compare constant expressions LLVM 19 removed become instructions), and `llvm-ir2vec` sees those.
    """
    r = Reader()
    if Path(file).suffix == ".ll":
        with open(file, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                r.feed(chunk)
        return r.finish()
    # An absolute path: Toolchain runs it as it runs LLVM's tools (time-out, one-line failures).
    producer, counts = read_scan(tc.run(str(scanner(tc)), [file], timeout=timeout, subject=name).stdout)
    if producer == f"LLVM{tc.version}":
        return counts
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
