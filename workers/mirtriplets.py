"""The farm's own MIR triplet extractor: what `llvm-ir2vec triplets --mode=mir` prints, read off MIR text.

LLVM 22.1.8's tool crashes on every machine function with an operand in no register class (X86's
`$mxcsr` on SSE arithmetic, `$ssp` on calls, ...) and cannot read MIR before register allocation.
This reader gives, byte for byte, what 22.1.8 prints wherever it does not crash (same entity ids,
same relations, same order), and otherwise what LLVM at tip of tree prints
(`MIRVocabulary::getEntityIDForRegister`):

* an instruction per line of a function's `body:`, debug instructions (`DBG_*`) skipped, the
  instructions inside a bundle (`BUNDLE ... {` to `}`) skipped as MachineBasicBlock's iterator does;
* `Next` (relation 0) from each instruction's opcode to the next one's in the function, then
  `Arg<i>` (relation 1 + i) from the opcode to each operand in order, implicit operands included;
* opcode: the base name of `MIRVocabulary::extractBaseOpcodeName` (the first run of letters and
  underscores, trailing underscores trimmed), its id from the entity list;
* physical register: `PhyReg_<minimal class>` (the table workers/data/x86_mir_registers.tsv, dumped
  from LLVM by workers/mirregs.cpp); virtual register: `VirtReg_<class>` from the `registers:` list
  or an operand's `:class` annotation; `$noreg`, a register in no class (`$mxcsr`) and a virtual
  register with no class (a generic one, or one with a register bank) share the first virtual
  register entity, tip of tree's fallback;
* any other operand: its MachineOperand type (`Immediate`, `MBB`, `GlobalAddress`, ...).

A function this reader cannot understand (an unknown opcode, register or operand) is left out and
named with the reason; the rest of the module is kept.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from farm.errors import ToolError
from farm.toolchain import Toolchain
from workers.mir import UNTRANSLATED, documents, split_top, strip_comments, top_index

#: Bump when the lines this module makes for the same MIR change: it enters every triplet-cache key.
VERSION = 2

REGISTER_TABLE = Path(__file__).parent / "data" / "x86_mir_registers.tsv"
NEXT_RELATION = 0
ARG_RELATION = 1

_DEBUG_OPCODES = frozenset({"DBG_VALUE", "DBG_VALUE_LIST", "DBG_INSTR_REF", "DBG_PHI", "DBG_LABEL"})
_INSTR_FLAGS = frozenset({
    "frame-setup", "frame-destroy", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc", "nuw", "nsw",
    "exact", "nofpexcept", "nomerge", "unpredictable", "noconvergent", "nneg", "disjoint", "nusw", "samesign",
    "inbounds"})
_REG_FLAGS = frozenset({"implicit", "implicit-def", "def", "dead", "killed", "undef", "internal", "early-clobber",
                        "debug-use", "renamable"})
#: Items after the operands that are not operands (MIParser reads them in this order, then `::` memory operands).
_TRAILERS = ("pre-instr-symbol", "post-instr-symbol", "heap-alloc-marker", "pcsections", "mmra", "cfi-type",
             "debug-instr-number", "debug-location")
_BASE_NAME = re.compile(r"[a-zA-Z_]+")
_OPCODE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BLOCK = re.compile(r"bb\.\d+")
_VREG = re.compile(r"%([0-9]+|[A-Za-z_][\w.]*?)(?:\.[A-Za-z_]\w*)?(?::([A-Za-z_][\w]*))?(?:\(.*\))?$")
_PREFIXED = (  # operand text prefix -> MachineOperand type (vocabulary name)
    ("%bb.", "MBB"), ("%stack.", "FrameIndex"), ("%fixed-stack.", "FrameIndex"), ("%const.", "ConstantPoolIndex"),
    ("%jump-table.", "JumpTableIndex"), ("%subreg.", "Immediate"), ("target-index(", "TargetIndex"),
    ("&", "ExternalSymbol"), ("@", "GlobalAddress"), ("blockaddress(", "BlockAddress"), ("regmask(", "RegisterMask"),
    ("liveout(", "RegisterLiveOut"), ("!", "Metadata"), ("<mcsymbol", "MCSymbol"), ("intrinsic(", "IntrinsicID"),
    ("intpred(", "Predicate"), ("floatpred(", "Predicate"), ("shufflemask(", "ShuffleMask"), ("lanemask(", "LaneMask"),
)
_FP_TYPES = ("half ", "bfloat ", "float ", "double ", "x86_fp80 ", "fp128 ", "ppc_fp128 ")
_CIMM = re.compile(r"i\d+ (?:-?\d+|true|false)$")
_IMM = re.compile(r"-?\d+$")


class MIRError(ValueError):
    """A machine function this reader does not understand."""


@functools.cache
def _register_table(path: Path = REGISTER_TABLE) -> tuple[dict[str, str | None], frozenset[str]]:
    """(physical register name -> minimal class name or None, register mask names)."""
    regs: dict[str, str | None] = {}
    masks = set()
    for line in path.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        f = line.split("\t")
        if f[0] == "reg":
            regs[f[1]] = None if f[2] == "-" else f[2]
        elif f[0] == "regmask":
            masks.add(f[1])
    return regs, frozenset(masks)


@dataclass
class Vocabulary:
    """Entity ids as `llvm-ir2vec entities --mode=mir` lists them, and how operands map onto them."""

    opcodes: dict[str, int]  # base opcode name -> id
    common: dict[str, int]  # MachineOperand type name -> id
    phys: dict[str, int]  # physical register name -> id (class-less ones: the fallback)
    virt: dict[str, int]  # lower-case register class name -> VirtReg_ id
    fallback: int  # tip of tree's entity for $noreg, stack slots and registers in no class
    masks: frozenset[str] = frozenset()
    size: int = 0
    #: every entity's name in id order, as listed (`PhyReg_`/`VirtReg_` prefixes kept): farm/embeddings.py
    #: `placement` turns them into vocabulary keys
    names: tuple[str, ...] = ()

    @classmethod
    def from_entities(cls, text: str, table: Path = REGISTER_TABLE) -> Vocabulary:
        lines = text.splitlines()
        try:
            count = int(lines[0])
            names = [ln.rsplit("\t", 1)[0] for ln in lines[1:] if ln]
            ids = [int(ln.rsplit("\t", 1)[1]) for ln in lines[1:] if ln]
        except (IndexError, ValueError):
            raise ToolError(f"llvm-ir2vec entities --mode=mir printed an unexpected list: {text[:60]!r}") from None
        if count != len(names) or ids != list(range(count)):
            raise ToolError("llvm-ir2vec entities --mode=mir: the list is not numbered 0..N-1")
        try:
            common_at = names.index("Immediate")
            phys_at = next(i for i, n in enumerate(names) if n.startswith("PhyReg_"))
            virt_at = next(i for i, n in enumerate(names) if n.startswith("VirtReg_"))
        except (ValueError, StopIteration):
            raise ToolError("llvm-ir2vec entities --mode=mir: no operand or register sections") from None
        classes = [n[len("PhyReg_"):] for n in names[phys_at:virt_at]]
        if [n[len("VirtReg_"):] for n in names[virt_at:]] != classes:
            raise ToolError("llvm-ir2vec entities --mode=mir: physical and virtual register classes differ")
        regs, masks = _register_table(table)
        known = set(classes)
        stray = sorted({c for c in regs.values() if c is not None} - known)
        if stray:
            raise ToolError(f"{table.name} names register classes this LLVM does not have ({stray[0]}, ...): "
                            f"regenerate it with workers/mirregs.cpp")
        phys_id = {c: phys_at + i for i, c in enumerate(classes)}
        return cls(opcodes={n: i for i, n in enumerate(names[:common_at])},
                   common={n: common_at + i for i, n in enumerate(names[common_at:phys_at])},
                   phys={r: (virt_at if c is None else phys_id[c]) for r, c in regs.items()},
                   virt={c.lower(): virt_at + i for i, c in enumerate(classes)},
                   fallback=virt_at, masks=masks, size=count, names=tuple(names))

    def opcode(self, name: str) -> int:
        m = _BASE_NAME.search(name)
        base = m.group(0).rstrip("_") if m else name
        try:
            return self.opcodes[base or name]
        except KeyError:
            raise MIRError(f"unknown opcode {name}") from None


@dataclass
class FunctionTriplets:
    name: str
    triplets: list[tuple[int, int, int]] = field(default_factory=list)
    max_relation: int = NEXT_RELATION


@dataclass
class ModuleResult:
    """Every readable function's triplets in order, and the functions left out with why."""

    functions: list[FunctionTriplets] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def max_relation(self) -> int:
        return max((f.max_relation for f in self.functions), default=NEXT_RELATION)

    def text(self) -> bytes:
        """What `llvm-ir2vec triplets --mode=mir` prints for these functions."""
        out = [b"MAX_RELATION=%d\n" % self.max_relation]
        out.extend(b"%d\t%d\t%d\n" % t for f in self.functions for t in f.triplets)
        return b"".join(out)

    def lines(self) -> tuple[set[bytes], int]:
        """(unique triplet lines, raw count), as workers/modulerun.Output keeps them."""
        unique: set[bytes] = set()
        raw = 0
        for f in self.functions:
            raw += len(f.triplets)
            unique.update(b"%d\t%d\t%d" % t for t in f.triplets)
        return unique, raw


class _Function:
    """One machine function document: its name, virtual register classes and body lines."""

    def __init__(self, doc: str) -> None:
        self.name = "?"
        self.failed_isel = False  # `failedISel: true`: instruction selection gave up midway, the body is cut
        self.classes: dict[str, str | None] = {}
        self.body: list[str] = []
        lines = doc.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.startswith("name:"):
                self.name = line[5:].strip().strip("'\"")
            elif line.startswith("failedISel:"):
                self.failed_isel = line[11:].strip() == "true"
            elif line.startswith("registers:"):
                i += 1
                while i < len(lines) and (lines[i].startswith(" ") or not lines[i]):
                    m = re.search(r"id:\s*([^,\s}]+).*?class:\s*([^,\s}]+)", lines[i])
                    if m:
                        self.classes[m.group(1).strip("'\"%")] = m.group(2).strip("'\"")
                    i += 1
                continue
            elif line.startswith("body:"):
                self.body = [ln for ln in lines[i + 1:] if ln.startswith(" ") or not ln.strip()]
                break
            i += 1


class Extractor:
    """MIR text -> triplets with one vocabulary (one per LLVM and target); operand entities are memoized."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self._memo: dict[str, int | None] = {}  # operand text -> entity (None: a virtual register, per function)

    def module(self, mir: str) -> ModuleResult:
        result = ModuleResult()
        for doc in documents(mir):
            if doc.lstrip(" ").startswith("|") or "\nname:" not in doc:
                continue  # the IR module, or a document that is no machine function
            fn = _Function(doc)
            if fn.failed_isel:
                result.failed.append((fn.name, UNTRANSLATED))
                continue
            try:
                result.functions.append(self.function(fn))
            except MIRError as err:
                result.failed.append((fn.name, str(err)))
        return result

    def function(self, fn: _Function) -> FunctionTriplets:
        out = FunctionTriplets(fn.name)
        vclass = dict(fn.classes)
        instrs = []
        bundle = False
        for number, raw in enumerate(fn.body, 1):
            line = strip_comments(raw).strip()
            if not line:
                continue
            if bundle:
                if line.startswith("}"):
                    bundle = False
                continue
            if (line.endswith(":") and _BLOCK.match(line)) or line.startswith(("successors:", "liveins:")):
                continue
            if line.endswith("{"):
                bundle = True
                line = line[:-1].rstrip()
            try:
                opcode, operands = self._parse(line, vclass)
                if opcode not in _DEBUG_OPCODES:
                    instrs.append((self.vocab.opcode(opcode), operands))
            except MIRError as err:
                raise MIRError(f"body line {number}: {err}: {line[:80]}") from None
        v = self.vocab
        triplets = out.triplets
        prev = None
        most = 0
        for oid, operands in instrs:
            if prev is not None:
                triplets.append((prev, oid, NEXT_RELATION))
            for i, operand in enumerate(operands):
                if isinstance(operand, str):  # a virtual register: its class is known once the function is read
                    c = vclass.get(operand)
                    entity = v.virt.get(c, v.fallback) if c else v.fallback
                else:
                    entity = operand
                triplets.append((oid, entity, ARG_RELATION + i))
            most = max(most, len(operands))
            prev = oid
        out.max_relation = max(NEXT_RELATION, ARG_RELATION + most - 1)
        return out

    def _parse(self, line: str, vclass: dict[str, str | None]) -> tuple[str, list[int | str]]:
        """(opcode, operands: entity ids, or a virtual register's name) of one instruction line."""
        if "::" in line:
            cut = top_index(line, "::")  # memory operands start at the first top-level `::`
            if cut >= 0:
                line = line[:cut]
        defs: list[str] = []
        eq = top_index(line, "=")
        if eq >= 0:
            defs = split_top(line[:eq])
            line = line[eq + 1:]
        words = line.split(None, 1)
        while words and words[0] in _INSTR_FLAGS:
            words = words[1].split(None, 1) if len(words) > 1 else []
        if not words or not _OPCODE.fullmatch(words[0]):
            raise MIRError("no opcode")
        opcode = words[0]
        rest = words[1] if len(words) > 1 else ""
        if opcode in _DEBUG_OPCODES:
            return opcode, []  # skipped as MachineInstr::isDebugInstr: their operands are never read
        if opcode == "CFI_INSTRUCTION":
            uses = ["cfi-index"] if rest else []
        else:
            uses = split_top(rest) if rest.strip() else []
        operands: list[int | str] = []
        for text in (*defs, *uses):
            text = text.strip()
            if text.startswith(_TRAILERS):
                break
            operands.append(self._operand(text, vclass))
        if opcode.startswith("INLINEASM"):  # MachineInstr::addOperand keeps an inline asm's operands as written
            return opcode, operands
        return opcode, _explicit_first(operands, defs, uses)

    def _operand(self, text: str, vclass: dict[str, str | None]) -> int | str:
        if text == "cfi-index":
            return self.vocab.common["CFIIndex"]
        hit = self._memo.get(text)
        if hit is not None:
            return hit
        words = text.split()
        flags = 0
        while flags < len(words) - 1 and words[flags] in _REG_FLAGS:
            flags += 1
        body = " ".join(words[flags:])
        if body.startswith("target-flags("):
            body = body[body.index(")") + 1:].strip()
        v = self.vocab
        if body.startswith("$"):
            name = re.sub(r"\(.*\)$", "", body[1:]).lower()
            if name == "noreg":
                entity = v.fallback
            elif name in v.phys:
                entity = v.phys[name]
            else:
                raise MIRError(f"unknown physical register ${name}")
        elif body == "_":
            entity = v.fallback
        elif body.startswith("%") and not body.startswith(tuple(p for p, _ in _PREFIXED if p.startswith("%"))):
            m = _VREG.match(body)
            if not m:
                raise MIRError(f"unreadable register operand {body!r}")
            reg, cls = m.group(1), m.group(2)
            if cls:
                known = vclass.get(reg)
                if known is None or known not in v.virt:
                    vclass[reg] = cls.lower()
            return reg  # not memoized: the class is the function's
        else:
            entity = self._other(body)
        self._memo[text] = entity
        return entity

    def _other(self, body: str) -> int:
        common = self.vocab.common
        for prefix, kind in _PREFIXED:
            if body.startswith(prefix):
                return common[kind]
        if _IMM.match(body):
            return common["Immediate"]
        if _CIMM.match(body):
            return common["CImmediate"]
        if body.startswith(_FP_TYPES):
            return common["FPImmediate"]
        if body in self.vocab.masks:
            return common["RegisterMask"]
        raise MIRError(f"unknown operand {body!r}")


def _explicit_first(operands: list[int | str], defs: list[str], uses: list[str]) -> list[int | str]:
    """MachineInstr::addOperand puts an explicit operand before the implicit ones already there: MIR text
    always lists explicit operands first, so only hand-written MIR is reordered."""
    texts = [t.strip() for t in (*defs, *uses)][:len(operands)]
    implicit = [t.split(None, 1)[0] in ("implicit", "implicit-def") if t else False for t in texts]
    if not any(implicit) or implicit == sorted(implicit):
        return operands
    return [o for o, imp in zip(operands, implicit, strict=True) if not imp] + \
           [o for o, imp in zip(operands, implicit, strict=True) if imp]


_vocab_cache: dict[str, Vocabulary] = {}


def vocabulary(tc: Toolchain, mir_file: Path, timeout: float = 300, subject: str = "") -> Vocabulary:
    """The MIR vocabulary of the toolchain's LLVM (`llvm-ir2vec entities --mode=mir` once per process)."""
    key = str(tc.path("llvm-ir2vec"))
    if key not in _vocab_cache:
        text = tc.run("llvm-ir2vec", ["entities", "--mode=mir", mir_file], timeout=timeout,
                      subject=subject or str(mir_file)).stdout.decode()
        _vocab_cache[key] = Vocabulary.from_entities(text)
    return _vocab_cache[key]


def extract(vocab: Vocabulary, mir: str) -> ModuleResult:
    return Extractor(vocab).module(mir)
