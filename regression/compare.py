"""One regression run: build with the heuristic and with the policy, measure, judge, report, alert.

Results are written to the history as soon as they are measured; a corpus module or a benchmark
that fails in either variant is skipped and listed, never sinking the run. The run completes
(verdict, report link, queued alert) in one transaction before its report is rendered and
published, so a full disk or a dead store never loses a verdict; then queued alerts are delivered.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import re
import secrets
import time
from pathlib import Path

from farm.config import Settings, load_settings
from farm.errors import FarmError, InputError
from farm.toolchain import Toolchain
from regression import benchmarks, benchsource, build, database, measure, outcome, rules, unfinished
from regression.benchmarks import Benchmark
from regression.history import History, Measurement, Run, Skipped
from regression.lineage import fetch_urls, llvm_package, policy_id, resolve_policy, resolve_vocab
from regression.metrics import COMPILE_TIME, INSTRUCTIONS, TEXT_SIZE, WALL_TIME, Metric
from regression.pgo import describe_stale, use_flags
from regression.pgo import train as train_profile
from regression.request import RunRequest, RunResult

log = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_URL = re.compile(r"https?://[^\s/]+/\S{0,1000}")
HEURISTIC, POLICY = build.HEURISTIC, build.POLICY


def history_path(settings: Settings) -> Path | str:
    """Where the history is: `[regression] history_url` (a path: an SQLite file; a URL with `history_password` put
    in when it names none), else the embedded SQLite file under var_dir."""
    configured = settings.regression.history_url.strip()
    if not configured:
        return settings.var_dir / "regression" / "history.sqlite"
    url = database.url_of(configured)
    if database.backend(url) == database.SQLITE:
        return Path(str(url.database))
    if url.password is None and settings.regression.history_password:
        url = url.set(password=settings.regression.history_password)
    return url.render_as_string(hide_password=False)


def open_history(settings: Settings | None = None) -> History:
    return History(history_path(settings or load_settings()))


def run_dir(settings: Settings, builder: str, run_id: str) -> Path:
    return settings.var_dir / "regression" / "runs" / builder / run_id


def check_name(what: str, value: str) -> str:
    if not _NAME.match(value):
        raise InputError(f"{what} {value!r} must be letters, digits, '.', '_' or '-' (at most 100)")
    return value


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(2)


def _check_request(req: RunRequest) -> None:
    """Every input of the run, each wrong one a one-line InputError, before anything is recorded."""
    check_name("builder", req.builder)
    if req.build_url is not None and not _URL.fullmatch(req.build_url):
        raise InputError(f"build URL {req.build_url!r} must be an http(s) URL without spaces")
    if req.run_id is not None:
        check_name("run id", req.run_id)
    if req.corpus is None and not req.benchmarks:
        raise InputError("nothing to compare: give a corpus and/or benchmarks")
    names = [b.name for b in req.benchmarks]
    if len(set(names)) != len(names):
        raise InputError(f"benchmark names must differ: {', '.join(names)}")
    _check_measuring(req)
    from farm.artifacts.remote import check_sha256

    check_sha256(req.policy_sha256)
    check_sha256(req.vocab_sha256)
    if req.corpus is not None:
        check_name("corpus directory name", Path(req.corpus).absolute().name)
        build.corpus_modules(req.corpus)  # fails early on a malformed corpus
        from workers.corpus import check_level, level_of, load

        # a module from another front end carries that level's function attributes: the comparison would measure a
        # build nobody makes at these flags (workers/corpusdir.py DEFAULT_FLAGS)
        check_level(load(req.corpus), level_of(req.opt_flags), f"a comparison at -{level_of(req.opt_flags)}")
    _check_policy(req)


def _check_measuring(req: RunRequest) -> None:
    if isinstance(req.repeats, bool) or not isinstance(req.repeats, int) or req.repeats < 0:
        raise InputError(f"repeats must be a whole number >= 0, not {req.repeats!r}")
    if isinstance(req.jobs, bool) or not isinstance(req.jobs, int) or req.jobs < 1:
        raise InputError(f"jobs must be a whole number >= 1, not {req.jobs!r}")
    t = req.policy_timeout
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t < math.inf):
        raise InputError(f"policy timeout must be a positive number of seconds, not {t!r}")
    if not req.opt_flags:
        raise InputError("no optimization flag given (for example --opt=-Oz)")
    if req.thinlto and req.corpus is not None:
        raise InputError("--thinlto builds benchmarks; a corpus is compiled per file (leave out --corpus or --thinlto)")
    if req.pgo and req.corpus is not None:
        raise InputError("--pgo builds benchmarks from sources; a corpus is bitcode (leave out --corpus or --pgo)")
    bad = [f for f in req.opt_flags if not str(f).startswith("-")]
    if bad:
        raise InputError(f"optimization flags must start with '-' (as --opt=-Oz), not {bad[0]!r}")


def _check_policy(req: RunRequest) -> None:
    """The policy exists, serves the advisor, and a vocabulary goes only with an advisor that takes one."""
    from policyhost import advisors
    from policyhost.launcher import check_vocab
    from policyhost.published import load_policy
    from policyhost.runnable import check_advisor

    if req.advisor is not None:
        advisors.get(req.advisor)
    check_advisor(req.policy, req.advisor_name)
    if req.vocab is not None:
        advisors.check_vocab_applies(req.advisor_name)
    load_policy(req.policy)  # fails early on an unknown policy or a malformed model file
    if req.vocab is not None and not str(req.vocab).startswith("store:"):
        check_vocab(req.vocab)


# --- measuring ------------------------------------------------------------------------------

def _row(metric: Metric, subject: str, kind: str, variant: str, value: float, samples: tuple = (),
         sha256: str | None = None) -> Measurement:
    return Measurement(subject, kind, metric.name, variant, value, samples, metric.unit, sha256)


def _digests(files: list[Path]) -> dict[Path, str]:
    return {f: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def _text_sizes(toolchain: Toolchain, files: list[Path]) -> tuple[dict[Path, int], dict[Path, str]]:
    """`.text` of each file and its sha256; byte-identical files are measured once (the policy's object that is the
    heuristic's, LNT's hash check), the others with llvm-size."""
    digests = _digests(files)
    first: dict[str, Path] = {}
    for f in files:
        first.setdefault(digests[f], f)
    measured = measure.text_sizes(toolchain, list(first.values()))
    return {f: measured[first[digests[f]]] for f in files}, digests


def _sizes(toolchain: Toolchain, builds: dict[str, build.BuildResult], modules: list[str], label: str,
           total_kind: str | None) -> list[Measurement]:
    """Per-module `.text` (subjects `label/module`, with the object's sha256), optionally their total, and the compile
    time."""
    sizes, digests = _text_sizes(toolchain, [builds[v].ok_objects[m].obj for v in builds for m in modules])
    rows = []
    for v, b in builds.items():
        per_module = {m: sizes[b.ok_objects[m].obj] for m in modules}
        rows += [_row(TEXT_SIZE, f"{label}/{m}", "module", v, s, sha256=digests[b.ok_objects[m].obj])
                 for m, s in per_module.items()]
        if total_kind is not None:
            whole = hashlib.sha256("".join(digests[b.ok_objects[m].obj] for m in modules).encode()).hexdigest()
            rows.append(_row(TEXT_SIZE, label, total_kind, v, sum(per_module.values()), sha256=whole))
        secs = [b.ok_objects[m].seconds for m in modules]
        rows.append(_row(COMPILE_TIME, label, "build", v, sum(secs), tuple(secs)))
    return rows


def _failures(builds: dict[str, build.BuildResult], prefix: str) -> list[Skipped]:
    return [Skipped(f"{prefix}{m}", v, reason) for v, b in builds.items() for m, reason in b.failures.items()]


def measure_corpus(toolchain: Toolchain, corpus: Path, variants: list[build.Variant], work: Path,
                   opt_flags: tuple[str, ...], jobs: int) -> tuple[list[Measurement], list[Skipped]]:
    """Per-module and total `.text` of the corpus compiled by each variant, plus compile time.

    Subjects are `corpus:NAME` (total, compile time) and `corpus:NAME/MODULE`.
    """
    corpus = Path(corpus)
    label = "corpus:" + check_name("corpus name", corpus.absolute().name)  # apart from benchmark subjects
    builds = {v.name: build.build_corpus(toolchain, corpus, v, work / v.name, opt_flags, jobs) for v in variants}
    common = [m for m in build.corpus_modules(corpus) if all(m in b.ok_objects for b in builds.values())]
    skipped = _failures(builds, f"{label}/")
    if not common:
        return [], skipped
    return _sizes(toolchain, builds, common, label, "total"), skipped


def measure_benchmark(toolchain: Toolchain, bench: Benchmark, variants: list[build.Variant], work: Path,
                      sources: Path, opt_flags: tuple[str, ...], jobs: int, repeats: int,
                      callgrind: bool, thinlto: bool = False, pgo: bool = False,
                      lineage: dict | None = None) -> tuple[list[Measurement], list[Skipped]]:
    """Sizes, compile time, and per workload callgrind instructions and wall-time samples (`thinlto`: of
    distributed ThinLTO builds, a module's object its backend's; `pgo`: both variants built with the profile of
    the benchmark's training runs, regression/pgo.py). `lineage` gets the sha256 of the measured inputs and, with
    `pgo`, of the training inputs and the profile, under the benchmark's name."""
    root = benchmarks.fetch(bench, sources)
    inputs = work / "inputs"
    facts = {"measurement_sha256": benchmarks.prepare_inputs(bench, root, inputs)}
    if lineage is not None:
        lineage[bench.name] = facts
    profile_flags: list[str] = []
    if pgo:
        profile = train_profile(toolchain, bench, root, work / "pgo", opt_flags, jobs)
        facts.update(profile.lineage())
        profile_flags = use_flags(profile.path)
    # Equal-length build paths: a binary's path length changes the loader's instruction count.
    builds = {v.name: build.build_benchmark(toolchain, bench, root, v, work / f"build{i}", opt_flags, jobs,
                                            thinlto=thinlto, profile_flags=profile_flags)
              for i, v in enumerate(variants)}
    broken = {v: describe_stale(bench, b.error) for v, b in builds.items() if b.error}
    if broken:
        return [], [Skipped(bench.name, v, e) for v, e in broken.items()]
    modules = [o.module for o in builds[HEURISTIC].objects]
    rows = _sizes(toolchain, builds, modules, bench.name, None)
    binaries, bin_digests = _text_sizes(toolchain, [b.binary for b in builds.values()])
    rows += [_row(TEXT_SIZE, bench.name, "binary", v, binaries[b.binary], sha256=bin_digests[b.binary])
             for v, b in builds.items()]
    skipped = []
    for w in bench.workloads:
        subject = f"{bench.name}/{w.name}"
        argvs = {v: (w.argv(b.binary, inputs), w.stdin_path(inputs)) for v, b in builds.items()}
        try:
            outputs = {v: measure.run_program(a, stdin=s, cwd=work, status=w.status).output_sha256
                       for v, (a, s) in argvs.items()}
            if len(set(outputs.values())) > 1:
                skipped.append(Skipped(subject, POLICY, "wrong output: differs from the heuristic build's"))
                continue
            if callgrind:
                # each build `repeats` times, alternating: the spread of one build's counts is the rule's noise
                counts: dict[str, list[float]] = {v: [] for v in argvs}
                for _ in range(max(1, repeats)):
                    for v, (a, s) in argvs.items():
                        counts[v].append(measure.callgrind_instructions(a, stdin=s, cwd=work, status=w.status)[0])
                rows += [_row(INSTRUCTIONS, subject, "workload", v, _median(xs), tuple(xs) if len(xs) > 1 else (),
                              sha256=bin_digests[builds[v].binary]) for v, xs in counts.items()]
            if repeats:
                samples = measure.interleaved_wall_times(argvs, repeats, cwd=work, status=w.status)
                rows += [_row(WALL_TIME, subject, "workload", v, _median(xs), tuple(xs),
                              sha256=bin_digests[builds[v].binary]) for v, xs in samples.items()]
        except FarmError as e:
            skipped.append(Skipped(subject, "both", str(e)))
    return rows, skipped


def _median(xs: list[float]) -> float:
    import statistics

    return statistics.median(xs)


# --- judging --------------------------------------------------------------------------------

def _index(rows: list[Measurement], policy: str) -> dict[tuple[str, str], tuple]:
    return {(m.subject, m.metric): (m.value, m.samples, m.sha256) for m in rows if m.policy == policy}


def previous_baseline(history: History, run: Run) -> Run | None:
    """The run whose policy this one is judged against besides the heuristic.

    A newly published policy version is judged against the previous version's last run, whatever
    its verdict: a version worse than the one before it is a regression even while both lose to
    the heuristic. Otherwise (same policy, or not a published one) the previous good run.
    """
    if run.config.get("bisect"):  # a bisect's re-run is judged against its alert's good run, as the bad run was
        good = run.config["bisect"].get("good_run")
        return history.run(good, run.builder) if good else None
    last = history.previous_run(run)
    if run.config.get("policy_version") and last is not None and last.policy_id != run.policy_id:
        return last
    return history.previous_run(run, verdict=rules.RunVerdict.OK)


def comparisons_for(history: History, run: Run, rows: list[Measurement], rule_set: dict[str, rules.Rule]
          ) -> list[rules.Comparison]:
    """The policy against this run's heuristic and against the previous policy (`previous_baseline`).

    Compile time compares like with like only: the policy build compiles through the launcher and its channel to
    a policy host, the heuristic build runs plain clang, so it is judged against the previous good run's policy
    build (the same launcher), never against the heuristic (both builds' compile times stay in the history).
    """
    kinds = {(m.subject, m.metric): m.kind for m in rows}
    new = _index(rows, POLICY)
    same_path = {k: v for k, v in new.items() if k[1] != COMPILE_TIME.name}
    out = rules.compare_values(rule_set, rules.HEURISTIC_BASELINE, _index(rows, HEURISTIC), same_path, kinds)
    good = previous_baseline(history, run)
    if good is not None:
        out += rules.compare_values(rule_set, rules.PREVIOUS_BASELINE,
                                    _index(history.measurements(good, POLICY), POLICY), new, kinds)
    return out


def wrong_outputs(skipped: list[Skipped]) -> list[Skipped]:
    return [s for s in skipped if s.reason.startswith("wrong output")]


# --- the run --------------------------------------------------------------------------------

def run_comparison(req: RunRequest, settings: Settings | None = None, toolchain: Toolchain | None = None,
                   history: History | None = None) -> RunResult:
    """Run one comparison end to end and return its result (raises FarmError only if nothing was measured)."""
    settings = settings or load_settings()
    toolchain = toolchain or Toolchain.from_settings(settings)
    toolchain.check("clang", "llvm-size")
    spec = req.policy
    req, fetched = fetch_urls(req, settings.var_dir / "cache" / "url")
    req, published = resolve_policy(req)
    published = published or fetched
    _check_request(req)
    rule_set = rules.load_rules(req.rules_file)
    history = history or open_history(settings)
    unfinished.settle(history, settings)  # runs this host could not mark failed while the history was down

    vocab, vocab_id = resolve_vocab(req.vocab, req.advisor_name)
    run_id = req.run_id or new_run_id()
    bench_keys = benchsource.publish_local(req, settings)
    run = history.start_run(
        run_id, req.builder, llvm_version=toolchain.version, llvm_commit=toolchain.commit,
        llvm_package=llvm_package(toolchain), policy_id=published or policy_id(req.policy), vocab_version=vocab_id,
        config={"corpus": str(req.corpus) if req.corpus else None, "benchmarks": [b.name for b in req.benchmarks],
                "policy": spec, "policy_version": published, "vocab": str(req.vocab) if req.vocab else None,
                "advisor": req.advisor_name, "opt_flags": list(req.opt_flags), "repeats": req.repeats,
                **({"thinlto": True} if req.thinlto else {}), **({"pgo": True} if req.pgo else {}),
                "callgrind": req.callgrind, "build_url": req.build_url,
                **({"bisect": req.bisect} if req.bisect else {}),
                # where a bisect on this host finds the sources the command names by URL (regression/bisectrun.py)
                **({"bench_dirs": dirs} if (dirs := {b.name: str(b.local_dir) for b in req.benchmarks
                                                     if b.local_dir is not None}) else {}),
                # the local benchmarks' sources by content: an input of the run, like the policy (records.inputs_of)
                **({"bench_sources": benchsource.sources_of(req, bench_keys)} if dirs else {}),
                "reproduce": outcome.reproduce_command(req, published, vocab_id, settings.buildbot.dashboard,
                                                      vocab, bench_keys)},
    )
    work = run_dir(settings, req.builder, run_id)
    # the policy build's launcher runs the toolchain of this run too, not `[llvm] bin_dir`'s (a bisect's commit)
    llvm = dataclasses.replace(settings.llvm, bin_dir=str(toolchain.bin_dir))
    variants = [build.heuristic_variant(),
                build.policy_variant(req.policy, vocab, req.policy_timeout, req.advisor_name,
                                     dataclasses.replace(settings, llvm=llvm))]
    try:
        rows, skipped = _measure_all(req, toolchain, variants, work, settings, history, run)
        if not rows:
            reasons = "; ".join(f"{s.subject} [{s.variant}]: {s.reason}" for s in skipped[:3])
            raise FarmError(f"run {run_id}: nothing could be measured ({reasons or 'no subjects'})")
        comparisons = comparisons_for(history, run, rows, rule_set)
        history.add_verdicts(run, comparisons)
        verdict = rules.RunVerdict.REGRESSION if wrong_outputs(skipped) else rules.run_verdict(comparisons)
    except BaseException as e:
        unfinished.fail(history, settings, run, e, work)  # one line naming the run when the history is down
        raise
    return outcome.finish(req, settings, history, run, verdict, comparisons, skipped, work)


def _measure_all(req: RunRequest, toolchain: Toolchain, variants: list[build.Variant], work: Path,
                 settings: Settings, history: History, run: Run) -> tuple[list[Measurement], list[Skipped]]:
    rows: list[Measurement] = []
    skipped: list[Skipped] = []

    def keep(found: tuple[list[Measurement], list[Skipped]]) -> None:
        unfinished.record(history, run, found, work)  # kept on disk when the history refuses them
        rows.extend(found[0])
        skipped.extend(found[1])

    if req.corpus is not None:
        log.info("run %s: corpus %s", run.run_id, req.corpus)
        keep(measure_corpus(toolchain, req.corpus, variants, work / "corpus", req.opt_flags, req.jobs))
    sources = settings.var_dir / "regression" / "sources"
    lineage: dict[str, dict] = {}
    for bench in req.benchmarks:
        log.info("run %s: benchmark %s", run.run_id, bench.name)
        try:
            keep(measure_benchmark(toolchain, bench, variants, work / "bench" / bench.name, sources,
                                   req.opt_flags, req.jobs, req.repeats, req.callgrind, req.thinlto, req.pgo,
                                   lineage))
        except FarmError as e:
            keep(([], [Skipped(bench.name, "both", str(e))]))
        if bench.name in lineage:  # the inputs (and profile) it trained and measured with, in its config
            history.add_config(run, inputs=lineage)
    return rows, skipped
