"""The MIR a MIR dataset reads (three points of the code generator), and what is needed to compare with
`llvm-ir2vec --mode=mir`.

The farm reads MIR triplets itself (workers/mirtriplets.py): LLVM 22.1.x's MIR2Vec crashes
(MIRVocabulary::getRegisterOperandIndex) on a physical register that belongs to no register class,
such as X86's `$mxcsr`, `$fpcw`, `$fpsw` and `$ssp`, which every SSE instruction and every call
carries; tip of tree maps such a register to a shared fallback entity, and so does the farm's
reader, so no function is lost. What is left here serves the comparison with LLVM's tool on the
functions it can read: `sanitize` drops class-less operands from calls (the MIR parser does not
verify a call's implicit operands; SSE arithmetic must keep `$mxcsr`), `split_functions` gives
each machine function its own file. The lexing both readers share is here too: a MIR file's YAML documents, and
splitting or searching an instruction's text outside quotes and brackets.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

#: Physical registers that belong to no register class on the targets we build for (x86-64).
CLASSLESS_REGISTERS = ("mxcsr", "fpcw", "fpsw", "ssp")
#: The last pass before which MIR is fully allocated and call-frame pseudos are gone.
STOP_AFTER = "prologepilog"


@dataclass(frozen=True)
class Stage:
    """One point of the code generator whose MIR enters a MIR dataset: `llc` stops there."""

    name: str
    flags: tuple[str, ...]
    why: str


#: Where a MIR dataset's MIR comes from, in the order they are read. MIR2Vec embeds machine functions
#: wherever a pass asks (tip of tree's consumers run before and after allocation), so the vocabulary must
#: know the entities of each: one stage alone leaves whole sections untrained. `allocated` comes first:
#: LLVM 22.1.8 can parse it, so it gives the entity map (`llvm-ir2vec entities`).
STAGES = (
    Stage("allocated", (f"-stop-after={STOP_AFTER}",),
          "physical registers after allocation and the prologue/epilogue: what LLVM 22.1.8's tool reads"),
    Stage("isel", ("-stop-after=finalize-isel",),
          "target opcodes on virtual registers of a class, PHI, COPY, call-frame pseudos, frame indices: "
          "what the register allocator (and its eviction advisor) sees"),
    Stage("generic", ("-global-isel", "-global-isel-abort=2", "-stop-after=irtranslator"),
          "generic opcodes (G_*), intrinsic, predicate, shuffle-mask and constant operands: what GlobalISel's "
          "passes see (x86 selects with SelectionDAG by default, so no other stage has them)"),
)
#: What a generic-stage function that GlobalISel's IRTranslator gave up on is left out with: its body is cut
#: where translation failed, so its triplets would be silently partial (the other stages still read it whole).
UNTRANSLATED = "GlobalISel's IRTranslator could not translate it (x86 GlobalISel is incomplete)"

_CALL = re.compile(r"^\s*(?:[^=]*=\s*)?(?:CALL|TCRETURN|TAILJMP)\w*\b")
_CLASSLESS_OPERAND = re.compile(
    r",?\s*implicit(?:-def)?\s+(?:(?:dead|killed|undef|renamable)\s+)*\$(?:" + "|".join(CLASSLESS_REGISTERS) + r")\b"
)
_DOC_START = re.compile(r"(?m)^---(?= |$)")


def sanitize(mir: str) -> str:
    """Drop class-less implicit register operands from call instructions."""
    out = []
    for line in mir.splitlines(keepends=True):
        if _CALL.match(line):
            line = _CLASSLESS_OPERAND.sub("", line)
        out.append(line)
    return "".join(out)


def split_functions(mir: str) -> list[tuple[str, str]]:
    """(function name, MIR text of the IR module plus that one machine function) per function."""
    starts = [m.start() for m in _DOC_START.finditer(mir)]
    if len(starts) < 2:
        return []
    docs = [mir[a:b] for a, b in zip(starts, [*starts[1:], len(mir)], strict=True)]
    header, functions = docs[0], docs[1:]
    result = []
    for doc in functions:
        m = re.search(r"(?m)^name:\s*'?([^'\s]+)'?", doc)
        result.append((m.group(1) if m else f"#{len(result)}", header + doc))
    return result


def documents(mir: str) -> Iterator[str]:
    """The YAML documents of a MIR file, each from after its `---` (the first may be the IR module, `--- |`)."""
    starts = [m.end() for m in re.finditer(r"(?m)^---(?= |$)", mir)]
    for a, b in zip(starts, [*starts[1:], len(mir)], strict=True):
        yield mir[a:b]


def _outside(s: str) -> Iterator[int]:
    """The indices of `s`'s characters outside quotes (with their backslash escapes), parentheses, braces and angle
    brackets, and not themselves one of those: where an instruction's text may be split or searched."""
    depth, quoted, i = 0, False, 0
    while i < len(s):
        c = s[i]
        if quoted:
            if c == "\\":
                i += 2
                continue
            quoted = c != '"'
        elif c == '"':
            quoted = True
        elif c in "({<":
            depth += 1
        elif c in ")}>":
            depth -= 1
        elif depth == 0:
            yield i
        i += 1


def split_top(s: str, sep: str = ",") -> list[str]:
    """`s` split at `sep` outside quotes, parentheses, braces and angle brackets."""
    if not any(c in s for c in "\"({<"):
        return s.split(sep)
    cuts = [i for i in _outside(s) if s[i] == sep]
    return [s[a + 1:b] for a, b in zip([-1, *cuts], [*cuts, len(s)], strict=True)]


def strip_comments(line: str) -> str:
    """The line without `/* ... */` and `; ...` comments (outside quoted strings)."""
    if "/*" in line:
        line = re.sub(r"/\*.*?\*/", "", line)
    if ";" in line:
        quoted = False
        for i, c in enumerate(line):
            if c == '"':
                quoted = not quoted
            elif c == ";" and not quoted:
                return line[:i]
    return line


def top_index(s: str, sub: str) -> int:
    """Index of the first `sub` outside quotes and brackets, or -1."""
    if '"' not in s and "(" not in s and "<" not in s:
        return s.find(sub)
    return next((i for i in _outside(s) if s.startswith(sub, i)), -1)
