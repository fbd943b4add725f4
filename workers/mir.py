"""Post-register-allocation MIR for the MIR dataset, and what is needed to compare with `llvm-ir2vec --mode=mir`.

The farm reads MIR triplets itself (workers/mirtriplets.py): LLVM 22.1.x's MIR2Vec crashes
(MIRVocabulary::getRegisterOperandIndex) on a physical register that belongs to no register class,
such as X86's `$mxcsr`, `$fpcw`, `$fpsw` and `$ssp`, which every SSE instruction and every call
carries; tip of tree maps such a register to a shared fallback entity, and so does the farm's
reader, so no function is lost. What is left here serves the comparison with LLVM's tool on the
functions it can read: `sanitize` drops class-less operands from calls (the MIR parser does not
verify a call's implicit operands; SSE arithmetic must keep `$mxcsr`), `split_functions` gives
each machine function its own file.
"""

from __future__ import annotations

import re

#: Physical registers that belong to no register class on the targets we build for (x86-64).
CLASSLESS_REGISTERS = ("mxcsr", "fpcw", "fpsw", "ssp")
#: The last pass before which MIR is fully allocated and call-frame pseudos are gone.
STOP_AFTER = "prologepilog"

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
