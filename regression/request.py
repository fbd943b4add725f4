"""What a comparison is asked (`RunRequest`) and what it answers (`RunResult`).

Their own module, below compare.py (which runs them), lineage.py (which resolves a request's policy and
vocabulary) and outcome.py (which records, reports and alerts a result), so none of those imports another
through them (tests/test_layout.py: no file circles).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from regression import rules
from regression.benchmarks import Benchmark
from regression.history import Run, Skipped


@dataclass(frozen=True)
class RunRequest:
    """What to compare: a corpus and/or benchmarks, the policy (and vocabulary), how to measure."""

    builder: str = "local"
    run_id: str | None = None
    corpus: Path | None = None
    benchmarks: tuple[Benchmark, ...] = ()
    policy: str = "heuristic"
    vocab: str | Path | None = None  # a vocabulary JSON, or store:VERSION (store:latest) published by the farm
    opt_flags: tuple[str, ...] = ("-Oz",)
    #: benchmarks built as distributed ThinLTO builds (regression/build.py `build_benchmark`): the policy in the
    #: pre-link and in every backend, both variants linked by ld.lld
    thinlto: bool = False
    #: benchmarks built with instrumented PGO (regression/pgo.py): a profile trained on the heuristic's instrumented
    #: build, both variants built with it
    pgo: bool = False
    repeats: int = 5  # wall-time samples, and callgrind counts (at least 1), per variant and workload
    callgrind: bool = True
    rules_file: Path | None = None
    publish: bool = True
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    policy_timeout: float | None = None
    advisor: str | None = None  # a name in policyhost.advisors; default: the one a built-in policy answers
    build_url: str | None = None  # the Buildbot build that ran this comparison (in the alert mail)
    policy_sha256: str | None = None  # what an http(s) URL policy must hash to (else the `.sha256` beside it)
    vocab_sha256: str | None = None  # the same for an http(s) URL vocabulary
    #: a bisect's re-run (regression/bisectrun.py): its alert, the good run it is judged against, what it swapped;
    #: such a run never alerts, never mails and never enters the trend nor another run's baseline
    bisect: dict | None = None

    @property
    def advisor_name(self) -> str:
        from policyhost import advisors

        return advisors.for_policy(str(self.policy), self.advisor).name


@dataclass
class RunResult:
    run: Run
    verdict: str
    comparisons: list[rules.Comparison]
    skipped: list[Skipped]
    report_dir: Path
    report_url: str
    alert: str | None
    #: whether the run queued a mail in the outbox (Celery beat's delivery sends it: regression/alerts/delivery.py)
    queued: bool
    summary: str
    publish_error: str | None = None
    #: the report on the master's dashboard (the local file when it was not published)
    web_url: str | None = None
    #: the run in one line ("zlib text +1.39% REGRESSION"), as the Buildbot step shows it
    headline: str = ""
