"""`-march` levels for the triplets: one module seen as code for x86-64, x86-64-v2, -v3 and -v4.

Why: most of LLVM's 7,158 MIR entities are instructions that only exist on wider x86 levels
(SSE4, AVX, AVX2, AVX-512 opcodes and their register classes), and the IR vectorizers choose
vector code only when the target's costs allow it. A corpus compiled once for the baseline
x86-64 never shows them; compiling it four times would cost four corpora. Instead the module's
bitcode is retargeted at the triplets step: clang writes the CPU into every function
(`"target-cpu"="x86-64"`), and LLVM's code generator and cost models read the CPU from that
attribute before the command line, so the attribute is rewritten in the module's text (`llvm-dis`)
and the tools also get `-mcpu`, for functions that carry no attribute. Everything downstream
(`opt` at each level, `llc`) then optimizes and selects instructions for that CPU, as a compile
with `-march=LEVEL` would after the front end (only the front end's macros such as `__AVX2__`
differ). A module for another target than x86-64 is used as compiled, once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from farm.errors import InputError
from farm.toolchain import Toolchain

MARCHES = ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4")
_CPU = re.compile(rb'"target-cpu"="[^"]*"')
_TRIPLE = re.compile(rb'^target triple = "([^"]*)"', re.M)


def check_marches(marches: Sequence[str] | None) -> tuple[str, ...]:
    """The march levels to run (none: as compiled), or a one-line InputError."""
    out = tuple(marches or ())
    bad = [m for m in out if m not in MARCHES]
    if bad:
        raise InputError(f"unknown -march level {bad[0]!r}: use {', '.join(MARCHES)}")
    if len(set(out)) != len(out):
        raise InputError(f"-march level listed twice: {','.join(out)}")
    return out


def retarget_text(text: bytes, march: str) -> bytes | None:
    """The module's text with every function's CPU set to `march`, or None when it is not x86-64 code."""
    m = _TRIPLE.search(text)
    if m is None or not m[1].startswith(b"x86_64"):
        return None
    return _CPU.sub(b'"target-cpu"="' + march.encode() + b'"', text)


def retarget(tc: Toolchain, bc: Path, march: str, work: Path, timeout: float, name: str) -> Path | None:
    """`bc` as code for `march` (a `.ll` in `work`), or None when the module is not x86-64 code."""
    text = retarget_text(tc.run("llvm-dis", [bc, "-o", "-"], timeout=timeout, subject=name).stdout, march)
    if text is None:
        return None
    out = work / f"{march}.ll"
    out.write_bytes(text)
    return out


def cpu_flags(march: str | None) -> list[str]:
    return [f"-mcpu={march}"] if march else []
