"""The alert mails' text: on the transition into regression and on recovery, never on every run.

One mail per transition, with what a reader needs to act without logging into the farm: the
build link, the report and the builder's trends on the master's dashboard (HTTP), every regressed
module and benchmark with its values, units and change (the worst 20 and a count), the LLVM
commit or package version, the previous good run, and the command that reproduces the
comparison. Buildbot's own failure mail stays silent for these builds (master/reporters.py).

The message is composed when the run completes and stored in the history's outbox in the same
transaction (regression/alerts/lifecycle.py); delivery is a separate step, Celery beat's
(regression/alerts/delivery.py; or `mlgo-farm regress alerts --flush`), never the run's, that leaves a message the
server would not take queued for the next pass.
"""

from __future__ import annotations

import email.policy
import math
import time
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from farm.config import SMTPConfig
from regression import metrics
from regression.alerts.records import RECOVERY, REGRESSION
from regression.history import Run
from regression.report import headline, table_rows
from regression.rules import HEURISTIC_BASELINE, PREVIOUS_BASELINE, REGRESSED, Comparison

#: Regressed rows an alert lists before it only counts the rest (all of them are in the report).
TOP = 20


@dataclass(frozen=True)
class Facts:
    """What an alert carries besides the run's table: where to look, what came before, how to reproduce."""

    #: the report on the master's dashboard (HTTP), and the builder's runs and trends there
    report_url: str
    history_url: str | None = None
    #: the Buildbot build that ran the comparison (None: run by hand)
    build_url: str | None = None
    #: `mlgo-farm regress run ...` pinned to this run's inputs
    reproduce: str | None = None
    #: the previous good run (for a regression) or the last regressed one (for a recovery), and its report
    before: Run | None = None
    before_url: str | None = None
    #: the alert this transition opened (regression) and its page on the dashboard
    alert_id: int | None = None
    alert_url: str | None = None
    #: the alerts a recovery closes (detected-fixed): (id, page)
    closes: tuple[tuple[int, str], ...] = ()
    #: the alert's group when other builders' alerts with the same change were mailed already: (group id, mates)
    group: tuple[int, tuple[tuple[int, str], ...]] | None = None


def regressed_lines(comparisons: list[Comparison], top: int = TOP) -> list[str]:
    """Every regressed (subject, metric, baseline), gating ones first, worst first, with values and units: the
    first `top`, then how many more. Modules are listed too: a policy that trades modules shows here which ones lost.
    A metric that gates nothing (compile time: the policy build's is mostly the cost of the channel to its policy
    host, which the heuristic build does not pay) is in the report, not here."""
    bad = [c for c in comparisons if c.verdict == REGRESSED and (c.gating or metrics.get(c.metric).gating)]
    if not bad:
        return []

    def worse(c: Comparison) -> float:
        d = math.inf if c.delta_pct is None else c.delta_pct
        return d if metrics.get(c.metric).direction == "lower" else -d

    bad.sort(key=lambda c: (not c.gating, -worse(c), c.subject, c.metric))
    cells = [("subject", "kind", "metric", "against", "was", "now", "change")]
    for c in bad[:top]:
        m = metrics.get(c.metric)
        cells.append((c.subject, c.kind + (" (gating)" if c.gating else ""), c.metric, c.baseline,
                      m.format(c.base_value, unit=True), m.format(c.value, unit=True),
                      "new" if c.delta_pct is None else f"{c.delta_pct:+.2f}%"))
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    lines = [f"Regressed ({len(bad)}" + (f"; the {top} worst shown" if len(bad) > top else "") + "):"]
    lines += ["  " + "  ".join(v.ljust(w) if i < 4 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths,
              strict=True))).rstrip() for row in cells]
    if len(bad) > top:
        lines.append(f"  ... and {len(bad) - top} more regressed rows in the report")
    return lines


def against(comparisons: list[Comparison], before: Run | None) -> str:
    """Which baseline the gating regressions are against: the heuristic of this run, the previous good run, both."""
    bases = {c.baseline for c in comparisons if c.gating and c.verdict == REGRESSED}
    previous = f"the previous good run ({before.run_id})" if before else "the previous good run"
    if bases == {HEURISTIC_BASELINE}:
        return "against LLVM's heuristic (built in the same run)"
    if bases == {PREVIOUS_BASELINE}:
        return f"against {previous}, not against the heuristic"
    if bases:
        return f"against both LLVM's heuristic (built in the same run) and {previous}"
    return "(a wrong output: see below)"


def what_to_do(kind: str, run: Run, facts: Facts) -> list[str]:
    """The reader's next steps, in a few lines."""
    if kind == RECOVERY:
        closes = ", ".join(f"#{n}" for n, _ in facts.closes)
        return ["Nothing: the regression is gone. The report shows what changed." +
                (f" The farm closed alert {closes} as detected-fixed." if closes else "")]
    out = ["Open the report (link at the top) for every row; the regressed rows above are the worst."]
    if facts.alert_id is not None:
        out.append(f"Triage alert #{facts.alert_id} on its page (log in) or with `mlgo-farm regress alert set "
                   f"{facts.alert_id} acknowledged --note TEXT`.")
    if facts.before is None:
        out.append("The builder has no good run before this one: there is nothing to bisect; the rows say where "
                   "the policy loses against LLVM's heuristic.")
    elif facts.before.policy_id != run.policy_id:
        out.append(f"The policy changed since the previous good run ({facts.before.policy_id} -> {run.policy_id}): "
                   "compare the two reports (links above); the new policy's page on the dashboard has its size "
                   "check and training. A forced build with another policy answers \"what if\" without mailing "
                   "this list.")
    else:
        out.append("The policy did not change since the previous good run: look at the LLVM or the benchmark's "
                   "version (lines above) and at the wrong outputs, if any.")
    out.append("The farm mails again only when the builder recovers; the runs and trends page follows it nightly.")
    return out


def _run_line(r: Run) -> str:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(r.started))
    return f"{r.run_id} ({when}; policy {r.policy_id}; LLVM {r.llvm_label})"


def new_message(subject: str, smtp: SMTPConfig) -> EmailMessage:
    """A farm mail with its subject and the headers every one carries (sender, recipients, date, a Message-ID that
    a follow-up can answer)."""
    msg = EmailMessage()
    msg["Subject"] = subject
    msg["From"] = smtp.sender
    msg["To"] = ", ".join(smtp.recipient_list)
    msg["Date"] = formatdate(localtime=False)
    msg["Message-ID"] = make_msgid(domain="mlgo-farm")
    return msg


def compose(kind: str, run: Run, verdict: str, comparisons: list[Comparison], skipped: list, summary: str,
            smtp: SMTPConfig, facts: Facts) -> EmailMessage:
    """The alert email: what changed in one line, the links, the regressed rows with units, what came before,
    the command that reproduces it; then the run's summary table."""
    rows = table_rows(comparisons)
    line = headline(rows, verdict, skipped)
    what = "REGRESSION" if kind == REGRESSION else "recovered"
    msg = new_message(f"[mlgo-farm] {what}: {run.builder}: {headline(rows, verdict, skipped, say_verdict=False)} "
                      f"(run {run.run_id}, policy {run.policy_id})", smtp)
    intro = (f"{run.builder}: the ML policy now regresses {against(comparisons, facts.before)}."
             if kind == REGRESSION else f"{run.builder}: the ML policy no longer regresses; this run is good again.")
    llvm = run.llvm_version or "?"
    if run.llvm_commit:
        llvm += f", commit {run.llvm_commit}"
    if run.llvm_package:
        llvm += f", {run.llvm_package}"
    before_what = "previous good run" if kind == REGRESSION else "last regressed run"
    before = (f"{_run_line(facts.before)}" + (f"\n{'':20}{facts.before_url}" if facts.before_url else "")
              if facts.before else "none (the first run of this builder)")
    lines = [intro, "", f"  {line}", ""]
    if facts.alert_id is not None:
        lines.append(f"Alert:              #{facts.alert_id} (untriaged)" +
                     (f" {facts.alert_url}" if facts.alert_url else ""))
    lines += [f"{'Closes:' if i == 0 else '':<20}alert #{n} (detected-fixed) {url}"
              for i, (n, url) in enumerate(facts.closes)]
    if facts.group is not None:
        mates = ", ".join(f"#{n} ({b})" for n, b in facts.group[1])
        lines.append(f"Group:              #{facts.group[0]}, the same change as alert {mates} (mailed already)")
    lines += [f"Build:              {facts.build_url or 'none (run by hand, not by Buildbot)'}",
              f"Report:             {facts.report_url}"]
    if facts.history_url:
        lines.append(f"Runs and trends:    {facts.history_url}")
    lines += [f"LLVM:               {llvm}",
              f"Policy:             {run.policy_id}; vocabulary {run.vocab_version or 'none'}",
              f"{before_what.capitalize() + ':':<20}{before}", ""]
    if kind == REGRESSION:
        wrong = [s for s in skipped if s.reason.startswith("wrong output")]
        if wrong:
            lines += [f"Wrong output ({len(wrong)}):"] + [f"  {s.subject} [{s.variant}]: {s.reason}" for s in wrong]
            lines.append("")
        listed = regressed_lines(comparisons)
        lines += [*listed, ""] if listed else []
    if facts.reproduce:
        lines += ["Reproduce the comparison locally (with the same LLVM):", f"  {facts.reproduce}", ""]
    lines += ["What to do:", *(f"  {t}" for t in what_to_do(kind, run, facts)), ""]
    lines += ["-- the run's summary --", summary]
    msg.set_content("\n".join(lines))
    return msg


@dataclass(frozen=True)
class Member:
    """One alert of a group, as its summary mail lists it."""

    alert_id: int
    builder: str
    run: Run
    good_run: str | None
    headline: str
    alert_url: str
    report_url: str


def compose_group(group_id: int, members: list[Member], inputs: str, smtp: SMTPConfig) -> EmailMessage:
    """One mail for the alerts of several builders that regressed after the same change of inputs (`inputs`, e.g.
    `policy p1 -> p2`), instead of one mail per builder: each alert with its headline and links."""
    builders = ", ".join(m.builder for m in members)
    msg = new_message(f"[mlgo-farm] REGRESSION: {len(members)} builders after the same change ({inputs}): "
                      f"alert group #{group_id}", smtp)
    lines = [f"{len(members)} regression builders ({builders}) regressed after the same change of their inputs: "
             f"{inputs}. One mail for the group, alert group #{group_id}; each alert's page has its runs, rows "
             "and states.", ""]
    for m in members:
        lines += [f"  #{m.alert_id} {m.builder}: {m.headline}",
                  f"      run {m.run.run_id} (policy {m.run.policy_id}; LLVM {m.run.llvm_label}), previous good run "
                  f"{m.good_run or 'none'}",
                  f"      alert:  {m.alert_url}", f"      report: {m.report_url}", ""]
    lines += ["What to do:",
              "  The change above is the first suspect for every builder of the group: compare each alert's two runs.",
              "  Triage each alert on its page (log in) or with `mlgo-farm regress alert set ID STATE --note TEXT`.",
              "  The farm mails again when a builder recovers."]
    msg.set_content("\n".join(lines))
    return msg


def to_bytes(msg: EmailMessage) -> bytes:
    """The message as SMTP wants it on the wire (CRLF line ends), for the outbox."""
    return msg.as_bytes(policy=email.policy.SMTP)
