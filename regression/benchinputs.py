"""The speed benchmarks' input files (regression/benchmarks.py), copied from the source tree or generated.

Each maker is called with the unpacked source tree and the directory to write into (`{inputs}` of the workloads);
the same tree gives the same bytes, so a run's lineage names its inputs by their sha256. The measured workloads' and
the PGO training runs' inputs are made apart: other text, other problems, other programs, never the same file.
"""

from __future__ import annotations

import bz2
import gzip
from collections.abc import Callable
from pathlib import Path

Maker = Callable[[Path, Path], None]


def source_text(root: Path, size: int, reverse: bool = False) -> bytes:
    """Real text to compress: the package's own C sources and headers, concatenated in order (`reverse`: the
    opposite order, other bytes for the PGO training runs)."""
    files = sorted((p for p in root.rglob("*") if p.suffix in (".c", ".h") and p.is_file()), reverse=reverse)
    chunks, total = [], 0
    while files and total < size:
        for p in files:
            data = p.read_bytes()
            chunks.append(data)
            total += len(data)
            if total >= size:
                break
    return b"".join(chunks)[:size]


def compression_inputs(size: int) -> Maker:
    def make(root: Path, inputs: Path) -> None:
        data = source_text(root, size)
        (inputs / "input.txt").write_bytes(data)
        (inputs / "input.txt.gz").write_bytes(gzip.compress(data, compresslevel=6, mtime=0))

    return make


def compression_training(size: int, suffix: str) -> Maker:
    """`train.txt` and itself compressed (`train.txt.gz` by gzip, `train.txt.bz2` by bzip2) for a decompression run."""

    def make(root: Path, inputs: Path) -> None:
        data = source_text(root, size, reverse=True)
        (inputs / "train.txt").write_bytes(data)
        packed = gzip.compress(data, compresslevel=9, mtime=0) if suffix == ".gz" else bz2.compress(data, 9)
        (inputs / f"train.txt{suffix}").write_bytes(packed)

    return make


def copied(*paths: str) -> Maker:
    """Inputs that ship in the source tree: each file copied under its own name."""

    def make(root: Path, inputs: Path) -> None:
        for rel in paths:
            (inputs / Path(rel).name).write_bytes((root / rel).read_bytes())

    return make


class _Lcg:
    """A 64-bit LCG: the same draws on every Python, so a generated input is the same file everywhere."""

    def __init__(self, seed: int) -> None:
        self.state = seed

    def __call__(self, n: int) -> int:
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) % 2**64
        return (self.state >> 33) % n


def _dimacs(variables: int, clauses: list[list[int]]) -> str:
    return f"p cnf {variables} {len(clauses)}\n" + "".join(" ".join(map(str, c)) + " 0\n" for c in clauses)


def pigeonhole(holes: int) -> str:
    """The pigeonhole principle for `holes` + 1 pigeons as CNF (DIMACS): unsatisfiable, and hard for resolution."""
    pigeons = holes + 1

    def var(p: int, h: int) -> int:
        return p * holes + h + 1

    clauses = [[var(p, h) for h in range(holes)] for p in range(pigeons)]
    clauses += [[-var(p, h), -var(q, h)] for h in range(holes) for p in range(pigeons) for q in range(p + 1, pigeons)]
    return _dimacs(pigeons * holes, clauses)


def planted_3sat(variables: int, clauses: int, seed: int) -> str:
    """Random 3-SAT (DIMACS) with a planted solution, so satisfiable: each clause kept only when the hidden
    assignment satisfies it."""
    draw = _Lcg(seed)
    hidden = [draw(2) for _ in range(variables)]
    kept: list[list[int]] = []
    while len(kept) < clauses:
        vs: set[int] = set()
        while len(vs) < 3:
            vs.add(draw(variables) + 1)
        clause = [v if draw(2) else -v for v in sorted(vs)]
        if any((lit > 0) == bool(hidden[abs(lit) - 1]) for lit in clause):
            kept.append(clause)
    return _dimacs(variables, kept)


def sat_inputs(root: Path, inputs: Path) -> None:
    (inputs / "pigeonhole-8.cnf").write_text(pigeonhole(8))
    (inputs / "planted-350.cnf").write_text(planted_3sat(350, 1491, 20261201))


def sat_training(root: Path, inputs: Path) -> None:
    """Smaller problems of both kinds, other seeds: a profile of the solver's UNSAT and SAT paths."""
    (inputs / "pigeonhole-6.cnf").write_text(pigeonhole(6))
    (inputs / "planted-200.cnf").write_text(planted_3sat(200, 852, 19871104))


# --- a C compiler's inputs (tcc) ---------------------------------------------------------------------------------

_C_HEADER = """\
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#define MIX(a, b) ((a) * 2654435761u ^ ((b) + ((a) >> 7)))
#define CLAMP(x, lo, hi) ((x) < (lo) ? (lo) : (x) > (hi) ? (hi) : (x))
#define SQ(x) ((x) * (x))

struct node { int key; long weight; double score; unsigned char tag[8]; struct node *next; };
typedef unsigned (*step_fn)(unsigned, const int *, int, struct node *);
"""
_OPS = ("+", "-", "*", "^", "&", "|")


def _c_expr(draw: _Lcg, depth: int, leaves: tuple[str, ...]) -> str:
    """An unsigned expression: binary operators, shifts, the header's macros and conditionals over `leaves`."""
    if depth == 0 or draw(4) == 0:
        return leaves[draw(len(leaves))] if draw(3) else f"{draw(100_000)}u"
    a, b = _c_expr(draw, depth - 1, leaves), _c_expr(draw, depth - 1, leaves)
    kind = draw(8)
    if kind == 0:
        return f"MIX({a}, {b})"
    if kind == 1:
        return f"CLAMP({a}, {draw(50)}u, {50 + draw(5000)}u)"
    if kind == 2:
        return f"SQ({a})"
    if kind == 3:
        return f"({a} > {b} ? {a} >> {1 + draw(7)} : {b} << {1 + draw(5)})"
    return f"({a} {_OPS[draw(len(_OPS))]} {b})"


def _c_statement(draw: _Lcg, index: int, depth: int, leaves: tuple[str, ...]) -> list[str]:
    """One statement of function `index` (lines, unindented): assignments, branches, a switch, loops over the array
    and the list, floating point, calls of earlier functions."""
    kind = draw(9 if depth else 5)
    if kind == 0:
        return [f"acc = {_c_expr(draw, 3, leaves)};"]
    if kind == 1:
        return [f"t += (long){_c_expr(draw, 2, leaves)} - {draw(1000)};"]
    if kind == 2:
        return [f"d = sqrt(fabs(d) + {draw(100)}.{draw(1000):03d}) * SQ(d - {draw(10)}.5) / (1.0 + fabs(d));"]
    if kind == 3:
        return [f"if (p) p->tag[{draw(8)}] = (unsigned char)({_c_expr(draw, 2, leaves)});"]
    if kind == 4 and index:
        return [f"acc ^= f{draw(index)}({_c_expr(draw, 2, leaves)}, v, n > 0 ? n - 1 : 0, p);"]
    if kind == 4 or depth == 0:
        return [f"acc += (unsigned)strlen(\"{'abcdefgh'[:1 + draw(8)]}\") * {1 + draw(9)}u;"]
    inner = [ln for _ in range(1 + draw(3)) for ln in _c_statement(draw, index, depth - 1, leaves)]
    body = ["    " + ln for ln in inner]
    if kind == 5:
        other = ["    " + ln for ln in _c_statement(draw, index, depth - 1, leaves)]
        return [f"if ({_c_expr(draw, 2, leaves)} > {draw(10_000)}u) {{", *body, "} else {", *other, "}"]
    if kind == 6:
        cases = []
        for c in range(2 + draw(5)):
            cases += [f"case {c}:", *("    " + ln for ln in _c_statement(draw, index, depth - 1, leaves)), "    break;"]
        return [f"switch (({_c_expr(draw, 2, leaves)}) & 7) {{", *cases, "default:", f"    t -= {draw(99)};", "}"]
    if kind == 7:
        return [f"for (j = 0; j < n && j < {4 + draw(60)}; j++) {{", f"    t += v[j] * table[(j + {draw(16)}) & 15];",
                *body, "}"]
    return [f"while (p && p->key > {draw(500)}) {{", "    d += p->score * p->weight;", *body, "    p = p->next;", "}"]


def c_program(functions: int, seed: int) -> str:
    """A C translation unit a compiler spends its time on as on real code: system headers, macros, a struct, and
    `functions` functions of nested expressions, branches, switches, loops, floating point, string calls and calls
    of earlier functions, then a table of them all (every function used). Drawn by a seeded LCG: the same text on
    every Python."""
    draw = _Lcg(seed)
    out = [_C_HEADER]
    for i in range(functions):
        leaves = ("acc", "x", "(unsigned)t", "(unsigned)n", f"(unsigned)table[{draw(16)}]", "(unsigned)d")
        values = ", ".join(str(draw(2000) - 1000) for _ in range(16))
        out.append(f"static unsigned f{i}(unsigned x, const int *v, int n, struct node *p)\n{{")
        out.append(f"    static const short table[16] = {{{values}}};")
        out.append(f"    unsigned acc = {draw(1 << 31)}u;\n    long t = {draw(1000)};\n    double d = {draw(1000)}.25;")
        out.append("    int i, j;")
        out.append(f"    for (i = 0; i < n; i++) {{\n        acc = MIX(acc, (unsigned)v[i]) + {draw(1000)}u;")
        out += ["        " + ln for _ in range(1 + draw(3)) for ln in _c_statement(draw, i, 2, leaves)]
        out.append("    }")
        out += ["    " + ln for _ in range(2 + draw(4)) for ln in _c_statement(draw, i, 2, leaves)]
        out.append("    return acc ^ (unsigned)t ^ (unsigned)(long)d;\n}\n")
    out.append("const step_fn steps[] = {" + ", ".join(f"f{i}" for i in range(functions)) + "};\n")
    return "\n".join(out)


#: tcc's own sources as one compile (tcc.c with ONE_SOURCE=1 #includes libtcc.c and through it every x86-64 part):
#: the top-level C files, headers and the .def it reads, with the recipe's config.h (written into the tree by
#: workers/debsrc.py). What the measured `self` workload compiles.
TCC_SELF = ("*.c", "*.h", "*.def")
#: tcc's own test programs (tests/tests2) the PGO training compiles: the larger ones, each of them C its Makefile
#: compiles and runs on x86-64 (initializers, bit-fields, _Generic, inline, cleanup, floating-point literals, dead
#: code, a grep), none of them an input of a measured compile.
TCC_TESTS2 = ("73_arm64.c", "46_grep.c", "90_struct-init.c", "95_bitfields.c", "75_array_in_struct_init.c",
              "32_led.c", "104_inline.c", "101_cleanup.c", "94_generic.c", "30_hanoi.c", "87_dead_code.c",
              "117_gcc_test.c", "61_integers.c", "89_nocode_wanted.c", "33_ternary_op.c",
              "70_floating_point_literals.c")


def tcc_inputs(root: Path, inputs: Path) -> None:
    """The measured compiles' inputs: tcc's own sources (`tcc-src/`) and a generated program (`program.c`)."""
    own = inputs / "tcc-src"
    own.mkdir(exist_ok=True)
    for pattern in TCC_SELF:
        for f in sorted(root.glob(pattern)):
            (own / f.name).write_bytes(f.read_bytes())
    (inputs / "program.c").write_text(c_program(250, 20261129))


def tcc_training(root: Path, inputs: Path) -> None:
    """The training compiles' inputs, none of them measured: tcc's test programs (TCC_TESTS2) and another generated
    program (`train.c`: another seed, a third of the size)."""
    copied(*(f"tests/tests2/{name}" for name in TCC_TESTS2))(root, inputs)
    (inputs / "train.c").write_text(c_program(120, 19980525))
