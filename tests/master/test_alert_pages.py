"""The alerts' pages and JSON, and who may change an alert's state: anonymous users get 403, a user logged in at
Buildbot's own /auth/login (on a real master) changes it, and the change keeps who, when and the note."""

from __future__ import annotations

import base64
import http.client
import json
import time
import urllib.parse
import urllib.request
from http.cookies import SimpleCookie
from pathlib import Path

import pytest

from farm.config import DASHBOARD_PATH, load_settings
from farm.objectstore import FileStore
from master.dashboard.app import create_app
from master.layout import admin_password
from regression.alerts.records import AlertStore
from regression.history import History
from tests.master.test_dashboard import populate
from tests.master.test_dashboard_live import DASH, WEB_URL, _run_master
from tests.regression.alerts.test_records import _alerted

DB = "regression/history.sqlite"


def _history(path: Path) -> History:
    """Two builders alerted by the same policy change (one group), a third by another; the first acknowledged."""
    h = History(path)
    _alerted(h, "regression-inliner-size")
    _alerted(h, "regression-inliner-speed")
    _alerted(h, "regression-other", bad_policy="p3")
    store = AlertStore(h)
    first = store.alerts(builder="regression-inliner-size")[0]
    store.set_state(first.id, "acknowledged", "alice", "the new policy <b>loses</b> on zlib")
    return h


@pytest.fixture
def client(tmp_path: Path):
    populate(tmp_path / "store")
    h = _history(tmp_path / "history.sqlite")
    app = create_app(load_settings(), store=FileStore(tmp_path / "store"), history=tmp_path / "history.sqlite")
    return app.test_client(), h


def test_the_list_filters_by_state_and_builder_and_flags_overdue(client) -> None:
    c, h = client
    page = c.get("/alerts/").get_data(as_text=True)
    ids = {a.builder: a.id for a in AlertStore(h).alerts()}
    for builder, alert_id in ids.items():
        assert f'id="alert-{alert_id}"' in page and builder in page
    assert "overdue</span>" not in page  # nothing is older than two days yet
    only = c.get("/alerts/?state=acknowledged").get_data(as_text=True)
    assert f'id="alert-{ids["regression-inliner-size"]}"' in only
    assert f'id="alert-{ids["regression-other"]}"' not in only
    one = c.get("/alerts/?builder=regression-other").get_data(as_text=True)
    assert f'id="alert-{ids["regression-other"]}"' in one and f'id="alert-{ids["regression-inliner-speed"]}"' not in one
    assert c.get("/alerts/?state=bogus").status_code == 404

    data = c.get("/alerts/index.json?state=untriaged").get_json()
    assert data["format"] == 1 and data["triage_days"] == 2.0
    assert {a["builder"] for a in data["alerts"]} == {"regression-inliner-speed", "regression-other"}
    speed = next(a for a in data["alerts"] if a["builder"] == "regression-inliner-speed")
    assert speed["group_id"] == ids["regression-inliner-size"] and speed["inputs"] == {"policy": ["p1", "p2"]}
    assert speed["overdue"] is False and speed["due"] == pytest.approx(speed["created"] + 2 * 86400)
    assert speed["json"] == load_settings().buildbot.dashboard(f"alerts/{speed['id']}/alert.json")

    # overdue: the same alerts, judged with a triage age they have passed
    with h.transaction() as db:
        db.execute("UPDATE alerts SET created = created - 3 * 86400")
    page = c.get("/alerts/").get_data(as_text=True)
    assert page.count('<span class="overdue">overdue</span>') == 2  # the untriaged two, not the acknowledged one
    home = c.get("/").get_data(as_text=True)
    assert "2 untriaged</span>" in home and "2 overdue</span>" in home


def test_one_alert_shows_its_runs_rows_group_and_states_and_its_json(client) -> None:
    c, h = client
    store = AlertStore(h)
    size = store.alerts(builder="regression-inliner-size")[0]
    speed = store.alerts(builder="regression-inliner-speed")[0]
    page = c.get(f"/alerts/{size.id}/").get_data(as_text=True)
    assert f"Alert #{size.id}: regression-inliner-size" in page
    assert "last good run" in page and "first bad run" in page and "/regression/regression-inliner-size/" in page
    assert f'href="/alerts/{speed.id}/">#{speed.id}</a> (regression-inliner-speed)' in page  # the group mate
    assert "the new policy &lt;b&gt;loses&lt;/b&gt; on zlib" in page  # notes are escaped
    assert "policy p1 → p2" in page and "+2.00%" in page and "regressed" in page

    data = c.get(f"/alerts/{size.id}/alert.json").get_json()
    assert data["alert"]["state"] == "acknowledged" and data["alert"]["bad_run"] == "b"
    assert [(s["state"], s["who"]) for s in data["states"]] == [("untriaged", "mlgo-farm"), ("acknowledged", "alice")]
    assert data["runs"]["good"]["run_id"] == "g" and data["runs"]["bad"]["policy_id"] == "p2"
    assert data["runs"]["closed_by"] is None and data["group"] == [speed.id, size.id]
    assert data["rows"] == [{"subject": "zlib", "kind": "binary", "metric": "text_size", "baseline": "heuristic",
                             "was": 1000.0, "now": 1020.0, "delta_pct": 2.0, "verdict": "regressed", "gating": True}]
    assert c.get("/alerts/999/").status_code == 404 and c.get("/alerts/999/alert.json").status_code == 404


def test_without_a_master_nobody_may_post_and_other_writes_stay_refused(client) -> None:
    c, h = client
    alert = AlertStore(h).alerts()[0]
    r = c.post(f"/alerts/{alert.id}/state", data={"state": "invalid", "note": "x"})
    assert r.status_code == 403 and "needs a login" in r.get_data(as_text=True)
    assert c.post("/alerts/", data={}).status_code == 405 and c.put(f"/alerts/{alert.id}/state").status_code == 405
    assert AlertStore(h).get(alert.id).state == alert.state


@pytest.fixture
def master(monkeypatch: pytest.MonkeyPatch):
    def fill(s):
        populate(s.var_dir / "store")
        _history(s.var_dir / DB)
        return s.var_dir / "store"

    yield from _run_master(monkeypatch, {}, fill)


def _post(port: int, path: str, form: dict, headers: dict | None = None) -> tuple[int, str, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", path, body=urllib.parse.urlencode(form),
                     headers={"Content-Type": "application/x-www-form-urlencoded", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, resp.read().decode(), dict(resp.getheaders())
    finally:
        conn.close()


def _login(port: int, user: str, password: str) -> str:
    """Buildbot's own login (HTTP basic at /auth/login): the session cookie it sets, as `name=value` (the redirect
    that comes with it, to web_url, is not followed)."""
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/auth/login", headers={"Authorization": f"Basic {token}"})
        resp = conn.getresponse()
        resp.read()
        cookies = SimpleCookie()
        for name, value in resp.getheaders():
            if name.lower() == "set-cookie":
                cookies.load(value)
    finally:
        conn.close()
    [name] = [n for n in cookies if n.startswith("TWISTED_")]
    return f"{name}={cookies[name].value}"


def test_on_a_real_master_anonymous_users_get_403_and_a_logged_in_operator_changes_the_state(master) -> None:
    port, _, _, _ = master
    s = load_settings()
    h = History(s.var_dir / DB)
    alert = AlertStore(h).alerts(builder="regression-other")[0]
    path = f"{DASH}alerts/{alert.id}/state"
    form = {"state": "investigating", "note": "bisecting the policy by hand"}

    status, body, _ = _post(port, path, form)
    assert status == 403 and body.startswith("403 Forbidden: ") and body.count("\n") == 1
    forged = "TWISTED_SESSION=eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyX2luZm8iOnsidXNlcm5hbWUiOiJhZG1pbiJ9fQ.AAAA"
    assert _post(port, path, form, {"Cookie": forged})[0] == 403
    assert AlertStore(h).get(alert.id).state == "untriaged"

    cookie = _login(port, s.buildbot.admin_user, admin_password(s))
    # an operator's session used by a form on another site is refused too
    assert _post(port, path, form, {"Cookie": cookie, "Origin": "https://evil.example"})[0] == 403
    before = time.time()
    status, _, headers = _post(port, path, form, {"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}"})
    assert status == 303 and headers["Location"].endswith(f"/{DASHBOARD_PATH}alerts/{alert.id}/")
    changed = AlertStore(h).get(alert.id)
    last = AlertStore(h).states(alert.id)[-1]
    assert changed.state == "investigating"
    assert (last.state, last.who, last.note) == ("investigating", "admin", "bisecting the policy by hand")
    assert before <= last.at <= time.time()
    status, body, _ = _post(port, path, {"state": "bogus", "note": "x"}, {"Cookie": cookie})
    assert status == 400 and "cannot be set to 'bogus'" in body

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", f"{DASH}alerts/{alert.id}/", headers={"Cookie": cookie})
    page = conn.getresponse().read().decode()
    conn.close()
    assert "Logged in as admin." in page and "bisecting the policy by hand" in page
    data = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}{DASH}alerts/index.json", timeout=30).read())
    listed = next(a for a in data["alerts"] if a["id"] == alert.id)
    assert listed["page"] == f"{WEB_URL}{DASHBOARD_PATH}alerts/{alert.id}/" and listed["state"] == "investigating"
