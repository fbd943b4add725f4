"""An alert's life at the end of a run: when a run opens one, joins another builder's group, records an improvement
or closes the builder's open alerts (detected-fixed), and its mail queued in the run's own transaction.

A run's completion (regression/outcome.py `finish`) asks `transition` what changed for its builder, then hands
`alert_record`'s recorder to History.complete_run, which calls it in the transaction that marks the run complete:
the verdict, the alert (regression/alerts/records.py) and its mail in the outbox (regression/alerts/outbox.py) are
recorded together or not at all, and completions of one builder take turns, so one transition opens one alert. The
mail goes out later, on Celery beat's pass (regression/alerts/delivery.py); a run never waits on the mail server.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable

from farm.config import Settings
from regression import report, rules
from regression.alerts import mailtext, outbox
from regression.alerts.mailtext import Facts
from regression.alerts.records import RECOVERY, REGRESSION, Alert, AlertStore
from regression.database import Tx
from regression.history import History, Run, Skipped

log = logging.getLogger(__name__)


def improved(comparisons: list[rules.Comparison]) -> bool:
    """Whether a good run is better than the previous run it is judged against beyond the rules' noise: a gating
    row improved against it and none regressed (recorded as an improvement, never mailed)."""
    previous = [c for c in comparisons if c.baseline == rules.PREVIOUS_BASELINE and c.gating]
    return any(c.verdict == rules.IMPROVED for c in previous) and not any(c.verdict == rules.REGRESSED
                                                                           for c in previous)


def transition(history: History, run: Run, verdict: str) -> str | None:
    """REGRESSION when this run regresses after a good (or no) run, RECOVERY after a regression, else None."""
    previous = history.previous_run(run)
    before = previous.verdict if previous else "ok"
    if verdict == "regression" and before != "regression":
        return REGRESSION
    if verdict == "ok" and before == "regression":
        return RECOVERY
    return None


def alert_facts(settings: Settings, history: History, run: Run, kind: str | None, report_url: str) -> Facts:
    """The links and lineage an alert carries besides the table."""
    bb = settings.buildbot
    if kind == REGRESSION:
        before = history.previous_run(run, verdict=rules.RunVerdict.OK)
    else:
        before = history.previous_run(run, verdict=rules.RunVerdict.REGRESSION)
    return Facts(
        report_url=report_url, history_url=bb.dashboard(f"regression/{run.builder}/"),
        build_url=run.config.get("build_url"), reproduce=run.config.get("reproduce"), before=before,
        before_url=bb.dashboard(f"store/{report.report_prefix(before.builder, before.run_id)}/index.html")
        if before else None)


def alert_record(settings: Settings, history: History, run: Run, verdict: str, kind: str | None,
                 comparisons: list[rules.Comparison], skipped: list[Skipped], summary: str, web: str
                 ) -> Callable[[Tx], None]:
    """What the run's completion records of alerts, in its transaction: a transition into regression opens an alert,
    a good run closes the builder's open ones (detected-fixed), an improvement is recorded and not mailed; the mail
    of a transition, which names the alert it opens or those it closes, is queued in the outbox."""
    from regression.bisectllvm import commit_order

    store = AlertStore(history, commit_order(settings))  # LLVM revision ranges that overlap group their alerts
    facts = alert_facts(settings, history, run, kind, web) if kind is not None else None
    good = history.previous_run(run, verdict=rules.RunVerdict.OK)
    better = kind is None and verdict == rules.RunVerdict.OK and improved(comparisons)
    if kind is not None and not settings.smtp.recipient_list:
        log.warning("run %s: %s alert not sent: no recipients configured ([smtp] recipients)", run.run_id, kind)

    def record(db: Tx) -> None:
        nonlocal facts
        page = settings.buildbot.dashboard
        to = settings.smtp.recipient_list
        hold = None
        if kind == REGRESSION and facts is not None:
            if store.open_of(db, run.builder):
                return  # another run of the builder, completed meanwhile, opened and mailed this transition
            alert = store.open_regression(db, run, facts.before)
            facts = dataclasses.replace(facts, alert_id=alert.id, alert_url=page(f"alerts/{alert.id}/"))
            if to and alert.group_id is not None:
                if _summarised(settings, history, db, alert, run, comparisons, skipped):
                    return  # the group's mail, still queued, now tells of this alert too
                mates = tuple((m.id, m.builder) for m in store.in_group(db, alert.group_id) if m.id != alert.id)
                facts = dataclasses.replace(facts, group=(alert.group_id, mates))
            if settings.alerts.group_wait > 0:
                hold = time.time() + settings.alerts.group_wait * 60
        elif verdict == rules.RunVerdict.OK:
            closed = store.detect_fixed(db, run)
            if facts is not None:
                facts = dataclasses.replace(facts, closes=tuple((a.id, page(f"alerts/{a.id}/")) for a in closed))
            if better:
                store.record_improvement(db, run, good)
        if kind is None or facts is None or not to:
            return
        msg = mailtext.compose(kind, run, verdict, comparisons, skipped, summary, settings.smtp, facts)
        outbox.put(db, outbox.Mail(run.run_id, run.builder, kind, settings.smtp.sender, to, mailtext.to_bytes(msg),
                                   facts.alert_id, hold))

    return record


def _summarised(settings: Settings, history: History, db: Tx, alert: Alert, run: Run,
                comparisons: list[rules.Comparison], skipped: list[Skipped]) -> bool:
    """When the mail of `alert`'s group is still queued (held for its mates, or not delivered yet), rewrite it into
    one summary of every alert of the group, this one included; False when it went out already."""
    queued = outbox.queued_of_group(db, alert.group_id)
    if queued is None:
        return False
    page = settings.buildbot.dashboard
    members, shared = [], None
    for a in AlertStore.in_group(db, alert.group_id):
        this = a.id == alert.id
        bad = run if this else history.run(a.bad_run, a.builder)
        rows = report.table_rows(comparisons if this else history.verdicts(bad))
        line = report.headline(rows, rules.RunVerdict.REGRESSION, skipped if this else history.skipped(bad),
                               say_verdict=False)
        members.append(mailtext.Member(a.id, a.builder, bad, a.good_run, line,
                                       page(f"alerts/{a.id}/"),
                                       page(f"store/{report.report_prefix(a.builder, a.bad_run)}/index.html")))
        common = {k: tuple(v) for k, v in a.inputs.items()}
        shared = common if shared is None else {k: v for k, v in shared.items() if common.get(k) == v}
    inputs = "; ".join(f"{k} {old or '-'} -> {new or '-'}" for k, (old, new) in (shared or {}).items()) or \
        "; ".join(f"{k} -> {alert.inputs[k][1]}" for k in alert.inputs)
    msg = mailtext.compose_group(alert.group_id or alert.id, members, inputs, settings.smtp)
    outbox.rewrite(db, queued, mailtext.to_bytes(msg))
    return True


def opened(history: History, run: Run) -> bool:
    """Whether `run`, completed with a transition into regression, opened its alert: False when another run of the
    builder, completed meanwhile, opened it (`alert_record`), and this run's mail is none."""
    return bool(AlertStore(history).alerts(builder=run.builder, kind=REGRESSION, bad_run=run.run_id))
