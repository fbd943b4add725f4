"""`regress run`'s options and the RunRequest they ask for: the CLI's verb (regression/cli.py) and a bisect, which
re-runs a run's recorded `reproduce` command (regression/bisectrun.py), read them alike."""

from __future__ import annotations

import argparse
from pathlib import Path

from farm.cli import nonnegative_int, positive_float, positive_int
from farm.errors import EXIT_NOT_IDENTICAL, EXIT_REGRESSION
from policyhost import advisors
from regression.benchmarks import BENCHMARKS

DEFAULT_BUILDER = "local"  # the builder name `regress run` records when no builder runs it
REPORT_DIR = "mlgo-farm-report"  # where `regress run --reproduce` writes its report when not told


def add_options(run: argparse.ArgumentParser) -> None:
    """`regress run`'s options (besides `--history` and `--json`, which other verbs share)."""
    run.add_argument("--corpus", help="a corpus directory (corpus_description.json): per-module .text sizes")
    run.add_argument("--thinlto", action="store_true", help="build the benchmarks as distributed ThinLTO builds: "
                     "pre-link, thin link, one backend per module (the policy in each), linked by ld.lld")
    run.add_argument("--pgo", action="store_true", help="build the benchmarks with instrumented PGO: the heuristic's "
                     "instrumented build runs each benchmark's training inputs once, both variants use the profile")
    run.add_argument("--bench", action="append", default=[], metavar="NAME",
                     help=f"a benchmark from a Debian source package: {', '.join(BENCHMARKS)} (repeatable)")
    run.add_argument("--bench-dir", action="append", default=[], metavar="DIR",
                     help="a local directory of C files with one main() as a benchmark (repeatable)")
    run.add_argument("--bench-url", action="append", default=[], metavar="URL",
                     help="a local benchmark's sources published by a run (a tar.gz on a farm's dashboard, checked "
                     "with --bench-sha256), as a --bench-dir (repeatable)")
    run.add_argument("--bench-sha256", action="append", default=[], metavar="HEX",
                     help="the sha256 the n-th --bench-url's bytes must have (default: the .sha256 file beside it)")
    run.add_argument("--bench-arg", action="append", default=[], metavar="ARG",
                     help="an argument for the --bench-dir and --bench-url programs (repeatable)")
    run.add_argument("--bench-train-arg", action="append", default=[], metavar="ARG",
                     help="an argument of the --bench-dir and --bench-url programs' --pgo training run, apart from "
                     "the measured one ({inputs}/NAME: a file of the directory's train/ folder; repeatable)")
    run.add_argument("--policy", default="heuristic", help="built-in policy name, an .onnx model, store:latest / "
                     "store:VERSION for a policy the farm published (with the vocabulary it was trained with), or "
                     "the http(s) URL of a model.onnx on a farm's dashboard (checked with --policy-sha256)")
    run.add_argument("--policy-sha256", metavar="HEX", help="the sha256 a --policy URL's bytes must have (default: "
                     "the .sha256 file the dashboard serves beside it)")
    run.add_argument("--advisor", choices=advisors.NAMES,
                     help="MLGO advisor the policy drives (default: the one a built-in policy answers, "
                     f"else {advisors.DEFAULT})")
    run.add_argument("--vocab", help="IR2Vec vocabulary fed to the policy: a JSON file (a manifest.json beside it "
                     "names the version), store:VERSION / store:latest, published by the farm, or the http(s) URL "
                     "of a vocab.json on a farm's dashboard (checked with --vocab-sha256)")
    run.add_argument("--vocab-sha256", metavar="HEX", help="the sha256 a --vocab URL's bytes must have (default: "
                     "the .sha256 file the dashboard serves beside it)")
    run.add_argument("--builder", default=DEFAULT_BUILDER,
                     help=f"builder name recorded in the history (default: {DEFAULT_BUILDER})")
    run.add_argument("--run-id", help="run id (default: UTC time and a random suffix)")
    run.add_argument("--opt", action="append", default=None, metavar="FLAG",
                     help="optimization flag for both variants, as --opt=-Oz (repeatable; default: -Oz)")
    run.add_argument("--repeats", type=nonnegative_int, default=5,
                     help="wall-time samples per variant and workload (0: none), and callgrind counts (at least 1): "
                          "a change of instructions inside one build's spread is noise")
    run.add_argument("--no-callgrind", action="store_true", help="skip callgrind instruction counts")
    run.add_argument("--rules", help="TOML file overriding regression rules per metric")
    run.add_argument("--no-publish", action="store_true", help="keep the report local (do not upload to the store)")
    run.add_argument("--reproduce", action="store_true",
                     help="a reproduction: write nothing but the report (to --report-dir; work files and the history "
                     "in a temporary directory, removed afterwards), never publish, mail only with --mail")
    run.add_argument("--report-dir", metavar="DIR", help=f"where a reproduction writes its report (implies "
                     f"--reproduce; default: ./{REPORT_DIR})")
    run.add_argument("--mail", action="store_true", help="a reproduction mails its alert to [smtp] recipients too")
    run.add_argument("--jobs", type=positive_int, help="parallel compiles (default: CPUs)")
    run.add_argument("--policy-timeout", type=positive_float, help="policy host timeout per compile, seconds")
    run.add_argument("--expect-identical", action="store_true",
                     help=f"a control run: exit with {EXIT_NOT_IDENTICAL} unless every .text size of the policy build "
                     "equals the heuristic's exactly (ratio 1.0000: the launcher, not a policy, is checked)")
    run.add_argument("--build-url", metavar="URL", help="the Buildbot build running this comparison, for the alert "
                     "mail (builders pass it)")
    run.add_argument("--fail-on-regression", action="store_true",
                     help=f"exit with {EXIT_REGRESSION} when the run's verdict is regression")


def request_from_args(args: argparse.Namespace, fetch_into: Path | None = None):
    """The RunRequest of `regress run`'s options (also of a run's recorded `reproduce` command: a bisect re-runs
    it, regression/bisectrun.py). A --bench-url's sources are fetched, checked and unpacked under `fetch_into`
    (default: the farm's URL cache, `<var_dir>/cache/url/bench`)."""
    from farm.errors import InputError
    from policyhost import advisors
    from regression import benchmarks
    from regression.request import RunRequest

    advisor = advisors.for_policy(str(args.policy), args.advisor)
    if args.thinlto and not advisor.thinlto_backends:
        raise InputError(f"--thinlto with the {advisor.name} advisor: LLVM 22 never consults it in a ThinLTO backend, "
                         "so both variants would be the heuristic (build per file, with --pgo)")
    benches = [benchmarks.lookup(n) for n in args.bench]
    train = tuple(getattr(args, "bench_train_arg", None) or [])
    for d in args.bench_dir:
        benches.append(benchmarks.local_benchmark(Path(d), tuple(args.bench_arg), train_args=train))
    urls, shas = list(getattr(args, "bench_url", None) or []), list(getattr(args, "bench_sha256", None) or [])
    if len(shas) > len(urls):
        raise InputError(f"{len(shas)} --bench-sha256 for {len(urls)} --bench-url: give one per URL, in order")
    if urls:
        from farm.artifacts.remote import check_sha256
        from regression import benchsource

        if fetch_into is None:
            from farm.config import load_settings

            fetch_into = load_settings().var_dir / "cache" / "url" / "bench"
        for url, sha in zip(urls, [*shas, *[None] * (len(urls) - len(shas))], strict=True):
            d = benchsource.fetch(url, check_sha256(sha), fetch_into)
            benches.append(benchmarks.local_benchmark(d, tuple(args.bench_arg), train_args=train))
    return RunRequest(
        builder=args.builder, run_id=args.run_id, corpus=Path(args.corpus) if args.corpus else None,
        benchmarks=tuple(benches), policy=args.policy, vocab=args.vocab,
        opt_flags=tuple(args.opt or ["-Oz"]), thinlto=args.thinlto, pgo=getattr(args, "pgo", False),
        repeats=args.repeats,
        callgrind=not args.no_callgrind,
        rules_file=Path(args.rules) if args.rules else None, publish=not args.no_publish,
        jobs=RunRequest().jobs if args.jobs is None else args.jobs, policy_timeout=args.policy_timeout,
        advisor=args.advisor, build_url=args.build_url, policy_sha256=args.policy_sha256,
        vocab_sha256=args.vocab_sha256,
    )


def parse_run(argv: list[str]) -> argparse.Namespace:
    """`regress run`'s options parsed from `argv` (what follows `mlgo-farm regress run`): a SystemExit when they are
    not `regress run`'s."""
    parser = argparse.ArgumentParser(prog="mlgo-farm regress run", add_help=False)
    parser.add_argument("--history")
    parser.add_argument("--json", action="store_true")
    add_options(parser)
    return parser.parse_args(argv)
