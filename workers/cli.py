"""Worker verbs: `llvm-build`, `corpus`, `triplets`, `dataset`."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from farm.answer import Answer, json_option
from farm.cli import positive_float, positive_int

if TYPE_CHECKING:
    from farm.toolchain import Toolchain


def _shard(text: str):
    """`--shard I/N` as an argument type: a malformed value is a usage error, before any work."""
    from farm.errors import InputError
    from workers.shards import Shard

    try:
        return Shard.parse(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _toolchain(args: argparse.Namespace) -> Toolchain:
    """The toolchain a corpus or triplets verb uses (and, with --no-cache, the caches turned off for it)."""
    from farm.toolchain import Toolchain

    if getattr(args, "no_cache", False):
        from workers import cache

        cache.disable()

    tc = Toolchain.from_settings()
    if getattr(args, "llvm_bin", None):
        tc = Toolchain(Path(args.llvm_bin), tc.min_major)
    return tc


def _corpus(args: argparse.Namespace) -> int:
    from workers import corpus
    from workers.cmake_corpus import describe_lineage

    tc = _toolchain(args)
    shard = getattr(args, "shard", None)
    if args.source == "sources":
        c = corpus.from_sources(Path(args.input), Path(args.output), tc, args.jobs, shard=shard, level=args.level)
    elif args.source == "debian":
        c = corpus.from_debian(args.input, Path(args.output), tc, _debsrc_dir(args), args.jobs, shard=shard,
                               level=args.level)
    elif args.source in ("cmake", "llvm"):
        c = _cmake_corpus(args, tc, shard)
    elif args.source == "coverage":
        from workers import coverage

        c = coverage.build(Path(args.output), tc, args.jobs, shard=shard)
    else:  # extracted whole (no compiling to split); the triplets step takes its shard's modules
        c = corpus.from_embedded_build(Path(args.input), Path(args.output), tc, args.jobs)
    added = None
    if getattr(args, "with_coverage", False):
        from workers import coverage

        c = coverage.add_to(Path(args.output), tc, args.jobs, shard=shard)
        added = {"source": coverage.SOURCE, "prefix": coverage.PREFIX, "sha256": coverage.digest(),
                 "modules": sum(1 for m in c.modules if m.name.startswith(coverage.PREFIX))}
    fields = {"corpus": args.output, "modules": len(c.modules), "skipped": len(c.skipped), "digest": c.digest,
              "level": c.level,
              "lineage": c.lineage, "lineage_text": describe_lineage(c.lineage), "revision": _revision(c.lineage),
              "coverage": added,
              "skipped_modules": c.skipped}
    return Answer(fields, _corpus_said)


def _revision(lineage: Mapping[str, Any] | None) -> str | None:
    """The revision of the corpus's sources: a Debian package's version or a git commit (None: unknown)."""
    if not lineage:
        return None
    return lineage.get("version") if lineage.get("kind") == "debian" else lineage.get("commit")


def _corpus_said(f: Mapping[str, Any]) -> str:
    level = f"-{f['level']}" if f.get("level") else "mixed levels"
    lines = [f"corpus {f['corpus']}: {f['modules']} modules ({level}), {f['skipped']} skipped, digest "
             f"{f['digest'][:16]}",
             f"  lineage: {f['lineage_text']}"]
    cov = f["coverage"]
    if cov:
        lines.append(f"  + {cov['source']}: {cov['modules']} modules {cov['prefix']}* "
                     f"(sources sha256 {cov['sha256'][:16]})")
    lines += [f"  skipped {s['module']}: {s['reason']}" for s in f["skipped_modules"]]
    return "\n".join(lines)


def _debsrc_dir(args: argparse.Namespace) -> Path:
    from farm.config import load_settings

    return Path(args.debsrc) if args.debsrc else Path(load_settings().var_dir) / "debsrc"


def _cmake_corpus(args: argparse.Namespace, tc: Toolchain, shard):
    from workers import cmake_corpus, llvm_source

    build = Path(args.build) if args.build else None
    if args.source == "cmake":
        return cmake_corpus.from_cmake(Path(args.input), Path(args.output), tc, build=build, include=args.include,
                                       defines=args.define, jobs=args.jobs, shard=shard, level=args.level)
    from farm.config import load_settings

    checkout = Path(args.checkout) if args.checkout else Path(load_settings().var_dir) / llvm_source.GIT
    return llvm_source.corpus(args.input, Path(args.output), tc, rev=args.rev,
                              repo=args.repo or llvm_source.LLVM_REPO, checkout=checkout,
                              debsrc_dir=_debsrc_dir(args), build=build, include=args.include, defines=args.define,
                              jobs=args.jobs, shard=shard, level=args.level)


def _triplets(args: argparse.Namespace) -> int:
    from workers import triplets

    levels = args.opt_levels.split(",") if args.opt_levels else None
    marches = args.march.split(",") if args.march else None
    out = triplets.build_dataset(Path(args.corpus), Path(args.output), args.kind, _toolchain(args), args.jobs,
                                 levels, args.seed, args.sample, args.timeout, shard=args.shard,
                                 predicates=False if args.no_predicates else None, marches=marches)
    if args.shard is not None:
        from farm.jsonio import load_file
        from workers.shards import PART_MANIFEST

        m = load_file(out / PART_MANIFEST, "shard manifest")
        return Answer({"shard": m["shard"], "output": str(out), "modules": len(m["modules"]), "raw": m["raw"],
                       "max_relation": m["max_relation"]}, _shard_said)
    return _dataset_answer(out)


def _shard_said(f: Mapping[str, Any]) -> str:
    return (f"shard {f['shard']} in {f['output']}: {f['modules']} modules, {f['raw']} triplets, "
            f"MAX_RELATION {f['max_relation']} (a part: `dataset put-shard`, then `dataset merge`)")


def _dataset_answer(out: Path) -> Answer:
    """A dataset directory's manifest as the answer of the verb that wrote it (`triplets`, `dataset merge`)."""
    from farm.embeddings import SECTIONS
    from workers.dataset import read_manifest

    m = read_manifest(out)
    t = m["triplets"]
    mentioned = m.get("entities_mentioned") or {}
    return Answer({"dataset": m["id"], "kind": m["kind"], "output": str(out), "modules_used": m["modules_used"],
                   "modules": m["corpus"]["modules"], "raw": t["raw"], "unique": t["unique"],
                   "entities": m["entities"], "relations": m["relations"], "predicates": m.get("predicates"),
                   "entities_mentioned": {s: mentioned[s] for s in SECTIONS[m["kind"]] if s in mentioned},
                   "skipped": len(m["skipped"]), "skipped_modules": m["skipped"], "partial_modules": m["partial"]},
                  _dataset_said)


def _dataset_said(f: Mapping[str, Any]) -> str:
    lines = [f"dataset {f['dataset']} in {f['output']}: {f['modules_used']}/{f['modules']} modules, "
             f"{f['raw']} triplets -> {f['unique']} unique, {f['entities']} entities, {f['relations']} relations"]
    pred = f["predicates"]
    if pred:
        lines.append(f"  predicates: {pred['compares']} compares -> {pred['triplets']} triplets under relation "
                     f"{pred['relation']} (farm extension; --no-predicates leaves them out)")
    mentioned = f["entities_mentioned"]
    if mentioned:
        lines.append("  entities mentioned (the rest would be filler): " + ", ".join(
            f"{s} {c['count']}/{c['total']}" for s, c in mentioned.items()))
    lines += [f"  skipped {s['module']} ({s['stage']}): {s['reason']}" for s in f["skipped_modules"]]
    lines += [f"  partial {s['module']}: {s['reason']}" for s in f["partial_modules"]]
    return "\n".join(lines)


def _dataset_put_shard(args: argparse.Namespace) -> int:
    from farm.objectstore import store_from_settings
    from workers import shards

    store = store_from_settings()
    shard, prefix = shards.put_part(Path(args.part), store, args.run)
    return Answer({"shard": str(shard), "run": args.run, "prefix": prefix, "store": store.url},
                  lambda f: f"uploaded shard {f['shard']} of run {f['run']} to {f['prefix']} in {f['store']}")


def _dataset_merge(args: argparse.Namespace) -> int:
    from farm.objectstore import store_from_settings
    from workers import triplets

    return _dataset_answer(triplets.merge_dataset(store_from_settings(), args.run, args.shards, Path(args.output)))


def _dataset_drop_shards(args: argparse.Namespace) -> int:
    from farm.objectstore import store_from_settings
    from workers import shards

    return Answer({"run": args.run, "deleted": shards.drop_run(store_from_settings(), args.run)},
                  lambda f: f"deleted {f['deleted']} shard object(s) of run {f['run']}")


def _dataset_publish(args: argparse.Namespace) -> int:
    from farm.config import load_settings
    from farm.locks import publish_lock
    from farm.objectstore import store_from_settings
    from workers import dataset

    s = load_settings()
    store = store_from_settings(s)
    with publish_lock(store, s.celery.broker_url, settings=s):  # the index is shared with other publishers
        dataset_id = dataset.publish(Path(args.dataset), store)
    # where it went, kind included: the Buildbot step links the dataset's page from these (master/outputs.py);
    # the revision of the corpus's sources becomes the build's got_revision (master/registry.py CORPUS_REVISION)
    m = dataset.read_manifest(Path(args.dataset))
    kind = m["kind"]
    return Answer({"dataset": dataset_id, "kind": kind,
                   "url": f"{store.url.rstrip('/')}/{dataset.store_prefix(kind, dataset_id)}/",
                   "revision": _revision(m["corpus"].get("lineage"))},
                  lambda f: f"published dataset {f['dataset']} to {f['url']}")


def _dataset_show(args: argparse.Namespace) -> int:
    from farm.jsonio import dumps
    from workers.dataset import read_manifest

    print(dumps(read_manifest(Path(args.dataset))), end="")
    return 0


def _llvm_build(args: argparse.Namespace) -> int:
    from workers import llvm_build

    p = llvm_build.plan(Path(args.src), Path(args.build), args.rev, _toolchain(args), jobs=args.jobs)
    if args.dry_run:
        return Answer({"rev": args.rev, "commands": p.commands}, lambda f: "\n".join(map(shlex.join, f["commands"])))
    bin_dir = llvm_build.run(p, configure_only=args.configure_only)
    return Answer({"rev": args.rev, "build_dir": str(p.build_dir),
                   "bin_dir": None if args.configure_only else str(bin_dir)}, _llvm_said)


def _llvm_said(f: Mapping[str, Any]) -> str:
    return f"LLVM at {f['rev']}: {f['bin_dir'] or 'configured in ' + f['build_dir']}"


def register(sub: argparse._SubParsersAction) -> None:
    """Add the worker verbs to `mlgo-farm`."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-j", "--jobs", type=positive_int, default=None, help="parallel jobs (default: all cores)")
    common.add_argument("--llvm-bin", help="LLVM bin directory (default: [llvm] bin_dir)")
    common.add_argument("--no-cache", action="store_true",
                        help="neither use nor fill the worker's compile and triplet caches ([cache] enabled = false)")
    answers = json_option()
    sharding = argparse.ArgumentParser(add_help=False)
    sharding.add_argument("--shard", type=_shard, metavar="I/N",
                          help="only the modules of shard I of N (a stable hash of the module name)")
    with_coverage = argparse.ArgumentParser(add_help=False)
    with_coverage.add_argument("--with-coverage", action="store_true",
                               help="add the farm's coverage corpus (workers/data/coverage: exception handling, "
                                    "atomics, vectors, ... that the sources lack) as modules _coverage/*")

    p = sub.add_parser("corpus", help="build a corpus of IR modules")
    csub = p.add_subparsers(dest="source", required=True, metavar="SOURCE")
    for name, what in (("sources", "a directory of C/C++ sources or a compile_commands.json"),
                       ("debian", "a Debian source package name (apt-get source)"),
                       ("build", "a build directory made with -Xclang -fembed-bitcode=all")):
        c = csub.add_parser(name, parents=[common, sharding, with_coverage, answers], help=f"corpus from {what}")
        c.add_argument("input", help=what)
        c.add_argument("-o", "--output", required=True, help="corpus directory to write")
        c.set_defaults(func=_corpus)
    c = csub.add_parser("coverage", parents=[common, sharding, answers],
                        help="corpus of the farm's coverage sources alone (workers/data/coverage)")
    c.add_argument("-o", "--output", required=True, help="corpus directory to write")
    c.set_defaults(func=_corpus)
    from workers.corpusdir import LEVELS

    level_help = ("front-end optimization level of every module (O0..O3, Os, Oz; default: -O2, the vocabularies' "
                  "corpus, or a database's own): a policy trains on its own level's bitcode (policy corpora: Oz)")
    for name in ("sources", "debian"):
        csub.choices[name].add_argument("--level", choices=LEVELS, help=level_help)
    debsrc_help = "where Debian source packages are unpacked; a tree already there is reused (default: VAR/debsrc)"
    csub.choices["debian"].add_argument("--debsrc", metavar="DIR", help=debsrc_help)
    configured = argparse.ArgumentParser(add_help=False)
    configured.add_argument("-o", "--output", required=True, help="corpus directory to write")
    configured.add_argument("--level", choices=LEVELS, help=level_help)
    configured.add_argument("--build", metavar="DIR",
                            help="CMake build directory, kept for the next run (default: VAR/cmake-build/NAME-HASH)")
    configured.add_argument("--include", action="append", default=[], metavar="PATH",
                            help="only TUs under this path of the source tree, e.g. lib/Transforms (repeatable)")
    configured.add_argument("-D", dest="define", action="append", default=[], metavar="VAR=VALUE",
                            help="CMake cache setting (repeatable)")
    configured.set_defaults(func=_corpus)
    c = csub.add_parser("cmake", parents=[common, sharding, configured, with_coverage, answers],
                        help="corpus from a CMake project: configure, build only its generated headers, compile TUs")
    c.add_argument("input", metavar="SRC_DIR", help="the CMake source directory (holds CMakeLists.txt)")
    c = csub.add_parser("llvm", parents=[common, sharding, configured, with_coverage, answers],
                        help="corpus from LLVM's own code (llvm/ configured, tablegen run, TUs compiled)")
    c.add_argument("input", metavar="SOURCE", nargs="?", default="llvm-project",
                   help="llvm-project (git, at --rev) or a Debian source package such as llvm-toolchain-19")
    c.add_argument("--rev", help="llvm-project git revision (default: main, i.e. tip of tree)")
    c.add_argument("--repo", help="llvm-project git URL (default: upstream on GitHub)")
    c.add_argument("--checkout", metavar="DIR",
                   help="llvm-project checkout (cloned if absent; default: VAR/llvm-project)")
    c.add_argument("--debsrc", metavar="DIR", help=debsrc_help)

    p = sub.add_parser("triplets", parents=[common, sharding, answers],
                       help="generate a deduplicated IR or MIR triplet dataset (with --shard: one shard's part)")
    p.add_argument("kind", choices=("ir", "mir"))
    p.add_argument("corpus", help="corpus directory")
    p.add_argument("-o", "--output", required=True, help="dataset directory to write")
    p.add_argument("--opt-levels", help="comma-separated opt levels, O0 = as compiled (default: ir O0,O2; mir O2)")
    p.add_argument("--sample", type=positive_int, help="use this many of the levels per module, drawn with --seed")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=positive_float, default=300,
                   help="seconds per tool run before the module is skipped")
    p.add_argument("--no-predicates", action="store_true",
                   help="ir: leave out the farm's compare-predicate triplets (ICmp -> ICMP_slt under `Predicate`)")
    p.add_argument("--march", metavar="LIST",
                   help="run every x86-64 module once per level: comma-separated x86-64,x86-64-v2,x86-64-v3,"
                        "x86-64-v4 (default: as compiled)")
    p.set_defaults(func=_triplets)

    p = sub.add_parser("dataset", help="publish or show a triplet dataset")
    dsub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    d = dsub.add_parser("publish", parents=[answers],
                        help="upload to the object store and move datasets/KIND/latest.json")
    d.add_argument("dataset")
    d.set_defaults(func=_dataset_publish)
    d = dsub.add_parser("show", help="print a dataset's manifest")
    d.add_argument("dataset")
    d.set_defaults(func=_dataset_show)
    d = dsub.add_parser("put-shard", parents=[answers], help="upload a shard's part to datasets/shards/RUN/I-of-N/")
    d.add_argument("part", help="directory written by `triplets --shard`")
    d.add_argument("--run", required=True, help="run id shared by the shards of one run")
    d.set_defaults(func=_dataset_put_shard)
    d = dsub.add_parser("merge", parents=[answers],
                        help="merge the N parts of a run into the dataset one unsharded run makes")
    d.add_argument("--run", required=True, help="run id")
    d.add_argument("--shards", type=positive_int, required=True, help="N: how many parts the run has")
    d.add_argument("-o", "--output", required=True, help="dataset directory to write")
    d.set_defaults(func=_dataset_merge)
    d = dsub.add_parser("drop-shards", parents=[answers], help="delete the parts of a run from the store")
    d.add_argument("--run", required=True, help="run id")
    d.set_defaults(func=_dataset_drop_shards)

    p = sub.add_parser("llvm-build", parents=[common, answers],
                       help="build LLVM at a git revision with embedded bitcode")
    p.add_argument("--rev", default="main", help="git revision (default: main, i.e. tip of tree)")
    p.add_argument("--src", required=True, help="llvm-project checkout (cloned if absent)")
    p.add_argument("--build", required=True, help="build directory")
    p.add_argument("--configure-only", action="store_true", help="stop after CMake")
    p.add_argument("--dry-run", action="store_true", help="print the commands only")
    p.set_defaults(func=_llvm_build)
