"""The farm's one stylesheet in a real browser (Debian's chromium, the fixtures of tests/master/test_browser.py) on a
real master: every page the dashboard registers, and Buildbot's own UI showing the farm's entry, asks for its
stylesheets and gets each one (Chromium's network log: no 404, no failed load, no console error), and the sheet's
rules apply (computed styles it sets), on a laptop's width and a phone's. One master and one browser for all pages.

The pages are derived from the app's routes (every GET route that answers HTML), so a new page is checked without
editing this file; a route whose arguments this file has no value for fails the test, naming it."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from farm.config import DASHBOARD_PATH, load_settings
from farm.objectstore import FileStore
from master.dashboard.app import create_app
from master.mailsink import Keeper, mail_dir
from regression.alerts.records import AlertStore
from regression.history import History
from regression.report import publish, render
from tests.master.test_alert_pages import DB, master  # noqa: F401  (the live master fixture, alerts included)
from tests.master.test_browser import CHROMIUM, DRIVER, _errors, _load, browser  # noqa: F401
from tests.master.test_dashboard import DS, V1, V2

pytestmark = pytest.mark.skipif(not (shutil.which(CHROMIUM) and shutil.which(DRIVER)),
                                reason="Debian's chromium and chromium-driver are not installed (deploy/setup.sh)")
#: The route Buildbot's UI shows the overview fragment (`index.html`) in: checked there, not as a page of its own.
FRAGMENT = "/index.html"
#: A regression report: a page of the store the dashboard links (its own inline style; its CSP allows no other).
REPORT = "store/regression/regression-inliner-size/r2/index.html"
#: (width, height) of a laptop's window and a phone's.
LAPTOP, PHONE = (1400, 1000), (390, 844)


def _pages(base: str, values: dict[str, object]) -> dict[str, str]:
    """route -> URL of every HTML page the dashboard registers, its arguments (path and query) from `values`."""
    app = create_app(load_settings())
    adapter = app.url_map.bind("farm.invalid")
    # what one route names differently from the others (a policy's version), and the query a route needs
    own = {"policies.policy_version": {"version": "P1"}}
    trend = {"subject": "zlib", "metric": "text_size"}
    queries = {"vocab.vocab_diff": {"a": V1, "b": V2}, "policies.policy_diff": {"a": "P1", "b": "P1"},
               "regression.regression_trend": trend, "regression.regression_trend_json": trend}
    pages = {}
    for rule in app.url_map.iter_rules():
        if "GET" not in (rule.methods or ()) or rule.endpoint in ("static", "downloads.download") \
                or rule.rule == FRAGMENT:
            continue
        missing = sorted(set(rule.arguments) - set(values))
        assert not missing, f"{rule.rule}: give {missing} a value in this test to check that page"
        args = {**values, **own.get(rule.endpoint, {})}
        path = adapter.build(rule.endpoint, {**{a: args[a] for a in rule.arguments}, **queries.get(rule.endpoint, {})})
        url = base + path.lstrip("/")
        try:
            with urllib.request.urlopen(url, timeout=30) as r:  # a page answers HTML; JSON, sums and hosts are none
                if r.headers.get_content_type() == "text/html":
                    pages[rule.rule] = url
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{rule.rule}: {url} answered {e.code}: {e.read()[:200]!r}") from None
    return pages


def _stylesheets(driver) -> dict[str, object]:
    """url -> HTTP status (or the failure's text) of every stylesheet requested since the last call, from Chromium's
    network log (selenium returns each entry once)."""
    asked, got = {}, {}
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        p = msg.get("params", {})
        if msg.get("method") == "Network.requestWillBeSent" and p.get("type") == "Stylesheet":
            asked[p["requestId"]] = p["request"]["url"]
        elif msg.get("method") == "Network.responseReceived" and p.get("type") == "Stylesheet":
            got[p["requestId"]] = p["response"]["status"]
        elif msg.get("method") == "Network.loadingFailed":
            got.setdefault(p["requestId"], p.get("errorText") or "failed")
    return {url: got.get(rid, "no answer") for rid, url in asked.items() if url.startswith("http")}  # not chrome://


#: What the farm's stylesheet sets, read back as computed styles: the page's margin (2em; .8em on a phone), its
#: main's horizontal scrolling, a table cell's border; and whether the document is no wider than the window.
_COMPUTED = """
const css = getComputedStyle, main = document.querySelector('main'), td = document.querySelector('td');
return {margin: css(document.body).marginLeft, main: main && css(main).overflowX,
        border: td && css(td).borderTopColor, wider: document.documentElement.scrollWidth > window.innerWidth,
        sheets: Array.from(document.styleSheets).filter(s => s.href).map(s => [s.href, s.cssRules.length])};
"""


def test_every_page_and_buildbots_ui_load_the_stylesheet_and_its_rules_apply(master, browser,  # noqa: F811
                                                                             tmp_path: Path) -> None:
    port = master[0]
    base = f"http://127.0.0.1:{port}/"
    alert = AlertStore(History(load_settings().var_dir / DB)).alerts()[0]
    kept = Keeper(mail_dir(load_settings())).keep("mlgo-farm@localhost", ["oncall@example.org"],
                                                   b"Subject: [mlgo-farm] kept by the sink\r\n\r\nbody\r\n")
    pages = _pages(base + DASHBOARD_PATH, {"kind": "ir", "version": V2, "advisor": "inline", "builder":
                                           "regression-inliner-size", "alert_id": alert.id, "dataset_id": DS,
                                           "name": kept.name})
    assert {"/", "/vocab/", "/vocab/<kind>/<version>/", "/vocab/<kind>/diff", "/policies/",
            "/policies/<advisor>/<version>/", "/regression/<builder>/trend", "/alerts/",
            "/alerts/<id:alert_id>/", "/mail/"} <= set(pages), sorted(pages)
    sheet = base + DASHBOARD_PATH + "static/styles.css"
    fetched: dict[str, object] = {}

    for size, margin in ((LAPTOP, "32px"), (PHONE, "12.8px")):
        browser.set_window_size(*size)
        for route, url in pages.items():
            _load(browser, url, "main", tmp_path)
            asked = _stylesheets(browser)  # the sheet itself, or nothing when the browser's memory cache answered
            assert set(asked) <= {sheet} and set(asked.values()) <= {200, 304}, (route, asked)
            fetched.update(asked)
            assert _errors(browser) == [], route
            got = browser.execute_script(_COMPUTED)
            assert [href for href, _ in got["sheets"]] == [sheet], (route, got)
            assert got["sheets"][0][1] > 10, (route, got)  # parsed, its rules in the page
            assert (got["margin"], got["main"]) == (margin, "auto"), (route, size, got)
            assert got["border"] in (None, "rgb(204, 204, 204)"), (route, got)
            assert not got["wider"], f"{route} is wider than a {size[0]} px window"

    assert fetched, "the browser never asked for the stylesheet"

    # a regression report the pages link (rendered as a run renders it): a store page with its own inline style, its
    # plots as images, asking for no stylesheet (its CSP allows none)
    history = History(load_settings().var_dir / DB)
    report = render(history, history.run("r2", "regression-inliner-size"), "regression", tmp_path / "report")
    publish(FileStore(master[2]), report, "regression-inliner-size", "r2")
    browser.set_window_size(*LAPTOP)
    _load(browser, base + DASHBOARD_PATH + REPORT, "h1", tmp_path)
    assert _stylesheets(browser) == {} and _errors(browser) == []

    # Buildbot's UI with the farm's entry: every plugin's styles.css is asked for; the farm's plugin answers its own,
    # and a plugin that ships none (the grid view of 4.3.0) gets an empty one: no stylesheet request fails
    _load(browser, base + "#/farm", ".mlgo-farm-dashboard td", tmp_path)
    asked = _stylesheets(browser)
    plugin_sheet = base + "plugins/wsgi_dashboards/styles.css"
    assert asked.get(plugin_sheet) in (200, 304), asked
    assert asked.get(base + "plugins/grid_view/styles.css") in (200, 304), asked
    assert {u: s for u, s in asked.items() if s not in (200, 304)} == {}
    assert _errors(browser) == []
    cell = browser.execute_script("return getComputedStyle(document.querySelector('.mlgo-farm-dashboard td'))"
                                  ".borderTopColor")
    assert cell == "rgb(204, 204, 204)"
    with urllib.request.urlopen(plugin_sheet, timeout=30) as r, urllib.request.urlopen(sheet, timeout=30) as ours:
        assert r.headers.get_content_type() == "text/css" and r.read() == ours.read()  # one stylesheet, two URLs
