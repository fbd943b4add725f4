"""Deterministic C sources under register pressure, so that the greedy allocator asks its eviction advisor.

The files in tests/data/csrc and tests/policyhost/callgraph.py keep few values live at once: LLVM 22.1.8 asks for
no eviction in most of them. Here every function keeps eight to fifteen integers and half as many doubles live
across calls inside a loop; each module gives the advisor some hundreds of decisions in a fraction of a second.
"""

from __future__ import annotations

import random
from pathlib import Path


def _function(rng: random.Random, f: int, j: int) -> str:
    n = rng.randrange(8, 16)
    ints = ", ".join(f"v{i} = p[{i}] * {rng.randrange(2, 9)}" for i in range(n))
    doubles = ", ".join(f"d{i} = q[{i}] + {rng.randrange(1, 9)}.5" for i in range(n // 2))
    body = [f"  long {ints};", f"  double {doubles};", "  long acc = 0;", "  for (int k = 0; k < m; k++) {"]
    for i in range(n):
        body.append(f"    v{i} = v{i} * {rng.randrange(3, 17)} + ext{f}(v{(i + 3) % n} ^ k);")
        if i < n // 2:
            body.append(f"    d{i} = d{i} * 1.5 + extd{f}(d{(i + 1) % (n // 2)});")
    body.append("    acc += " + " ^ ".join(f"v{i}" for i in range(n)) + ";")
    body.append("  }")
    body.append("  return acc + (long)(" + " + ".join(f"d{i}" for i in range(n // 2)) + ");")
    return f"long f{f}_{j}(long *p, double *q, int m) {{\n" + "\n".join(body) + "\n}"


def write_sources(out: Path, files: int = 2, per_file: int = 3, seed: int = 1) -> Path:
    """`files` C files of `per_file` such functions under `out`; returns `out`."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        parts = [f"long ext{f}(long);", f"double extd{f}(double);"]
        parts += [_function(rng, f, j) for j in range(per_file)]
        (out / f"m{f}.c").write_text("\n\n".join(parts) + "\n")
    return out
