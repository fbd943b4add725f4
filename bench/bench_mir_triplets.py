"""Benchmark: the farm's MIR triplet reader (workers/mirtriplets.py) against `llvm-ir2vec triplets --mode=mir`.

Input: post-allocation MIR as the farm makes it (`llc -O2 -stop-after=prologepilog`) of a few modules of a cached
Debian package (default lua5.4, whose floating point is SSE code) and of tests/data/csrc at -march=x86-64-v3.

* Speed, on the same inputs where LLVM 22.1.8 does not crash: every machine function as its own file (the IR module
  plus that function, class-less call operands dropped: `workers/mir.py`), those LLVM reads. Baseline: one
  `llvm-ir2vec triplets --mode=mir` per file; ours: the reader over the same files in this process. Alternated
  over N rounds; the ratio of the medians and the median of each round's ratio. The outputs are compared byte
  for byte on the way.
* Functions kept vs lost per module: the previous nightly path (the whole sanitized module through llvm-ir2vec,
  then, when it crashes, function by function: only those that do not crash are kept) against the reader, with
  the time each took.

    .venv/bin/python -m bench.bench_mir_triplets --package lua5.4 --modules 4 --repeat 3
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import ROOT, compare, corpora
from bench.harness.header import print_header
from farm.toolchain import Toolchain


def mir_of(tc: Toolchain, bc: Path, out: Path, extra: tuple[str, ...] = ()) -> Path:
    tc.run("llc", ["-O2", *extra, "-stop-after=prologepilog", bc, "-o", out])
    return out


def llvm_ok(tc: Toolchain, path: Path) -> bytes | None:
    r = subprocess.run([str(tc.path("llvm-ir2vec")), "triplets", "--mode=mir", str(path)], capture_output=True)
    return r.stdout if r.returncode == 0 else None


def main() -> int:
    from workers import corpus, mir, mirtriplets

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", default="lua5.4", help="Debian source package (cached under --work)")
    ap.add_argument("--modules", type=int, default=4, help="modules of the package, largest first")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path("var/bench"))
    args = ap.parse_args()

    tc = Toolchain.from_settings()
    print_header(tc)
    tmp = Path(tempfile.mkdtemp(prefix="bench-mir-"))
    c = corpus.load(corpora.debian_corpus(args.package, args.work, tc))
    chosen = sorted(c.modules, key=lambda m: -m.bitcode.stat().st_size)[:args.modules]
    modules: list[tuple[str, Path]] = [(m.name, mir_of(tc, m.bitcode, tmp / f"{i}.mir")) for i, m in enumerate(chosen)]
    for src in sorted((ROOT / "tests" / "data" / "csrc").glob("*.c")):
        ll = tmp / f"{src.stem}.ll"
        tc.run("clang", ["-O2", "-march=x86-64-v3", "-S", "-emit-llvm", src, "-o", ll])
        modules.append((f"csrc/{src.name} (x86-64-v3)", mir_of(tc, ll, tmp / f"{src.stem}.v3.mir")))
    vocab = mirtriplets.vocabulary(tc, modules[0][1])

    # Functions kept vs lost, and the time of each path per module.
    print(f"{'module':<34} {'functions':>9} {'llvm kept':>9} {'lost':>5} {'llvm s':>8} {'ours kept':>9} "
          f"{'ours s':>7}")
    readable: list[Path] = []
    totals = [0, 0, 0, 0.0, 0, 0.0]
    for name, path in modules:
        text = path.read_text()
        start = time.perf_counter()
        san = tmp / f"{path.stem}.sanitized.mir"
        san.write_text(mir.sanitize(text))
        functions = mir.split_functions(mir.sanitize(text))
        if llvm_ok(tc, san) is not None:
            kept = len(functions)
            readable.append(san)
        else:
            kept = 0
            for k, (_, ftext) in enumerate(functions):
                f = tmp / f"{path.stem}.fn{k}.mir"
                f.write_text(ftext)
                if llvm_ok(tc, f) is not None:
                    kept += 1
                    readable.append(f)
        llvm_s = time.perf_counter() - start
        start = time.perf_counter()
        ours = mirtriplets.extract(vocab, path.read_text())
        ours_s = time.perf_counter() - start
        n = len(functions)
        print(f"{name[:34]:<34} {n:>9} {kept:>9} {n - kept:>5} {llvm_s:>8.2f} {len(ours.functions):>9} {ours_s:>7.3f}")
        for i, v in enumerate((n, kept, n - kept, llvm_s, len(ours.functions), ours_s)):
            totals[i] += v
    print(f"{'total':<34} {totals[0]:>9} {totals[1]:>9} {totals[2]:>5} {totals[3]:>8.2f} {totals[4]:>9} "
          f"{totals[5]:>7.3f}  (ours left out: {totals[0] - totals[4]})")

    # Speed on the same files where LLVM does not crash, alternated.
    different = sum(1 for f in readable if mirtriplets.extract(vocab, f.read_text()).text() != llvm_ok(tc, f))

    def baseline() -> float:
        start = time.perf_counter()
        for f in readable:
            llvm_ok(tc, f)
        return time.perf_counter() - start

    def ours() -> float:
        start = time.perf_counter()
        for f in readable:
            mirtriplets.extract(vocab, f.read_text()).text()
        return time.perf_counter() - start

    runs = compare.alternate({"baseline": baseline, "ours": ours}, args.repeat)
    rows = compare.compare(runs, "baseline")
    print(f"same inputs where llvm-ir2vec does not crash: {len(readable)} function files, "
          f"{different} outputs differ byte for byte")
    print(f"baseline (llvm-ir2vec per file): median {rows['baseline'].median:.3f}s")
    print(f"ours (workers/mirtriplets.py):   median {rows['ours'].median:.3f}s")
    print(f"ratio ours/baseline: {rows['ours'].ratio:.3f}x (median of each round's ratio {rows['ours'].paired:.3f}x)")
    shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
