"""Worker verbs: `llvm-build`, `corpus`, `triplets`, `dataset`."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from farm.cli import positive_float, positive_int

if TYPE_CHECKING:
    from farm.toolchain import Toolchain


def _toolchain(args: argparse.Namespace) -> Toolchain:
    from farm.toolchain import Toolchain

    tc = Toolchain.from_settings()
    if getattr(args, "llvm_bin", None):
        tc = Toolchain(Path(args.llvm_bin), tc.min_major)
    return tc


def _corpus(args: argparse.Namespace) -> int:
    from workers import corpus

    tc = _toolchain(args)
    if args.source == "sources":
        c = corpus.from_sources(Path(args.input), Path(args.output), tc, args.jobs)
    elif args.source == "debian":
        from farm.config import load_settings

        c = corpus.from_debian(args.input, Path(args.output), tc, load_settings().var_dir / "debsrc", args.jobs)
    else:
        c = corpus.from_embedded_build(Path(args.input), Path(args.output), tc, args.jobs)
    print(f"corpus {args.output}: {len(c.modules)} modules, {len(c.skipped)} skipped, digest {c.digest[:16]}")
    for s in c.skipped:
        print(f"  skipped {s['module']}: {s['reason']}")
    return 0


def _triplets(args: argparse.Namespace) -> int:
    from workers import triplets
    from workers.dataset import read_manifest

    levels = args.opt_levels.split(",") if args.opt_levels else None
    out = triplets.build_dataset(Path(args.corpus), Path(args.output), args.kind, _toolchain(args), args.jobs,
                                 levels, args.seed, args.sample, args.timeout)
    m = read_manifest(out)
    t = m["triplets"]
    print(f"dataset {m['id']} in {out}: {m['modules_used']}/{m['corpus']['modules']} modules, "
          f"{t['raw']} triplets -> {t['unique']} unique, {m['entities']} entities, {m['relations']} relations")
    for s in m["skipped"]:
        print(f"  skipped {s['module']} ({s['stage']}): {s['reason']}")
    for s in m["partial"]:
        print(f"  partial {s['module']}: {s['reason']}")
    return 0


def _dataset_publish(args: argparse.Namespace) -> int:
    from farm.store import store_from_settings
    from workers import dataset

    store = store_from_settings()
    dataset_id = dataset.publish(Path(args.dataset), store)
    print(f"published dataset {dataset_id} to {store.url}")
    return 0


def _dataset_show(args: argparse.Namespace) -> int:
    from workers.dataset import read_manifest

    print(json.dumps(read_manifest(Path(args.dataset)), indent=2, sort_keys=True))
    return 0


def _llvm_build(args: argparse.Namespace) -> int:
    from workers import llvm_build

    p = llvm_build.plan(Path(args.src), Path(args.build), args.rev, _toolchain(args), jobs=args.jobs)
    if args.dry_run:
        for cmd in p.commands:
            print(shlex.join(cmd))
        return 0
    bin_dir = llvm_build.run(p, configure_only=args.configure_only)
    print(f"LLVM at {args.rev}: {'configured in ' + str(p.build_dir) if args.configure_only else bin_dir}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the worker verbs to `mlgo-farm`."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-j", "--jobs", type=positive_int, default=None, help="parallel jobs (default: all cores)")
    common.add_argument("--llvm-bin", help="LLVM bin directory (default: [llvm] bin_dir)")

    p = sub.add_parser("corpus", help="build a corpus of IR modules")
    csub = p.add_subparsers(dest="source", required=True, metavar="SOURCE")
    for name, what in (("sources", "a directory of C/C++ sources or a compile_commands.json"),
                       ("debian", "a Debian source package name (apt-get source)"),
                       ("build", "a build directory made with -Xclang -fembed-bitcode=all")):
        c = csub.add_parser(name, parents=[common], help=f"corpus from {what}")
        c.add_argument("input", help=what)
        c.add_argument("-o", "--output", required=True, help="corpus directory to write")
        c.set_defaults(func=_corpus)

    p = sub.add_parser("triplets", parents=[common], help="generate a deduplicated IR or MIR triplet dataset")
    p.add_argument("kind", choices=("ir", "mir"))
    p.add_argument("corpus", help="corpus directory")
    p.add_argument("-o", "--output", required=True, help="dataset directory to write")
    p.add_argument("--opt-levels", help="comma-separated opt levels, O0 = as compiled (default: ir O0,O2; mir O2)")
    p.add_argument("--sample", type=positive_int, help="use this many of the levels per module, drawn with --seed")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=positive_float, default=300,
                   help="seconds per tool run before the module is skipped")
    p.set_defaults(func=_triplets)

    p = sub.add_parser("dataset", help="publish or show a triplet dataset")
    dsub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    d = dsub.add_parser("publish", help="upload to the object store and move datasets/KIND/latest.json")
    d.add_argument("dataset")
    d.set_defaults(func=_dataset_publish)
    d = dsub.add_parser("show", help="print a dataset's manifest")
    d.add_argument("dataset")
    d.set_defaults(func=_dataset_show)

    p = sub.add_parser("llvm-build", parents=[common], help="build LLVM at a git revision with embedded bitcode")
    p.add_argument("--rev", default="main", help="git revision (default: main, i.e. tip of tree)")
    p.add_argument("--src", required=True, help="llvm-project checkout (cloned if absent)")
    p.add_argument("--build", required=True, help="build directory")
    p.add_argument("--configure-only", action="store_true", help="stop after CMake")
    p.add_argument("--dry-run", action="store_true", help="print the commands only")
    p.set_defaults(func=_llvm_build)
