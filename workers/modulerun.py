"""One module through LLVM's tools: `opt` at each level (and march), `llc` for MIR, then `llvm-ir2vec triplets`
(IR) or the farm's own MIR reader (workers/mirtriplets.py: LLVM 22.1.8's crashes on SSE code).

Split from workers/triplets.py (which plans, runs, merges and writes): everything here shapes a
module's triplet lines, so its code is part of every triplet-cache key (`triplets.Plan._options`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from farm.errors import ToolError
from farm.toolchain import Toolchain
from workers import march as march_mod
from workers import mir as mir_mod
from workers import mirtriplets
from workers import predicates as pred_mod

_TRIPLET = re.compile(rb"\d+\t\d+\t\d+")
_TRIPLE = re.compile(r'^\s*target triple = "([^"]*)"', re.M)


class Output:
    """One `llvm-ir2vec triplets` run, deduplicated as its output streams in (a sink for Toolchain.stream).

    Only unique lines and a partial last line are kept, never the raw output.
    """

    def __init__(self) -> None:
        self.lines: set[bytes] = set()
        self.raw = 0
        self.max_relation: int | None = None
        self._tail = b""

    def feed(self, chunk: bytes) -> None:
        lines = (self._tail + chunk).split(b"\n")
        self._tail = lines.pop()
        if self.max_relation is None and lines:
            first = lines[0]
            if not first.startswith(b"MAX_RELATION="):
                raise ToolError(f"llvm-ir2vec output does not start with MAX_RELATION: {first[:60]!r}")
            try:
                self.max_relation = int(first.split(b"=", 1)[1])
            except ValueError:
                raise ToolError(f"llvm-ir2vec printed a malformed first line: {first[:60]!r}") from None
            del lines[0]
        self.raw += len(lines)
        self.lines.update(lines)

    def finish(self) -> Output:
        """Check the run's output once it is complete: a header, then only `head<TAB>tail<TAB>relation` lines."""
        if self._tail:
            self.feed(b"\n")
        if self.max_relation is None:
            raise ToolError("llvm-ir2vec printed no MAX_RELATION line")
        self.lines.discard(b"")
        bad = next((ln for ln in self.lines if not _TRIPLET.fullmatch(ln)), None)
        if bad is not None:
            raise ToolError(f"llvm-ir2vec printed a line that is not a triplet: {bad[:60]!r}")
        return self


@dataclass
class ModuleTriplets:
    """Unique triplet lines of one module (`head\\ttail\\trelation` as bytes)."""

    lines: set[bytes] = field(default_factory=set)
    raw: int = 0
    max_relation: int = -1
    mir_file: Path | None = None  # a MIR file LLVM parsed (for the MIR entity map)
    lost_functions: list[str] = field(default_factory=list)
    predicates: set[bytes] = field(default_factory=set)  # `ICmp\tICMP_slt` pairs (workers/predicates.py)
    compares: int = 0  # compares read, before deduplication

    def add_predicates(self, counts: dict[tuple[str, str], int]) -> None:
        self.predicates |= {pred_mod.pair_line(*pair) for pair in counts}
        self.compares += sum(counts.values())

    def add(self, out: Output) -> None:
        """Merge one finished run (a run that failed midway is never merged)."""
        self.max_relation = max(self.max_relation, out.max_relation)  # set by Output.finish
        self.raw += out.raw
        self.lines |= out.lines


def triplets_of(tc: Toolchain, file: Path, timeout: float, name: str, mode: str = "ir") -> Output:
    """`llvm-ir2vec triplets` of one IR or MIR file, streamed and deduplicated."""
    out = Output()
    args = ["triplets", file] if mode == "ir" else ["triplets", f"--mode={mode}", file]
    tc.stream("llvm-ir2vec", args, out.feed, timeout=timeout, subject=name)
    return out.finish()


def _optimize(tc: Toolchain, bc: Path, level: str, work: Path, timeout: float, name: str,
              march: str | None = None) -> Path:
    if level == "O0":
        return bc
    out = work / f"opt.{march or 'asis'}.{level}.bc"
    tc.run("opt", [*march_mod.cpu_flags(march), f"-passes=default<{level}>", bc, "-o", out], timeout=timeout,
           subject=name)
    return out


def _variants(tc: Toolchain, bc: Path, marches: Sequence[str], work: Path, timeout: float,
              name: str) -> list[tuple[str | None, Path]]:
    """(march, module) to run: the module as compiled, or retargeted to each march level (x86-64 code only)."""
    out: list[tuple[str | None, Path]] = []
    for march in marches:
        src = march_mod.retarget(tc, bc, march, work, timeout, name)
        if src is None:
            return [(None, bc)]
        out.append((march, src))
    return out or [(None, bc)]


def ir_module(tc: Toolchain, bc: Path, levels: Sequence[str], work: Path, timeout: float, name: str,
              predicates: bool = False, marches: Sequence[str] = ()) -> ModuleTriplets:
    """LLVM's triplets of the module at each level (and march), plus, with `predicates`, its compares."""
    result = ModuleTriplets()
    for march, src in _variants(tc, bc, marches, work, timeout, name):
        for level in levels:
            ir = _optimize(tc, src, level, work, timeout, name, march)
            result.add(triplets_of(tc, ir, timeout, name))
            if predicates:
                result.add_predicates(pred_mod.predicates_of(tc, ir, timeout, name))
    return result


def mir_module(tc: Toolchain, bc: Path, levels: Sequence[str], work: Path, timeout: float, name: str,
               predicates: bool = False, marches: Sequence[str] = ()) -> ModuleTriplets:
    result = ModuleTriplets()
    for march, src in _variants(tc, bc, marches, work, timeout, name):
        _mir_level_runs(tc, src, levels, work, timeout, name, march, result)
    return result


def _mir_level_runs(tc: Toolchain, bc: Path, levels: Sequence[str], work: Path, timeout: float, name: str,
                    march: str | None, result: ModuleTriplets) -> None:
    for level in levels:
        ir = _optimize(tc, bc, level, work, timeout, name, march)
        for stage in mir_mod.STAGES:
            raw = work / f"{march or 'asis'}.{level}.{stage.name}.mir"
            try:
                tc.run("llc", ["-O2", *march_mod.cpu_flags(march), *stage.flags, ir, "-o", raw], timeout=timeout,
                       subject=name)
            except ToolError as err:
                if stage is mir_mod.STAGES[0]:
                    raise
                # the allocated MIR is read; a stage before it failing leaves out that stage only, and says so
                result.lost_functions.append(f"every function [{stage.name}] ({err})")
                continue
            text = raw.read_text()
            if stage is mir_mod.STAGES[0]:
                triple = _TRIPLE.search(text)
                if triple is None or not triple[1].startswith("x86_64"):
                    raise ToolError(f"{name} is code for {triple[1] if triple else 'an unknown target'}, not x86-64: "
                                    f"MIR datasets are x86-64 (MIR entities are target specific)")
                if "\nname:" not in text:  # before asking LLVM for the entity map, which fails on such a file
                    raise ToolError(f"no machine function of {name} could be read: the module defines none")
                result.mir_file = result.mir_file or raw  # LLVM parses it for the entity map
            found = mirtriplets.extract(mirtriplets.vocabulary(tc, result.mir_file or raw, timeout, name), text)
            if not found.functions and stage is mir_mod.STAGES[0]:
                why = f": {found.failed[0][0]}: {found.failed[0][1]}" if found.failed else ""
                raise ToolError(f"no machine function of {name} could be read{why}")
            out = Output()
            out.lines, out.raw = found.lines()
            out.max_relation = found.max_relation
            result.add(out)
            result.lost_functions.extend(f"{fn} [{stage.name}] ({why})" for fn, why in found.failed)
