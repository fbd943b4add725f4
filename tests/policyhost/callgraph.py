"""Deterministic C sources with many call sites of every kind, so the heuristic's decisions vary.

The files in tests/data/csrc give LLVM a handful of decisions; cloning the heuristic needs
hundreds: small and large callees, static ones called once or many times, external ones, calls
in loops. A seeded generator writes the same files every time.
"""

from __future__ import annotations

import random
from pathlib import Path


def _body(rng: random.Random, name: str, size: int) -> str:
    lines = [f"    int acc = x ^ {rng.randrange(1, 999)};"]
    for i in range(size):
        op = rng.choice(["acc += x * {k};", "acc ^= acc >> {k};", "if (acc & {k}) acc -= x; else acc += {k};",
                         "for (int i = 0; i < (x & {k}); i++) acc += i * {k};"])
        lines.append("    " + op.format(k=rng.randrange(1, 63) + i))
    return "\n".join(lines) + "\n    return acc;"


def write_sources(out: Path, files: int = 16, per_file: int = 14, seed: int = 1) -> Path:
    """`files` C files of `per_file` functions each under `out`; returns `out`."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        funcs = []
        for j in range(per_file):
            static = rng.random() < 0.6
            size = rng.choice([1, 2, 3, 6, 12, 25])
            name = f"f{f}_{j}"
            callees = [f"f{f}_{k}" for k in rng.sample(range(j), min(j, rng.randrange(0, 4)))] if j else []
            calls = "".join(f"\n    acc += {c}(acc + {n});" for n, c in enumerate(callees))
            if callees and rng.random() < 0.4:
                calls += f"\n    for (int k = 0; k < (x & 7); k++) acc += {callees[0]}(k);"
            body = _body(rng, name, size).replace("\n    return acc;", calls + "\n    return acc;")
            funcs.append(f"{'static ' if static else ''}int {name}(int x) {{\n{body}\n}}\n")
        entry = "\n".join(f"    s += f{f}_{j}(s + {j});" for j in range(per_file - 3, per_file))
        funcs.append(f"int entry{f}(int s) {{\n{entry}\n    return s;\n}}\n")
        (out / f"unit{f:02d}.c").write_text("\n".join(funcs))
    return out
