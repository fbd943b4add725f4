"""Benchmark: how far the nightly MIR corpus reaches, against LLVM's in-tree x86 MIR vocabulary.

For each Debian package (`mlgo-farm corpus debian PKG`, -O2; a package whose source is unpacked under
var/debsrc fetches nothing, any other is fetched with `apt-get source` into WORK/debsrc), its MIR triplet dataset
at the four `-march` levels (`mlgo-farm triplets mir CORPUS --march x86-64,x86-64-v2,x86-64-v3,x86-64-v4`),
then one dataset of every package merged (the modules' triplet runs come from the worker's triplet cache the
per-package runs filled) and a MIR vocabulary of it (`mlgo-farm vocab train --kind mir --epochs N`). Each module is
read at the three stages of workers/mir.py STAGES (generic, after instruction selection, after allocation). `--llvm
CORPUS` adds LLVM's own code (a corpus made with `mlgo-farm corpus llvm llvm-toolchain-19 --include lib/Support`),
`--coverage` the farm's coverage corpus, as the nightly corpus step adds it.

Per package and in total: modules used / skipped, functions lost (the dataset's `partial`: MIR functions the reader
left out; must be 0), entities mentioned per section, opcodes mentioned that LLVM's in-tree x86 vocabulary
(`bench/data/x86SeedEmbeddingVocab100D.keys.tsv`, 642 opcodes) also has; for the total, the vocabulary's coverage
per section (trained / composed from parts / filler) and how LLVM's 642 opcodes fare in it (trained, composed,
filler, absent from LLVM 22.1.8's entity list). `--per-march`: the merged corpus at each level alone, the opcodes
each mentions and those no lower level did. Wall time of each step is printed (not a measurement of speed:
the machine is shared and caches may be warm).

    .venv/bin/python -m bench.bench_mir_reach --jobs 2 --epochs 100 \
        [--packages bzip2,cjson,...] [--extra opus,libwebp] [--llvm CORPUS] [--coverage] [--per-march]
        [--work var/bench/mir-reach]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import ROOT
from bench.harness.commands import farm
from bench.harness.corpora import merged_corpus
from bench.harness.header import print_header
from farm.jsonio import load_file

CACHED = ("bzip2", "cjson", "giflib", "jansson", "libyaml", "libzstd", "lua5.4", "lz4", "lzo2", "zlib")
MARCHES = "x86-64,x86-64-v2,x86-64-v3,x86-64-v4"
LLVM_KEYS = ROOT / "bench" / "data" / "x86SeedEmbeddingVocab100D.keys.tsv"
SECTIONS = ("Opcodes", "CommonOperands", "PhysicalRegisters", "VirtualRegisters")


def llvm_keys() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for line in LLVM_KEYS.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        section, name = line.split("\t", 1)
        name = name.removeprefix("VIRT_REG_")  # the in-tree file's older spelling of a register class
        out.setdefault(section, set()).add(name)
    return out


def lost(manifest: dict) -> tuple[int, int]:
    """(functions the reader left out at a stage that reads every function — isel or allocated —, functions
    GlobalISel's IRTranslator could not translate, left out of the generic stage only); from the dataset's `partial`
    (workers/triplets.py counts them per stage)."""
    n = untranslated = 0
    for p in manifest.get("partial", []):
        stages = p.get("by_stage", {"?": p.get("functions", 1)})
        untranslated += stages.get("generic", 0)
        n += sum(v for k, v in stages.items() if k != "generic")
    return n, untranslated


def defined(tc, corpus: Path, modules) -> dict[str, int]:
    """The functions each module's bitcode defines (`define` lines of `llvm-dis`)."""
    out = {}
    for name in modules:
        text = subprocess.run([str(tc.path("llvm-dis")), str(corpus / f"{name}.bc"), "-o", "-"], capture_output=True,
                              check=True).stdout
        out[name] = len(re.findall(rb"^define ", text, re.M))
    return out


def step(label: str, *args: str) -> float:
    start = time.perf_counter()
    farm(*args)
    took = time.perf_counter() - start
    print(f"  ({label}: {took:.0f}s)", flush=True)
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packages", default=",".join(CACHED), help="Debian source packages (comma-separated)")
    ap.add_argument("--extra", default="", help="more packages, fetched with apt-get source when not cached")
    ap.add_argument("--jobs", default="2")
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--per-march", action="store_true",
                    help="also the merged corpus at each -march level alone (four more triplet runs, uncached)")
    ap.add_argument("--work", type=Path, default=Path("var/bench/mir-reach"))
    ap.add_argument("--llvm", type=Path, metavar="CORPUS",
                    help="a corpus of LLVM's own code (`mlgo-farm corpus llvm llvm-toolchain-19 --include lib/Support "
                         "-o CORPUS`), added as the package `llvm`")
    ap.add_argument("--coverage", action="store_true",
                    help="add the farm's coverage corpus (`mlgo-farm corpus coverage`, workers/data/coverage) as the "
                         "package `coverage`, as the nightly corpus step does (`--with-coverage`)")
    args = ap.parse_args()

    from farm.toolchain import Toolchain

    tc = Toolchain.from_settings()
    print_header(tc)
    work = (ROOT / args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    packages = [p for p in (args.packages + "," + args.extra).split(",") if p]
    cached_src = ROOT / "var" / "debsrc"
    ref = llvm_keys()
    corpora: dict[str, Path] = {}
    rows = []
    for pkg in packages + (["llvm"] if args.llvm else []) + (["coverage"] if args.coverage else []):
        corpus, ds = (args.llvm.resolve() if pkg == "llvm" else work / f"corpus-{pkg}"), work / f"ds-{pkg}"
        src = cached_src if any(cached_src.glob(f"{pkg}_*.dsc")) else work / "debsrc"
        try:
            t_corpus = 0.0
            if pkg == "coverage" and not (corpus / "corpus_description.json").is_file():
                t_corpus = step("corpus", "corpus", "coverage", "-o", str(corpus))
            elif not (corpus / "corpus_description.json").is_file():
                t_corpus = step("corpus", "corpus", "debian", pkg, "-o", str(corpus), "--debsrc", str(src),
                                "--jobs", args.jobs)
            t_ds = 0.0
            if not (ds / "manifest.json").is_file():
                t_ds = step("triplets", "triplets", "mir", str(corpus), "-o", str(ds), "--march", MARCHES,
                            "--jobs", args.jobs)
        except subprocess.CalledProcessError as err:
            print(f"  {pkg}: left out ({err})", flush=True)
            continue
        corpora[pkg] = corpus
        m = load_file(ds / "manifest.json")
        fns = defined(tc, corpus, load_file(corpus / "corpus_description.json")["modules"])
        m["_functions"] = sum(fns.values())
        m["_skipped_functions"] = sum(fns.get(s["module"], 0) for s in m.get("skipped", []))
        rows.append((pkg, m, t_corpus, t_ds))

    total_corpus, total_ds = work / "corpus-all", work / "ds-all"
    if not (total_corpus / "corpus_description.json").is_file() or \
            load_file(total_corpus / "corpus_description.json")["source"] != \
            "merged: " + " ".join(corpora):
        import shutil
        shutil.rmtree(total_corpus, ignore_errors=True)
        shutil.rmtree(total_ds, ignore_errors=True)
        for old in [*work.glob("vocab-all-e*"), *work.glob("ds-all-x86-64*")]:  # of another set of packages
            shutil.rmtree(old)
    merged_corpus(total_corpus, corpora)
    t_all = 0.0
    if not (total_ds / "manifest.json").is_file():
        t_all = step("triplets, merged", "triplets", "mir", str(total_corpus), "-o", str(total_ds), "--march",
                     MARCHES, "--jobs", args.jobs)
    total = load_file(total_ds / "manifest.json")
    total["_functions"] = sum(r[1]["_functions"] for r in rows)
    total["_skipped_functions"] = sum(r[1]["_skipped_functions"] for r in rows)
    vocab = work / f"vocab-all-e{args.epochs}"
    t_vocab = 0.0
    if not (vocab / "manifest.json").is_file():
        t_vocab = step("vocab train", "vocab", "train", str(total_ds), "-o", str(vocab), "--kind", "mir",
                       "--epochs", str(args.epochs))

    print()
    print(f"MIR datasets at -march {MARCHES}, -O2 (`triplets mir` default); LLVM's in-tree x86 vocabulary: "
          f"{len(ref['Opcodes'])} opcodes")
    print("functions: defined in the corpus's bitcode (each is read once per -march level); skipped: modules left out "
          "(fn: the functions they define); lost fn: functions the reader left out of used modules at the isel or "
          "allocated stage (workers/mir.py STAGES); no gen: functions GlobalISel could not translate, left out of the "
          "generic stage only")
    head = (f"{'package':<14} {'functions':>9} {'modules':>7} {'skipped':>7} {'fn':>3} {'lost fn':>7} {'no gen':>6} "
            f"{'opcodes':>7} {'∩ LLVM':>6} {'common':>6} {'phys':>5} {'virt':>5} {'unique trip':>11} {'corpus s':>8} "
            f"{'trip s':>7}")
    print(head)
    for pkg, m, t_corpus, t_ds in [*rows, ("total", total, 0.0, t_all)]:
        em = m["entities_mentioned"]
        ops = set(em["Opcodes"]["entities"])
        n_lost, untranslated = lost(m)
        print(f"{pkg:<14} {m['_functions']:>9} {m['modules_used']:>7} {len(m.get('skipped', [])):>7} "
              f"{m['_skipped_functions']:>3} "
              f"{n_lost:>7} {untranslated:>6} {len(ops):>7} {len(ops & ref['Opcodes']):>6} "
              f"{em['CommonOperands']['count']:>6} {em['PhysicalRegisters']['count']:>5} "
              f"{em['VirtualRegisters']['count']:>5} {m['triplets']['unique']:>11} {t_corpus:>8.0f} {t_ds:>7.0f}")
    for pkg, m, *_ in rows:
        for s in m.get("skipped", []):
            print(f"  skipped {pkg}: {s['module']}: {s['reason'][:120]}")
        for p in m.get("partial", []):
            print(f"  partial {pkg}: {p['module']}: {p['reason'][:160]}")

    if args.per_march:
        print()
        print(f"{'-march alone':<14} {'opcodes':>7} {'∩ LLVM':>6} {'new vs lower':>12} {'unique trip':>11} "
              f"{'trip s':>7}")
        seen: set[str] = set()
        for march in MARCHES.split(","):
            one = work / f"ds-all-{march}"
            t = 0.0
            if not (one / "manifest.json").is_file():
                t = step(f"triplets, merged, {march}", "triplets", "mir", str(total_corpus), "-o", str(one),
                         "--march", march, "--jobs", args.jobs)
            m = load_file(one / "manifest.json")
            ops = set(m["entities_mentioned"]["Opcodes"]["entities"])
            print(f"{march:<14} {len(ops):>7} {len(ops & ref['Opcodes']):>6} {len(ops - seen):>12} "
                  f"{m['triplets']['unique']:>11} {t:>7.0f}  lost fn {lost(m)[0]}, no gen {lost(m)[1]}", flush=True)
            seen |= ops

    vm = load_file(vocab / "manifest.json")
    vj = load_file(vocab / "vocab.json")
    print()
    print(f"vocabulary of the total ({args.epochs} epochs, `vocab train --kind mir`, {t_vocab:.0f}s): "
          f"{vm['dimension']} dimensions")
    print(f"{'section':<18} {'total':>6} {'trained':>7} {'composed':>8} {'filler':>6}")
    composed_names: dict[str, set[str]] = {}
    for section, c in vm["coverage"].items():
        filler = c["filler"] if isinstance(c["filler"], list) else []
        n_filler = len(filler) if isinstance(c["filler"], list) else c["filler"]
        print(f"{section:<18} {c['total']:>6} {c['trained']:>7} {c.get('composed', 0):>8} {n_filler:>6}")
        names = set(vj.get(section, {}))
        trained = set(total["entities_mentioned"].get(section, {}).get("entities", []))
        composed_names[section] = names - trained - set(filler)
    ops_llvm = ref["Opcodes"]
    names = set(vj.get("Opcodes", {}))
    trained = set(total["entities_mentioned"]["Opcodes"]["entities"]) & names
    filler = set(vm["coverage"]["Opcodes"]["filler"]) if isinstance(vm["coverage"]["Opcodes"]["filler"], list) \
        else set()
    composed = composed_names["Opcodes"]
    print(f"LLVM's {len(ops_llvm)} in-tree opcodes in ours: trained {len(ops_llvm & trained)}, "
          f"composed {len(ops_llvm & composed)}, filler {len(ops_llvm & filler)}, "
          f"not an entity of LLVM 22.1.8 {len(ops_llvm - names)}")
    print(f"ours trained that LLVM's in-tree vocabulary lacks: {len(trained - ops_llvm)}")
    for section in SECTIONS[1:]:
        r = ref.get(section, set())
        tr = set(total["entities_mentioned"].get(section, {}).get("entities", []))
        print(f"{section}: LLVM in-tree {len(r)}, ours {vm['coverage'][section]['total']} entities, "
              f"{len(tr)} trained, same names as in-tree {len(r & tr)} trained, "
              f"{len(r & set(vj.get(section, {})))} entities")
    return 0


if __name__ == "__main__":
    sys.exit(main())
