"""What every page's template may call, wherever its section is: the filters and globals of the app's jinja.

They are registered app-wide by the Blueprint `templating`, which has no routes: a page of one section links into
the others (an alert's runs to their policy's and vocabulary's pages, the overview to the downloads), so these are
no one section's. Links to downloads are paths in the page; an absolute URL (a `curl` line) comes from the
configured `[buildbot] web_url`, never from the request's Host header.
"""

from __future__ import annotations

import time
from typing import Any

from flask import Blueprint, g, url_for
from markupsafe import Markup, escape

from farm.artifacts.kinds import POLICY, VOCAB
from master.dashboard import files, numbers
from master.dashboard.context import current_farm
from policyhost import advisors
from regression import metrics
from regression.build import build_configuration
from vocabgen.layout import SECTIONS, coverage_line

bp = Blueprint("templating", __name__)
bp.add_app_template_filter(numbers.number, "number")
bp.add_app_template_filter(numbers.ratio, "ratio")
bp.add_app_template_filter(numbers.items, "record")
bp.add_app_template_global(build_configuration, "build_configuration")


@bp.app_template_filter("utc")
def utc(t: Any) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t)) if t else "-"


@bp.app_template_global("fmt")
def fmt(metric: str, value: Any) -> str:
    return metrics.get(metric).format(value)


@bp.app_template_filter("coverage")
def coverage(coverage: Any, kind: str | None = None) -> str:
    """The manifest's coverage in LLVM's section order (the index stores it with sorted keys)."""
    if isinstance(coverage, dict) and kind in SECTIONS:
        coverage = {s: coverage[s] for s in (*SECTIONS[kind], *sorted(coverage)) if s in coverage}
    if isinstance(coverage, dict) and any(isinstance(c, dict) and "composed" in c for c in coverage.values()):
        return _composed_line(coverage)
    return coverage_line(coverage) if coverage else "coverage ?"


def _composed_line(coverage: dict[str, Any]) -> str:
    """A MIR version's coverage with its three kinds of vector apart, per section: trained (the triplets mention
    it), composed from trained parts (vocabgen/compose.py) and filler (the section's mean), of the section's total:
    `Opcodes 6,868: 396 trained, 5,908 composed, 564 filler`. A section without counts is `Opcodes ?`."""
    parts = []
    for section, c in coverage.items():
        counts = [c.get(k) if isinstance(c, dict) else None for k in ("trained", "composed", "total")]
        if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in counts):
            parts.append(f"{section} ?")
            continue
        trained, composed, total = counts
        parts.append(f"{section} {total:,}: {trained:,} trained, {composed:,} composed, "
                     f"{max(total - trained - composed, 0):,} filler")
    return "; ".join(parts)


@bp.app_template_global("store_url")
def store_url(key: str, external: bool = False) -> str:
    """A link to a download: a path in the page, or the configured address for a `curl` line (never the Host)."""
    return current_farm().public_url(key) if external else url_for("downloads.download", key=key)


@bp.app_template_global("report_link")
def report_link(run) -> str | None:
    """The run's regression report in the store, when the builder published one."""
    key = f"regression/{run.builder}/{run.run_id}/index.html"
    try:
        files.allowed(key)
        if current_farm().store.exists(key):
            return store_url(key)
    except files.NotServed:
        return None
    return None


def _listed(root: str) -> dict[str, str]:
    """version -> its group (kind, advisor) in `root`'s index, read once per request (a page links many runs)."""
    cache = g.setdefault("listed", {})
    if root not in cache:
        group = {VOCAB.root: VOCAB.group, POLICY.root: POLICY.group}[root]
        cache[root] = {str(v["version"]): str(v.get(group)) for v in files.versions(current_farm().store, root)
                       if isinstance(v.get("version"), str)}
    return cache[root]


@bp.app_template_global("policy_link")
def policy_link(run) -> Markup:
    """The run's policy, linked to its version page when the farm published it (else its name)."""
    version = run.config.get("policy_version") or run.policy_id
    advisor = run.config.get("advisor") or advisors.DEFAULT
    if not version or _listed(POLICY.root).get(version) != advisor:
        return escape(run.policy_id or "-")
    return Markup('<a href="{}">{}</a>').format(url_for("policies.policy_version", advisor=advisor, version=version),
                                                 version)


@bp.app_template_global("vocab_link")
def vocab_link(run) -> Markup:
    """The run's vocabulary, linked to its version page when the farm published it (else its name)."""
    kind = _listed(VOCAB.root).get(run.vocab_version or "")
    if kind not in SECTIONS:
        return escape(run.vocab_version or "-")
    return Markup('<a href="{}">{}</a>').format(url_for("vocab.vocab_version", kind=kind, version=run.vocab_version),
                                                 run.vocab_version)
