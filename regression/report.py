"""A report per run: text summary, HTML page, PNG plots and JSON, stored with the run and publishable.

The table has one row per (subject, metric): heuristic value, policy value, delta %, the verdict
against the heuristic of the same run and the verdict against the previous good run. Plots: the
per-module size deltas of this run, and the policy/heuristic ratio over this builder's runs.
"""

from __future__ import annotations

import html
import json
import math
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from farm import plots
from farm.atomic import atomic_dir
from farm.numeric import geomean
from farm.objectstore import ObjectStore
from regression import metrics
from regression.build import build_configuration
from regression.history import History, Run
from regression.metrics import TEXT_SIZE
from regression.rules import HEURISTIC_BASELINE, PREVIOUS_BASELINE, Comparison, RunVerdict

FILES = {"index.html": "text/html; charset=utf-8", "summary.txt": "text/plain; charset=utf-8",
         "results.json": "application/json", "size_deltas.png": "image/png", "ratio_history.png": "image/png"}
MAX_MODULE_BARS = 40


@dataclass(frozen=True)
class Row:
    subject: str
    kind: str
    metric: str
    heuristic: float | None
    policy: float
    delta_pct: float | None
    verdict: str
    gating: bool
    previous: float | None = None
    previous_delta_pct: float | None = None
    previous_verdict: str | None = None


def table_rows(comparisons: list[Comparison]) -> list[Row]:
    """Merge the two baselines of each (subject, metric) into one row; gating rows first."""
    by_key: dict[tuple[str, str], dict[str, Comparison]] = defaultdict(dict)
    for c in comparisons:
        by_key[(c.subject, c.metric)][c.baseline] = c
    rows = []
    for (subject, metric), cs in by_key.items():
        h, p = cs.get(HEURISTIC_BASELINE), cs.get(PREVIOUS_BASELINE)
        main = h or p
        rows.append(Row(subject, main.kind, metric, h.base_value if h else None, main.value,
                        h.delta_pct if h else None, h.verdict if h else "-", any(c.gating for c in cs.values()),
                        p.base_value if p else None, p.delta_pct if p else None, p.verdict if p else None))
    return sorted(rows, key=lambda r: (r.kind == "module", r.subject, r.metric))


def _num(v: float | None, metric: str = "") -> str:
    return metrics.get(metric).format(v)


def _pct(v: float | None) -> str:
    return "-" if v is None else ("inf" if math.isinf(v) else f"{v:+.2f}%")


def _text_table(rows: list[Row]) -> list[str]:
    head = ("subject", "metric", "heuristic", "policy", "delta", "verdict", "vs previous good")
    cells = [head] + [(r.subject, r.metric, _num(r.heuristic, r.metric), _num(r.policy, r.metric), _pct(r.delta_pct),
                       r.verdict + (" *" if r.gating and r.verdict == "regressed" else ""),
                       "-" if r.previous_verdict is None else f"{r.previous_verdict} ({_pct(r.previous_delta_pct)})")
                      for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    return ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cell, widths, strict=True)))
            .rstrip() for cell in cells]


#: Short names of the metrics in one-line results ("zlib text +1.39% REGRESSION"); others by their label.
SHORT = {TEXT_SIZE.name: "text", "instructions": "Ir", "wall_time": "wall", "compile_time": "compile"}


def short(metric: str) -> str:
    return SHORT.get(metric) or metrics.get(metric).label


def _worse(metric: str, delta: float) -> float:
    """`delta` (%) signed so that larger is worse, whatever the metric's direction."""
    return delta if metrics.get(metric).direction == "lower" else -delta


def headline(rows: list[Row], verdict: str, skipped: list = (), say_verdict: bool = True) -> str:
    """The run in one line, as the Buildbot step shows it: "zlib text +1.39% REGRESSION", "zlib text -0.20% ok".

    A regression names its worst gating row (against the heuristic, or the previous run when only that
    regressed) and how many more regressed; a good run the worst gating row of each gating metric, so the
    line says how close the policy came to regressing. A wrong output is named before any number.
    """
    word = ("REGRESSION" if verdict == RunVerdict.REGRESSION else verdict) if say_verdict else ""
    wrong = [s.subject for s in skipped if s.reason.startswith("wrong output")]
    bad = [(r.subject, r.metric, d, base) for r in rows if r.gating
           for d, v, base in ((r.delta_pct, r.verdict, ""), (r.previous_delta_pct, r.previous_verdict, " vs previous"))
           if v == "regressed" and d is not None]
    bad.sort(key=lambda b: -_worse(b[1], b[2]))
    if wrong:
        more = f" (+{len(wrong) - 1} more)" if len(wrong) > 1 else ""
        return f"wrong output {wrong[0]}{more} {word}".rstrip()
    if verdict == RunVerdict.REGRESSION and bad:
        subject, metric, d, base = bad[0]
        more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
        return f"{subject} {short(metric)} {_pct(d)}{base}{more} {word}".rstrip()
    worst: dict[str, Row] = {}
    for r in (r for r in rows if r.gating and r.delta_pct is not None and not math.isinf(r.delta_pct)):
        if r.metric not in worst or _worse(r.metric, r.delta_pct) > _worse(r.metric, worst[r.metric].delta_pct):
            worst[r.metric] = r
    parts = [f"{r.subject} {short(r.metric)} {_pct(r.delta_pct)}" for m in metrics.METRICS if (r := worst.get(m))]
    return f"{', '.join(parts[:3]) or 'nothing gating compared'} {word}".rstrip()


def _header(run: Run, verdict: str) -> list[str]:
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(run.started))
    return [f"mlgo-farm regression run {run.run_id} on builder {run.builder}: {verdict.upper()}",
            f"started {when}; LLVM {run.llvm_version or '?'} ({run.llvm_label});"
            f" policy {run.policy_id}; vocabulary {run.vocab_version or 'none'};"
            f" build {build_configuration(run.config)}"]


def summary_text(run: Run, verdict: str, rows: list[Row], skipped: list, link: str | None = None,
                 modules: bool = False) -> str:
    """The text summary (also the alert body): gating rows, other non-module rows, then skips."""
    shown = [r for r in rows if modules or r.kind != "module"]
    lines = [*_header(run, verdict), ""]
    lines += _text_table(shown) if shown else ["(no measurements)"]
    hidden = len(rows) - len(shown)
    if hidden:
        changed = sum(r.verdict in ("regressed", "improved") for r in rows if r.kind == "module")
        lines.append(f"({hidden} per-module rows in the report, {changed} of them changed)")
    lines.append("* gating regression (decides the run's verdict)")
    if skipped:
        lines += ["", f"Skipped ({len(skipped)}):"] + [f"  {s.subject} [{s.variant}]: {s.reason}" for s in skipped]
    if link:
        lines += ["", f"Report: {link}"]
    return "\n".join(lines) + "\n"


def _links(history: History, run: Run, web: Callable[[str], str] | None) -> list[tuple[str, str, str]]:
    """(what, text, URL) of the pages a reader goes on to: the build, the builder's runs, the policy and vocabulary
    versions, the previous run's and the previous good run's reports (dashboard URLs from `web`)."""
    out = []
    if run.config.get("build_url"):
        out.append(("build", "the Buildbot build", run.config["build_url"]))
    if web is None:
        return out
    out.append(("runs", f"every run of {run.builder}, trends", web(f"regression/{run.builder}/")))
    if run.config.get("policy_version"):
        advisor = run.config.get("advisor") or "inline"
        out.append(("policy", run.config["policy_version"], web(f"policies/{advisor}/{run.config['policy_version']}/")))
    if run.vocab_version and not run.vocab_version.startswith("sha256-"):
        out.append(("vocabulary", run.vocab_version, web(f"vocab/ir/{run.vocab_version}/")))
    for what, before in (("previous run", history.previous_run(run)),
                         ("previous good run", history.previous_run(run, verdict=RunVerdict.OK))):
        if before is not None:
            out.append((what, f"{before.run_id} ({before.verdict or before.status})",
                        web(f"store/{report_prefix(before.builder, before.run_id)}/index.html")))
    return out


def _html(run: Run, verdict: str, rows: list[Row], skipped: list, links: list[tuple[str, str, str]] = ()) -> str:
    e = html.escape
    color = {"regressed": "#c62828", "improved": "#2e7d32"}
    body = [f"<h1>{e(_header(run, verdict)[0])}</h1>", f"<p>{e(_header(run, verdict)[1])}</p>"]
    if links:
        body.append('<dl id="links">' + "".join(f'<dt>{e(what)}</dt><dd><a href="{e(url, quote=True)}">{e(text)}'
                                               "</a></dd>" for what, text, url in links) + "</dl>")
    body += ['<p><img src="size_deltas.png" alt="per-module size deltas"> '
             '<img src="ratio_history.png" alt="policy/heuristic ratio over runs"></p>',
             '<table id="results"><tr><th>subject</th><th>kind</th><th>metric</th><th>unit</th><th>heuristic</th>'
             "<th>policy</th><th>delta</th><th>verdict</th><th>previous good</th><th>vs previous</th></tr>"]
    for r in rows:
        style = f' style="color:{color[r.verdict]}"' if r.verdict in color else ""
        gate = " (gating)" if r.gating and r.verdict == "regressed" else ""
        body.append(
            f"<tr><td>{e(r.subject)}</td><td>{e(r.kind)}</td><td>{e(r.metric)}</td>"
            f"<td>{e(metrics.get(r.metric).unit)}</td><td>{_num(r.heuristic, r.metric)}</td>"
            f"<td>{_num(r.policy, r.metric)}</td><td>{_pct(r.delta_pct)}</td>"
            f"<td{style}>{e(r.verdict)}{gate}</td><td>{_num(r.previous, r.metric)}</td>"
            f"<td>{e(r.previous_verdict or '-')} {_pct(r.previous_delta_pct)}</td></tr>")
    body.append("</table>")
    if skipped:
        body.append(f"<h2>Skipped ({len(skipped)})</h2><ul>")
        body += [f"<li>{e(s.subject)} [{e(s.variant)}]: {e(s.reason)}</li>" for s in skipped]
        body.append("</ul>")
    if run.config.get("reproduce"):
        body.append(f'<h2>Reproduce</h2><pre id="reproduce">{e(run.config["reproduce"])}</pre>')
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child{text-align:left}"
             "img{max-width:48%;vertical-align:top}dl{display:grid;grid-template-columns:max-content auto;gap:0 1em}"
             "dd{margin:0}pre{background:#f5f5f5;padding:6px 10px;overflow-x:auto}")
    return ('<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">'
            f"<title>{e(run.run_id)} {e(run.builder)}</title>"
            f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")


def ratio_history(history: History, run: Run, limit: int = 50, verdict: str | None = None
                  ) -> list[tuple[str, str, dict[str, float], Run]]:
    """Per complete run (and this one, with `verdict`) up to `run`: (run id, verdict, {series: ratio}, the run)."""
    out = []
    for r in history.runs(run.builder, limit=limit, upto_seq=run.seq):
        if r.status != "complete" and r.seq != run.seq:
            continue
        vals: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
        kinds = {}
        for m in history.measurements(r):
            vals[(m.subject, m.metric)][m.policy] = m.value
            kinds[m.subject] = m.kind
        series: dict[str, float] = {}
        for metric in metrics.METRICS.values():
            if metric.summary == "total":  # one sum over the gating subjects (binaries and corpus totals)
                pairs = [v for (s, mt), v in vals.items() if mt == metric.name and kinds[s] in metric.gating
                         and {"heuristic", "policy"} <= set(v)]
                if pairs and sum(v["heuristic"] for v in pairs) > 0:
                    series[f"{metric.label} (binaries + corpus)"] = (sum(v["policy"] for v in pairs)
                                                         / sum(v["heuristic"] for v in pairs))
            elif metric.summary == "geomean":
                ratios = [v["policy"] / v["heuristic"] for (_, mt), v in vals.items() if mt == metric.name
                          and {"heuristic", "policy"} <= set(v) and v["heuristic"] > 0 and v["policy"] > 0]
                if ratios:
                    series[f"{metric.label} (geomean)"] = geomean(ratios)
        out.append((r.run_id, (verdict if r.seq == run.seq and verdict else r.verdict) or "", series, r))
    return out


def _plot_size_deltas(rows: list[Row], path: Path) -> None:
    mods = [r for r in rows if r.kind == "module" and r.metric == TEXT_SIZE.name and r.delta_pct is not None
            and not math.isinf(r.delta_pct)]
    mods = sorted(sorted(mods, key=lambda r: -abs(r.delta_pct))[:MAX_MODULE_BARS], key=lambda r: r.delta_pct)
    fig, ax = plots.subplots(9, max(3.0, 0.28 * len(mods) + 1.5))
    if mods:
        ax.barh([r.subject for r in mods], [r.delta_pct for r in mods],
                color=["#c62828" if r.delta_pct > 0 else "#2e7d32" for r in mods])
        ax.axvline(0, color="black", linewidth=0.8)
        ax.tick_params(axis="y", labelsize=8)
        ax.set_xlabel(".text size change, policy vs heuristic (%)")
        n_mod = sum(r.kind == "module" and r.metric == TEXT_SIZE.name for r in rows)
        extra = f" ({len(mods)} largest of {n_mod})" if n_mod > len(mods) else ""
        ax.set_title(f"Per-module size deltas{extra}")
    else:
        ax.text(0.5, 0.5, "no per-module sizes in this run", ha="center", va="center")
        ax.set_axis_off()
    plots.save_png(fig, path)


def _plot_ratio_history(points: list[tuple[str, str, dict[str, float], Run]], path: Path) -> None:
    """The policy/heuristic ratios over time (farm/plots.py's trend: where the policy changed marked)."""
    fig, ax = plots.subplots(9, 4.5)
    labels = sorted({k for _, _, s, _ in points for k in s})
    lines = [plots.Line(label, tuple((r.started, s[label]) for _, _, s, r in points if label in s))
             for label in labels]
    bad = [(r.started, v) for _, verdict, s, r in points if verdict == RunVerdict.REGRESSION for v in s.values()]
    plots.trend(ax, lines, changes=plots.policy_changes([(r.started, r.policy_id) for *_, r in points]),
                regressed=bad, baseline=1.0)
    ax.set_ylabel("policy / heuristic (lower is better)")
    ax.set_title("Policy/heuristic ratio over time" + (" (red: regression)" if bad else ""))
    plots.save_png(fig, path)


def render(history: History, run: Run, verdict: str, out_dir: Path, link: str | None = None,
           web: Callable[[str], str] | None = None) -> Path:
    """Write the report of `run` into `out_dir` (replaced as a whole) and return it; `web` gives the dashboard's
    URL of a path (`[buildbot] web_url`) for the links to the run's policy, vocabulary and previous runs."""
    rows = table_rows(history.verdicts(run))
    skipped = history.skipped(run)
    points = ratio_history(history, run, verdict=verdict)
    with atomic_dir(Path(out_dir), "results.json") as tmp:
        (tmp / "summary.txt").write_text(summary_text(run, verdict, rows, skipped, link, modules=True))
        (tmp / "index.html").write_text(_html(run, verdict, rows, skipped, _links(history, run, web)))
        (tmp / "results.json").write_text(json.dumps({
            "run_id": run.run_id, "builder": run.builder, "verdict": verdict, "llvm_version": run.llvm_version,
            "llvm_commit": run.llvm_commit,
            "llvm_package": run.llvm_package, "policy_id": run.policy_id, "vocab_version": run.vocab_version,
            # the build configuration and the sha256 of the inputs (and PGO profiles) each benchmark used
            "build": {"opt_flags": run.config.get("opt_flags"), "pgo": bool(run.config.get("pgo")),
                      "thinlto": bool(run.config.get("thinlto")), "inputs": run.config.get("inputs") or {}},
            "rows": [asdict(r) for r in rows], "skipped": [asdict(s) for s in skipped],
            "ratio_history": [{"run_id": i, "verdict": v, "ratios": s, "started": r.started, "policy_id": r.policy_id}
                              for i, v, s, r in points],
        }, indent=1, default=lambda v: None))
        _plot_size_deltas(rows, tmp / "size_deltas.png")
        _plot_ratio_history(points, tmp / "ratio_history.png")
    return Path(out_dir)


def report_prefix(builder: str, run_id: str) -> str:
    return f"regression/{builder}/{run_id}"


def publish(store: ObjectStore, report_dir: Path, builder: str, run_id: str) -> str:
    """Upload the report under `regression/{builder}/{run}/` (index.html last); return its link."""
    prefix = report_prefix(builder, run_id)
    for name in sorted(FILES, key=lambda n: n == "index.html"):
        store.put(f"{prefix}/{name}", (Path(report_dir) / name).read_bytes(), FILES[name])
    return store.link(f"{prefix}/index.html")
