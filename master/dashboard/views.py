"""The dashboard's pages: overview, vocabularies (versions, one version, a diff), regression; and, from
views_datasets.py and views_policies.py, the datasets and the policies.

Each page is rendered with jinja2 from what the store's indexes and manifests and the regression
history say, at the time of the request; nothing is cached between requests, so a page never
shows a `latest` the store no longer names.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from flask import Flask, Response, abort, g, jsonify, render_template, request, url_for
from markupsafe import Markup, escape

from farm.artifacts.kinds import POLICY, VOCAB, check_version_name
from farm.errors import FarmError, InputError, first_line
from master.dashboard import files, numbers, trends, views_alerts, views_datasets, views_mail, views_policies, vocabdiff
from policyhost import advisors
from regression import metrics
from regression.alerts.records import AlertStore
from regression.build import build_configuration
from vocabgen.layout import SECTIONS, coverage_line

#: What each kind's vocabulary is read by: the tool lines the download page shows, from a C file `in.c` to the
#: embeddings (tests/master/test_dashboard_vocab_use.py runs every line of a rendered page with LLVM 22).
_BITCODE = ("your code as bitcode", "clang -O2 -c -emit-llvm in.c -o in.bc")
_FLAGS = {
    "ir": [_BITCODE,
           ("opt (print the embeddings)",
            "opt -passes='print<ir2vec>' -ir2vec-vocab-path={path} -disable-output in.bc"),
           ("llvm-ir2vec", "llvm-ir2vec embeddings --ir2vec-vocab-path={path} in.bc"),
           ("clang (for any pass that reads IR2Vec)", "clang -O2 -mllvm -ir2vec-vocab-path={path} -c in.c"),
           # the inliner's flags as the farm passes them (policyhost/advisors.py); Debian's clang has no built-in
           # model, so the inliner asks a policy host (mlgo-farm-cc, or the policy page's standalone host)
           ("the ML inliner's IR2Vec features (a policy host on BASE.in/BASE.out)",
            "clang -Oz " + " ".join(advisors.get("inline").flags("BASE", "{path}")) + " -c in.c")],
    # Not `llc -print-mir2vec`: LLVM 22.1's printer pass crashes (SIGSEGV) (docs/vocabularies.md#which-flags-use-it);
    # llvm-ir2vec embeds MIR written after register allocation (before it, 22.1 crashes on virtual registers).
    "mir": [_BITCODE,
            ("post-allocation MIR", "llc -O2 -stop-after=virtregrewriter in.bc -o in.mir"),
            ("llvm-ir2vec (print the embeddings)",
             "llvm-ir2vec embeddings --mode=mir --mir2vec-vocab-path={path} in.mir"),
            ("clang (for any pass that reads MIR2Vec)", "clang -O2 -mllvm -mir2vec-vocab-path={path} -c in.c")],
}


T = TypeVar("T")


def _kind(kind: str) -> str:
    if kind not in SECTIONS:
        abort(404)
    return kind


def _version(version: str) -> str:
    try:
        return check_version_name(version)
    except InputError:
        abort(404)


def _coverage(coverage: Any, kind: str | None = None) -> str:
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


def _warm_start(record: Any) -> dict[str, Any] | None:
    """The manifest's `warm_start` (vocabgen/warm.py) as the page shows it: `from` a version (`linked` when it is a
    version name, so a page links only what the store may hold) or `from: None` and the reason it started cold;
    None for a version published before the record existed."""
    if not isinstance(record, dict):
        return None
    source = record.get("from")
    try:
        linked = isinstance(source, str) and bool(check_version_name(source))
    except InputError:
        linked = False
    return {**record, "from": source if isinstance(source, str) else None, "linked": linked}


def _vocab_rows(farm, kind: str, validated: bool = False) -> list[dict[str, Any]]:
    """The index's entries of `kind`, newest first; `validated` adds the LLVM version that validated each
    (from its manifest: the index does not carry it)."""
    rows = [v for v in files.versions(farm.store, "vocab") if v.get("kind") == kind]
    rows.sort(key=lambda v: str(v.get("published_at")), reverse=True)
    if validated:
        rows = [{**v, "validated_with": files.validated_with(farm.store, "vocab", kind, str(v.get("version")))}
                for v in rows]
    return rows


def _served_and_candidates(farm, kind: str) -> list[dict[str, Any]]:
    """What `latest/vocab.json` serves (the version its pointer names), then the candidates published after it:
    the overview's rows, so the version beside the "latest" link is the one the link gives."""
    rows = _vocab_rows(farm, kind)
    try:
        served = files.latest_version(farm.store, "vocab", kind)
    except files.NotServed:
        served = None
    latest = next((v for v in rows if v.get("version") == served), None)
    newer = [v for v in rows if v is not latest and v.get("state") == "candidate" and
             (latest is None or str(v.get("published_at")) > str(latest.get("published_at")))]
    return ([{**latest, "served": True}] if latest else []) + newer


def _unit(history: Any, points: list, subject: str, metric: str, default: str) -> str:
    """The unit a trend's newest run recorded for (subject, metric): the page and its JSON say the same."""
    return next((s.unit for s in trends.series_of(history, points[-1].run, modules=True)
                 if (s.subject, s.metric) == (subject, metric)), default)


def _section(notes: dict[str, str], name: str, compute: Callable[[], T], empty: T) -> T:
    """`compute()`, or `empty` with the one line why under `notes[name]` when what it reads cannot be read."""
    try:
        return compute()
    except FarmError as e:  # CorruptObject, StoreError (the store or the history down), the history's own errors
        notes[name] = first_line(e)
        return empty


def register(app: Flask, farm) -> None:
    """Add the pages to `app`."""
    days = farm.settings.alerts.triage_days
    app.jinja_env.filters["coverage"] = _coverage
    app.jinja_env.globals["fmt"] = lambda metric, value: metrics.get(metric).format(value)
    app.jinja_env.filters["number"] = numbers.number
    app.jinja_env.filters["ratio"] = numbers.ratio
    app.jinja_env.filters["record"] = numbers.items
    app.jinja_env.filters["utc"] = lambda t: time.strftime("%Y-%m-%d %H:%M", time.gmtime(t)) if t else "-"

    def store_url(key: str, external: bool = False) -> str:
        """A link to a download: a path in the page, or the configured address for a `curl` line (never the Host)."""
        return farm.public_url(key) if external else url_for("download", key=key)

    app.jinja_env.globals["store_url"] = store_url
    views_datasets.register(app, farm)
    views_policies.register(app, farm)
    views_alerts.register(app, farm)
    views_mail.register(app, farm)

    def overview() -> dict[str, Any]:
        """The front page's sections, each on its own: one that cannot be read (a corrupt or unreadable index of
        its kind, the store or the history down) is left empty with one line saying why (`notes`), and the page
        shows the others."""
        notes: dict[str, str] = {}
        kinds = _section(notes, "vocab", lambda: {k: _served_and_candidates(farm, k) for k in SECTIONS}, {})

        def policy_states() -> dict[str, int]:
            states = [str(v.get("state") or "") for v in files.versions(farm.store, "policies")]
            # by state, as `policy list` shows them: a candidate held back by its size check is not "published" to
            # a reader who then finds `latest/` empty
            return {"latest": states.count("latest"), "candidates": states.count("candidate"), "all": len(states)}

        policies = _section(notes, "policies", policy_states, {"latest": 0, "candidates": 0, "all": 0})

        def history() -> tuple[dict[str, Any], dict[str, Any]]:
            found = trends.open_history(farm.history_path)
            builders = {b: runs[-1] for b, runs in trends.by_builder(found, limit=1).items()}
            counts = AlertStore(found).counts(days) if found is not None else {"untriaged": 0, "overdue": 0}
            return builders, counts

        builders, counts = _section(notes, "history", history, ({}, {"untriaged": 0, "overdue": 0}))
        llvm = farm.settings.llvm
        return {"kinds": kinds, "builders": builders, "policies": policies, "flower_url": farm.flower_url,
                "polled": llvm.repo.strip() if llvm.polls else None,
                "counts": {**counts, "days": f"{days:g}"}, "notes": notes}

    @app.route("/index.html")
    def fragment():
        """What the Buildbot UI shows under "Farm" (inserted into its page: no <html>, no script)."""
        return render_template("fragment.html", **overview())

    @app.route("/")
    def home():
        return render_template("home.html", **overview())

    @app.route("/vocab/")
    def vocab_index():
        return render_template("vocab_index.html", kinds={k: _vocab_rows(farm, k, validated=True) for k in SECTIONS})

    @app.route("/vocab/<kind>/<version>/")
    def vocab_version(kind: str, version: str):
        kind, version = _kind(kind), _version(version)
        if version == "latest":
            if not farm.store.exists(VOCAB.latest_key(kind)):
                return views_policies.no_latest(farm, VOCAB, kind, "vocab_version", kind=kind)
            try:
                version = files.latest_version(farm.store, "vocab", kind)
            except files.NotServed:
                abort(404)
        try:
            manifest = files.manifest(farm.store, "vocab", kind, version)
        except files.NotServed:
            abort(404)
        entry = next((v for v in _vocab_rows(farm, kind) if v.get("version") == version), {})
        path = f"vocab-{kind}-{version}.json"
        return render_template("vocab_version.html", kind=kind, version=version, m=manifest, entry=entry,
                               corrupt=farm.integrity(f"vocab/{kind}/{version}", VOCAB.files)[VOCAB.files[0]],
                               warm=_warm_start(manifest.get("warm_start")),
                               flags=[(what, cmd.format(path=path)) for what, cmd in _FLAGS[kind]], local=path,
                               others=[v["version"] for v in _vocab_rows(farm, kind) if v.get("version") != version])

    @app.route("/vocab/<kind>/diff")
    def vocab_diff(kind: str):
        kind = _kind(kind)
        listed = [v["version"] for v in _vocab_rows(farm, kind) if isinstance(v.get("version"), str)]
        a = request.args.get("a") or (listed[1] if len(listed) > 1 else "")
        b = request.args.get("b") or (listed[0] if listed else "")
        if not a or not b:
            return render_template("vocab_diff.html", kind=kind, listed=listed, a=a, b=b, d=None, plot=None,
                                   error="fewer than two versions are published")
        a, b = _version(a), _version(b)
        try:
            manifests = [files.manifest(farm.store, "vocab", kind, v) for v in (a, b)]
        except files.NotServed:
            abort(404)

        def compute() -> tuple[vocabdiff.Diff, str | None]:
            try:
                data = [farm.read_verified(f"vocab/{kind}/{v}/vocab.json") for v in (a, b)]
            except files.NotServed:
                abort(404)
            d = vocabdiff.diff(data[0], manifests[0], data[1], manifests[1], (a, b))
            return d, vocabdiff.plot_top(d) if d.comparable else None

        # published versions never change: the diff (and its plot) of two of them is computed once
        d, plot = farm.diffs.get(("vocab", kind, a, manifests[0].get("sha256"), b, manifests[1].get("sha256")),
                                 compute)
        return render_template("vocab_diff.html", kind=kind, listed=listed, a=a, b=b, d=d, error=None,
                               plot=plot, top=d.top())

    @app.route("/regression/")
    def regression_index():
        history = trends.open_history(farm.history_path)
        return render_template("regression_index.html", builders=trends.by_builder(history, limit=20))

    def _runs(builder: str):
        history = trends.open_history(farm.history_path)
        runs = trends.by_builder(history).get(builder)
        if history is None or not runs:
            abort(404)
        return history, runs

    def report_link(run) -> str | None:
        key = f"regression/{run.builder}/{run.run_id}/index.html"
        try:
            files.allowed(key)
            if farm.store.exists(key):
                return store_url(key)
        except files.NotServed:
            return None
        return None

    app.jinja_env.globals["report_link"] = report_link

    def listed(root: str) -> dict[str, str]:
        """version -> its group (kind, advisor) in `root`'s index, read once per request (a page links many runs)."""
        cache = g.setdefault("listed", {})
        if root not in cache:
            group = {VOCAB.root: VOCAB.group, POLICY.root: POLICY.group}[root]
            cache[root] = {str(v["version"]): str(v.get(group)) for v in files.versions(farm.store, root)
                           if isinstance(v.get("version"), str)}
        return cache[root]

    def policy_link(run) -> Markup:
        """The run's policy, linked to its version page when the farm published it (else its name)."""
        version = run.config.get("policy_version") or run.policy_id
        advisor = run.config.get("advisor") or advisors.DEFAULT
        if not version or listed(POLICY.root).get(version) != advisor:
            return escape(run.policy_id or "-")
        return Markup('<a href="{}">{}</a>').format(url_for("policy_version", advisor=advisor, version=version),
                                                     version)

    def vocab_link(run) -> Markup:
        kind = listed(VOCAB.root).get(run.vocab_version or "")
        if kind not in SECTIONS:
            return escape(run.vocab_version or "-")
        return Markup('<a href="{}">{}</a>').format(url_for("vocab_version", kind=kind, version=run.vocab_version),
                                                     run.vocab_version)

    app.jinja_env.globals.update(policy_link=policy_link, vocab_link=vocab_link,
                                 build_configuration=build_configuration)

    @app.route("/regression/<builder>/")
    def regression_builder(builder: str):
        history, runs = _runs(builder)
        complete = [r for r in runs if r.status == "complete"]
        newest = complete[-1] if complete else runs[-1]
        return render_template("regression_builder.html", builder=builder, runs=list(reversed(runs)),
                               series=trends.series_of(history, newest, modules=request.args.get("modules") == "1"),
                               good=trends.previous_good(history, runs))

    def _json(data: Any) -> Response:
        resp = jsonify(data)
        resp.headers["Cache-Control"] = "no-cache"
        return resp

    def public(link: str | None) -> str | None:
        """A page link as the absolute URL a script fetches (from `web_url`, like index.json's)."""
        root = url_for("home")  # the app's own prefix ("/plugins/wsgi_dashboards/farm/" where the master mounts it)
        return None if link is None else farm.settings.buildbot.dashboard(link.removeprefix(root))

    @app.route("/regression/index.json")
    def regression_index_json():
        history = trends.open_history(farm.history_path)
        return _json({"format": 1, "builders": {
            b: {"runs": public(url_for("regression_runs_json", builder=b)), "newest": trends.run_json(
                runs[-1], public(report_link(runs[-1])))} for b, runs in trends.by_builder(history, limit=1).items()}})

    @app.route("/regression/<builder>/runs.json")
    def regression_runs_json(builder: str):
        history, runs = _runs(builder)
        good = trends.previous_good(history, runs)
        return _json({"format": 1, "builder": builder, "previous_good": good.run_id if good else None,
                      "series": [{"subject": s.subject, "kind": s.kind, "metric": s.metric, "unit": s.unit,
                                  "trend": public(url_for("regression_trend_json", builder=builder,
                                                          subject=s.subject, metric=s.metric))}
                                 for s in trends.series_of(history, runs[-1], modules=True)],
                      "runs": [trends.run_json(r, public(report_link(r))) for r in reversed(runs)]})

    @app.route("/regression/<builder>/trend.json")
    def regression_trend_json(builder: str):
        history, runs = _runs(builder)
        subject, metric = request.args.get("subject", ""), request.args.get("metric", "")
        points = trends.trend(history, runs, subject, metric)
        if not points:
            abort(404, description=f"no complete run of {builder} measured {subject!r} {metric!r}")
        m = metrics.get(metric)
        good = trends.previous_good(history, runs)
        return _json({"format": 1, "builder": builder, "subject": subject, "metric": metric,
                      "unit": _unit(history, points, subject, metric, m.unit),
                      "better": m.direction, "previous_good": good.run_id if good else None,
                      "points": [trends.point_json(p, public(report_link(p.run))) for p in points]})

    @app.route("/regression/<builder>/trend")
    def regression_trend(builder: str):
        history, runs = _runs(builder)
        subject, metric = request.args.get("subject", ""), request.args.get("metric", "")
        points = trends.trend(history, runs, subject, metric)
        if not points:
            abort(404)
        unit = _unit(history, points, subject, metric, "")
        good = trends.previous_good(history, runs)
        return render_template("regression_trend.html", builder=builder, subject=subject, metric=metric, unit=unit,
                               points=list(reversed(points)), good=good,
                               plot=trends.plot(points, subject, metric, unit, good))
