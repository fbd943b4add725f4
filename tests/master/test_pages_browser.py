"""The pages of issue 48, item 6 in a real browser (Debian's chromium, the fixtures of tests/master/test_browser.py)
on a real master, with a store as the demo leaves it (tests/master/trained.py): Buildbot's UI finds the farm's menu
icon (no "Could not find icon" on any of its pages: master/dashboard/mount.py fixes the plugin's lookup), and the
policies list, a trained policy's page and the overview render what the CLI says. Screenshots of the three go to
pytest's tmp directory, or to $FARM_SCREENSHOTS when set (a person looks at them; never the repository)."""

from __future__ import annotations

import os
import shutil
import urllib.request
from pathlib import Path

import pytest

from farm.config import load_settings
from tests.master.test_browser import CHROMIUM, DASH, DRIVER, _errors, _load, browser  # noqa: F401
from tests.master.test_dashboard import fill_history, populate
from tests.master.test_dashboard_policies import VA, VB
from tests.master.test_master_live import live  # noqa: F401  (the live master fixture)
from tests.master.trained import add_trained

pytestmark = pytest.mark.skipif(not (shutil.which(CHROMIUM) and shutil.which(DRIVER)),
                                reason="Debian's chromium and chromium-driver are not installed (deploy/setup.sh)")


def _console(driver) -> list[tuple[str, str]]:
    """Every console message since the last call with its level (the plugin's complaint is a console.log, INFO)."""
    return [(e["level"], e["message"]) for e in driver.get_log("browser")]


def test_buildbots_ui_finds_the_farms_icon_and_the_pages_agree_with_the_cli(live, browser,  # noqa: F811
                                                                            tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    s = load_settings()
    populate(s.var_dir / "store")
    add_trained(s.var_dir / "store")
    fill_history(s.var_dir / "regression" / "history.sqlite")
    start, _ = live
    base = start().base
    shots = Path(os.environ.get("FARM_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)

    # the plugin's script, as the master serves it, looks the icon up by its names
    with urllib.request.urlopen(base + "plugins/wsgi_dashboards/scripts.js", timeout=30) as r:
        script = r.read().decode()
    assert "for(const a of c){const h=RV[a]" in script and "for(const a in c){const h=RV[a]" not in script
    for route, css in (("#/farm", ".mlgo-farm-dashboard td"), ("#/console", ".bb-console-container"),
                       ("#/grid", ".bb-grid-container"), ("#/builders", "table")):
        _load(browser, base + route, css, tmp_path)
        said = _console(browser)
        assert not [m for _, m in said if "Could not find icon" in m], (route, said)
        assert not [m for level, m in said if level == "SEVERE"], (route, said)
    _load(browser, base + "#/farm", ".mlgo-farm-dashboard #buildbot-views", tmp_path)
    assert "stay empty" in browser.find_element(By.CSS_SELECTOR, "#buildbot-views").text
    browser.save_screenshot(str(shots / "buildbot-farm-entry.png"))

    # the farm's own pages
    _load(browser, f"{base}{DASH}policies/", "#policies", tmp_path)
    rows = {r.find_elements(By.TAG_NAME, "td")[1].text: r.text
            for r in browser.find_elements(By.CSS_SELECTOR, "#policies tr")[1:]}
    assert "0.9637x" in rows[VA] and "0.9871x passed" in rows[VA] and "1.0150x failed" in rows[VB], rows
    browser.save_screenshot(str(shots / "policies-list.png"))
    assert _errors(browser) == []

    _load(browser, f"{base}{DASH}policies/inline/{VA}/", "#heldout", tmp_path)
    zlib = browser.find_elements(By.CSS_SELECTOR, "#heldout tr")[1]
    tie = zlib.find_elements(By.TAG_NAME, "td")[5]
    assert tie.text == "1.0000" and tie.value_of_css_property("color") == "rgba(33, 33, 33, 1)"  # the page's text
    assert "decides latest" in browser.find_element(By.CSS_SELECTOR, "#two-figures").text
    browser.set_window_size(1400, 2600)
    browser.save_screenshot(str(shots / "policy-version.png"))
    browser.set_window_size(1400, 1000)
    assert _errors(browser) == []

    _load(browser, f"{base}{DASH}", "#overview-vocab", tmp_path)
    assert "396 trained, 5,908 composed, 564 filler" in browser.find_element(By.CSS_SELECTOR, "#overview-vocab").text
    browser.save_screenshot(str(shots / "overview.png"))
    assert _errors(browser) == []
