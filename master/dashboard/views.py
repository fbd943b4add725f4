"""The front page: what the farm serves now (each kind's `latest` vocabulary and the candidates after it), its
policies by state, each regression builder's newest run and the alerts waiting for triage; as a full page (`/`)
and as the fragment Buildbot's UI shows under "Farm" (`index.html`).

The other sections are Blueprints of their own (views_vocab.py, views_datasets.py, views_policies.py,
views_regression.py, views_alerts.py, views_mail.py, downloads.py). Every page is rendered with jinja2 from what the
store's indexes and manifests and the regression history say, at the time of the request; nothing is cached
between requests, so a page never shows a `latest` the store no longer names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from flask import Blueprint, render_template

from farm.errors import FarmError, first_line
from master.dashboard import files, trends
from master.dashboard.context import current_farm
from master.dashboard.views_vocab import served_and_candidates
from regression.alerts.records import AlertStore
from vocabgen.layout import SECTIONS

T = TypeVar("T")

bp = Blueprint("overview", __name__)


def _section(notes: dict[str, str], name: str, compute: Callable[[], T], empty: T) -> T:
    """`compute()`, or `empty` with the one line why under `notes[name]` when what it reads cannot be read."""
    try:
        return compute()
    except FarmError as e:  # CorruptObject, StoreError (the store or the history down), the history's own errors
        notes[name] = first_line(e)
        return empty


def overview() -> dict[str, Any]:
    """The front page's sections, each on its own: one that cannot be read (a corrupt or unreadable index of
    its kind, the store or the history down) is left empty with one line saying why (`notes`), and the page
    shows the others."""
    farm = current_farm()
    days = farm.settings.alerts.triage_days
    notes: dict[str, str] = {}
    kinds = _section(notes, "vocab", lambda: {k: served_and_candidates(farm, k) for k in SECTIONS}, {})

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


@bp.route("/index.html")
def fragment():
    """What the Buildbot UI shows under "Farm" (inserted into its page: no <html>, no script)."""
    return render_template("fragment.html", **overview())


@bp.route("/")
def home():
    return render_template("home.html", **overview())
