"""The regalloc eviction reward: LLVM's RegAllocScore of each function, computed from allocated MIR.

ml-compiler-opt rewards an eviction policy with `llvm/lib/CodeGen/RegAllocScore.cpp`: per function, the sum over
machine basic blocks of the block's frequency relative to the entry times copies x 0.2 + loads x 4.0 + stores x 1.0
+ instructions that both load and store x 5.0 (load + store) + cheap rematerialisations x 0.2 + expensive ones x 1.0
(the `-regalloc-*-weight` defaults). LLVM computes it in the `RegAllocScoring` pass, right after the
`virtregrewriter`, and only in a TFLite (development-mode) build, which Debian's clang is not; so the farm stops the
compile at the same point (`-stop-after=virtregrewriter`: spills, reloads and the copies left are visible) and
counts in Python what that pass counts, instruction by instruction, in its order: debug instructions, KILL and
inline asm are skipped; then COPY; then trivially rematerialisable (cheap if "as cheap as a move"); then
load-and-store, load, store.

What MIR text cannot say, and the approximation taken:
* mayLoad / mayStore are opcode properties (MCInstrDesc); here they are read from the instruction's memory operands
  (`:: (load ...)`, `(store ...)`). Every spill and reload has one; an instruction whose description says it may
  touch memory but carries none (rare after instruction selection) counts as neither.
* isTriviallyReMaterializable after allocation (every def is a physical register, so LLVM's generic check always
  refuses): what is left is X86InstrInfo::isReallyTriviallyReMaterializable's unconditional opcodes (constant
  materialisations: MOV32r0, MOVxxri, V_SET0, ...), IMPLICIT_DEF, loads whose address is `$rip`/absolute with no
  index from memory LLVM knows constant (constant pool, GOT, jump table, or `invariant dereferenceable`), and
  LEA32r/LEA64r of a frame index or an absolute address. "As cheap as a move" is the opcode list `_CHEAP`
  (TableGen's isAsCheapAsAMove for those opcodes); loads and LEAs count as expensive.
* Block frequencies are LLVM's own: `llc -run-pass=machine-block-freq -print-machine-bfi` on the same MIR, which
  recomputes MachineBlockFrequencyInfo from the successor probabilities the MIR records (from a PGO profile when
  the compile used `-fprofile-use`). The allocator's copy of that analysis was computed before allocation and
  updated incrementally by earlier passes, so a block's value may differ from it in the last digits.
  (`-mbb-profile-dump` is gone from LLVM 22.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from farm.toolchain import Toolchain

#: RegAllocScore.cpp's cl::opt defaults
COPY_WEIGHT, LOAD_WEIGHT, STORE_WEIGHT, CHEAP_REMAT_WEIGHT, EXPENSIVE_REMAT_WEIGHT = 0.2, 4.0, 1.0, 0.2, 1.0
#: where the farm stops a compile to score it: RegAllocScoring runs right after this pass
STOP_AFTER = "virtregrewriter"

_SKIPPED = frozenset({"DBG_VALUE", "DBG_VALUE_LIST", "DBG_INSTR_REF", "DBG_PHI", "DBG_LABEL", "KILL", "INLINEASM",
                      "INLINEASM_BR"})
_CHEAP = frozenset({
    "IMPLICIT_DEF", "MOV32r0", "MOV32r1", "MOV32r_1", "MOV32ImmSExti8", "MOV64ImmSExti8", "MOV32ri64", "MOV8ri",
    "MOV16ri", "MOV32ri", "MOV64ri", "MOV64ri32", "V_SET0", "V_SETALLONES", "AVX_SET0", "AVX1_SETALLONES",
    "AVX2_SETALLONES", "AVX512_128_SET0", "AVX512_256_SET0", "AVX512_512_SET0", "AVX512_512_SETALLONES", "FsFLD0SD",
    "FsFLD0SS", "FsFLD0SH", "FsFLD0F128", "AVX512_FsFLD0SD", "AVX512_FsFLD0SS", "AVX512_FsFLD0SH",
    "AVX512_FsFLD0F128", "KSET0D", "KSET0Q", "KSET0W", "KSET1D", "KSET1Q", "KSET1W", "MMX_SET0"})
_EXPENSIVE = frozenset({"LOAD_STACK_GUARD", "LD_Fp032", "LD_Fp064", "LD_Fp080", "LD_Fp132", "LD_Fp164", "LD_Fp180",
                        "PTILEZEROV"})
# the plain and broadcast vector/scalar loads X86 rematerialises from constant memory
_REMAT_LOAD = re.compile(r"^(?:V?MOV(?:8|16|32|64|SS|SD|SH|APS|UPS|APD|UPD|DQA|DQU)\w*rm\w*|V?P?BROADCAST\w+rm)$")
_CONSTANT_MEMORY = re.compile(r"from (?:constant-pool|got|jump-table)\b|\binvariant\b.*\bdereferenceable\b|"
                              r"\bdereferenceable\b.*\binvariant\b")
_BLOCK = re.compile(r"^  bb\.(\d+)")
_BFI_HEAD = re.compile(r"^block-frequency-info: (.+)$")
_BFI_ROW = re.compile(r"^ - BB(\d+)(?:\[[^\]]*\])?: float = [^,]+, int = (\d+)")


@dataclass
class Score:
    """One function's frequency-weighted counts and the score they make."""

    copies: float = 0.0
    loads: float = 0.0
    stores: float = 0.0
    load_stores: float = 0.0
    cheap_remats: float = 0.0
    expensive_remats: float = 0.0
    #: instructions counted per kind, unweighted (what a reader checks against the MIR)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return (COPY_WEIGHT * self.copies + LOAD_WEIGHT * self.loads + STORE_WEIGHT * self.stores
                + (LOAD_WEIGHT + STORE_WEIGHT) * self.load_stores + CHEAP_REMAT_WEIGHT * self.cheap_remats
                + EXPENSIVE_REMAT_WEIGHT * self.expensive_remats)

    def add(self, kind: str, freq: float) -> None:
        setattr(self, kind, getattr(self, kind) + freq)
        self.counts[kind] = self.counts.get(kind, 0) + 1


def classify(line: str) -> str | None:
    """The RegAllocScore kind of one MIR instruction line (a `Score` field name), None for what it does not count."""
    body, _, memops = line.strip().partition(" :: ")
    rhs = body.split(" = ", 1)[1] if " = " in body else body
    words = rhs.replace(",", " ").split()
    at = next((i for i, w in enumerate(words) if w[:1].isupper()), None)
    if at is None:
        return None
    opcode, operands = words[at], words[at + 1:]
    if opcode in _SKIPPED:
        return None
    if opcode == "COPY":
        return "copies"
    remat = _remat(opcode, operands, memops)
    if remat is not None:
        return remat
    loads = stores = False
    for op in re.split(r"\),\s*\(", memops):
        head = op.lstrip("(").split("(", 1)[0].split()
        loads, stores = loads or "load" in head, stores or "store" in head
    if loads and stores:
        return "load_stores"
    return "loads" if loads else "stores" if stores else None


def _remat(opcode: str, operands: list[str], memops: str) -> str | None:
    if opcode in _CHEAP:
        return "cheap_remats"
    if opcode in _EXPENSIVE:
        return "expensive_remats"
    if len(operands) < 4:
        return None
    base, index, disp = operands[0], operands[2], operands[3]
    if _REMAT_LOAD.match(opcode) and index == "$noreg" and base in ("$rip", "$noreg") and memops \
            and "store" not in memops and "volatile" not in memops and _CONSTANT_MEMORY.search(memops):
        return "expensive_remats"
    if opcode in ("LEA32r", "LEA64r") and index == "$noreg" and not disp.startswith("$") \
            and (base == "$noreg" or not base.startswith("$")):
        return "expensive_remats"
    return None


def parse_blocks(mir: str) -> dict[str, dict[int, list[str]]]:
    """Function name -> block number -> its instruction lines, from a MIR file's text."""
    functions: dict[str, dict[int, list[str]]] = {}
    blocks: dict[int, list[str]] | None = None
    current: list[str] | None = None
    in_body = False
    for line in mir.splitlines():
        if line.startswith("name:"):
            blocks = functions.setdefault(line.split(":", 1)[1].strip().strip("'\""), {})
            in_body, current = False, None
        elif line.startswith("body:"):
            in_body = True
        elif in_body and blocks is not None:
            if m := _BLOCK.match(line):
                current = blocks.setdefault(int(m.group(1)), [])
            elif current is not None and line.startswith("    ") and line.strip() and not line.lstrip().startswith(
                    ("successors:", "liveins:", ";", "}", "{")):
                current.append(line.strip())
            elif line and not line.startswith(" "):
                in_body = False
    return functions


def parse_frequencies(text: str) -> dict[str, dict[int, float]]:
    """`-print-machine-bfi` output -> function -> block number -> frequency relative to the entry block."""
    out: dict[str, dict[int, float]] = {}
    rows: dict[int, int] = {}
    for line in text.splitlines():
        if m := _BFI_HEAD.match(line):
            rows = {}
            out[m.group(1).strip()] = rows  # filled below, turned relative once complete
        elif (m := _BFI_ROW.match(line)) is not None:
            rows[int(m.group(1))] = int(m.group(2))
    rel: dict[str, dict[int, float]] = {}
    for name, freq in out.items():
        entry = freq.get(0) or 1
        rel[name] = {bb: f / entry for bb, f in freq.items()}
    return rel


def score(mir: str, frequencies: dict[str, dict[int, float]]) -> dict[str, Score]:
    """RegAllocScore of each function of an allocated MIR file, with LLVM's block frequencies."""
    result = {}
    for name, blocks in parse_blocks(mir).items():
        freqs, s = frequencies.get(name, {}), Score()
        for bb, lines in blocks.items():
            for line in lines:
                kind = classify(line)
                if kind is not None:
                    s.add(kind, freqs.get(bb, 1.0 if bb == 0 else 0.0))
        result[name] = s
    return result


def block_frequencies(toolchain: Toolchain, mir_file: Path, timeout: float = 300) -> dict[str, dict[int, float]]:
    """LLVM's machine block frequencies of every function of an allocated MIR file (see the module docstring)."""
    res = toolchain.run("llc", ["-run-pass=machine-block-freq", "-print-machine-bfi", mir_file, "-o", "/dev/null"],
                        timeout=timeout, subject=str(mir_file))
    return parse_frequencies(res.stderr.decode(errors="replace"))


def mir_args(source: str | Path, mir_file: str | Path) -> list[str]:
    """The clang arguments (after `-O2` and the user's flags) that stop at the scored point and write its MIR."""
    return ["-S", str(source), "-mllvm", f"-stop-after={STOP_AFTER}", "-o", str(mir_file)]


def function_scores(toolchain: Toolchain, mir_file: Path, timeout: float = 300) -> dict[str, float]:
    """Function name -> RegAllocScore, for an MIR file written with `mir_args` (with or without a policy)."""
    scores = score(Path(mir_file).read_text(), block_frequencies(toolchain, mir_file, timeout))
    return {name: s.score for name, s in scores.items()}
