"""The alerts' pages: the list (filter by state and builder, overdue flagged), one alert (its runs, rows, changed
inputs, group and history of states), the JSON of both, and the one write of the dashboard: a logged-in operator's
change of an alert's state (POST `alerts/ID/state`, form fields `state` and `note`).

The records are regression/alerts/records.py's, in the regression history the builders write. Who may change a state
is Buildbot's login (master/dashboard/login.py): anyone else gets 403, and so does a POST whose Origin is not this
dashboard's (a form on another site cannot use an operator's session).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Response, abort, redirect, render_template, request, url_for

from farm.errors import InputError
from master.dashboard import trends
from master.dashboard.context import current_farm, json_answer, public
from regression.alerts import records
from regression.alerts.records import AlertStore
from regression.rules import UNCHANGED


def _refuse(status: int, text: str) -> Response:
    return Response(f"{status} {'Forbidden' if status == 403 else 'Bad Request'}: {text}\n", status,
                    content_type="text/plain; charset=utf-8", headers={"Cache-Control": "no-store"})


def _shown(change: records.StateChange) -> dict[str, Any]:
    """A change of state as pages and JSON show it: a note longer than a note may be now (one kept before the cap,
    records.MAX_NOTE) cut to that, with an ellipsis, so that no anonymous reader is sent megabytes."""
    out = dict(change.__dict__)
    note = str(out.get("note") or "")
    if len(note) > records.MAX_NOTE:
        out["note"] = note[:records.MAX_NOTE] + "…"
    return out


def _same_origin() -> bool:
    """A POST from this dashboard's own pages (or a client that sends no Origin, like curl), not another site's."""
    if request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
        return False
    origin = request.headers.get("Origin")
    return origin is None or urlsplit(origin).netloc == request.host


bp = Blueprint("alerts", __name__)


def _days() -> float:
    """How long an alert may stay untriaged before the pages call it overdue (`[alerts] triage_days`)."""
    return current_farm().settings.alerts.triage_days


def _store() -> AlertStore | None:
    history = trends.open_history(current_farm().history_path)
    return None if history is None else AlertStore(history)


def _one(alert_id: int):
    s = _store()
    if s is None:
        abort(404, description=f"no alert #{alert_id}: no regression history yet")
    try:
        return s, s.get(alert_id)
    except InputError:
        abort(404, description=f"no alert #{alert_id}")


def _runs_of(s: AlertStore, alert: records.Alert) -> dict[str, Any]:
    out = {}
    for role, run_id in (("good", alert.good_run), ("bad", alert.bad_run), ("closed_by", alert.closed_by)):
        try:
            out[role] = s.history.run(run_id, alert.builder) if run_id else None
        except InputError:  # a run deleted since (a failed run id reused)
            out[role] = None
    return out


def _filtered() -> tuple[list[records.Alert], str | None, str | None]:
    state, builder = request.args.get("state") or None, request.args.get("builder") or None
    s = _store()
    if s is None:
        return [], state, builder
    try:
        return s.alerts(state=state, builder=builder), state, builder
    except InputError as e:
        abort(404, description=str(e))


@bp.route("/alerts/")
def alerts_index():
    found, state, builder = _filtered()
    s = _store()
    builders = s.history.builders() if s is not None else []
    return render_template("alerts.html", alerts=found, state=state, builder=builder, builders=builders,
                           states=(*records.STATES, records.IMPROVEMENT), days=_days())


@bp.route("/alerts/index.json")
def alerts_json():
    found, state, builder = _filtered()
    days = _days()
    return json_answer({"format": 1, "triage_days": days, "state": state, "builder": builder, "alerts": [
        {**a.as_json(days), "page": public(url_for("alerts.alert_page", alert_id=a.id)),
         "json": public(url_for("alerts.alert_json", alert_id=a.id))} for a in found]})


@bp.route("/alerts/<id:alert_id>/")
def alert_page(alert_id: int):
    s, alert = _one(alert_id)
    days = _days()
    runs = _runs_of(s, alert)
    rows = [c for c in s.history.verdicts(runs["bad"]) if c.verdict != UNCHANGED] if runs["bad"] else []
    mates = [a for a in s.alerts(group_id=alert.group_id) if a.id != alert.id] if alert.group_id else []
    settable = (records.IMPROVEMENT, records.ACKNOWLEDGED, records.INVALID) \
        if alert.kind == records.IMPROVEMENT else records.SETTABLE
    states = [_shown(st) for st in s.states(alert.id)]
    return render_template("alert.html", a=alert, runs=runs, rows=rows, states=states, mates=mates,
                           settable=settable, days=days, overdue=alert.overdue(days),
                           user=current_farm().login(request.environ))


@bp.route("/alerts/<id:alert_id>/alert.json")
def alert_json(alert_id: int):
    s, alert = _one(alert_id)
    runs = _runs_of(s, alert)
    rows = s.history.verdicts(runs["bad"]) if runs["bad"] else []
    return json_answer({"format": 1, "alert": alert.as_json(_days()),
                        "page": public(url_for("alerts.alert_page", alert_id=alert.id)),
                        "states": [_shown(st) for st in s.states(alert.id)],
                        "runs": {role: trends.run_json(r, None) if r else None for role, r in runs.items()},
                        "group": [a.id for a in s.alerts(group_id=alert.group_id)] if alert.group_id else [],
                        "rows": [{"subject": c.subject, "kind": c.kind, "metric": c.metric, "baseline": c.baseline,
                                  "was": c.base_value, "now": c.value, "delta_pct": c.delta_pct, "verdict": c.verdict,
                                  "gating": c.gating} for c in rows if c.verdict != UNCHANGED]})


@bp.route("/alerts/<id:alert_id>/state", methods=["POST"])
def alert_state(alert_id: int):
    """The dashboard's one write: only a logged-in operator, only from the farm's own pages (else 403)."""
    user = current_farm().login(request.environ)
    if user is None:
        return _refuse(403, "changing an alert's state needs a login (Buildbot's login, operator role)")
    if not _same_origin():
        return _refuse(403, "a change of state must come from the farm's own pages")
    s, _ = _one(alert_id)
    try:
        alert = s.set_state(alert_id, request.form.get("state", ""), user, request.form.get("note", ""))
    except InputError as e:
        return _refuse(400, str(e))
    if request.accept_mimetypes.best == "application/json":
        return json_answer({"format": 1, "alert": alert.as_json(_days()), "by": user})
    return redirect(url_for("alerts.alert_page", alert_id=alert_id), 303)
