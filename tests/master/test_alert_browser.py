"""An alert's page in a real browser (Debian's chromium) on a real master: anonymous, its form is refused with 403
and nothing changes; with Buildbot's session (its /auth/login), the same form changes the state, and the page shows
who changed it, when and why. The page loads without console errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from farm.config import load_settings
from master.layout import admin_password
from regression.alerts.records import AlertStore
from regression.history import History
from tests.master.test_alert_pages import DB, _login, master  # noqa: F401  (the live master fixture)
from tests.master.test_browser import CHROMIUM, DRIVER, _errors, _load, browser  # noqa: F401
from tests.servers import wait_until

pytestmark = pytest.mark.skipif(not (shutil.which(CHROMIUM) and shutil.which(DRIVER)),
                                reason="Debian's chromium and chromium-driver are not installed (deploy/setup.sh)")


def _submit(driver, state: str, note: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    form = driver.find_element(By.CSS_SELECTOR, "#set-state")
    Select(form.find_element(By.NAME, "state")).select_by_visible_text(state)
    form.find_element(By.NAME, "note").send_keys(note)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()


def _shows(driver, css: str, check) -> bool:
    """Whether the page now has `css` whose text passes `check`. While the form's answer replaces the page, an
    element found a moment ago can leave the document before its text is read: chromedriver then says the element
    is stale or, when the race falls inside its own inspector, that the node "does not belong to the document".
    Both mean "not yet"; any other browser error still fails the test."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.by import By

    try:
        return bool(check(driver.find_element(By.CSS_SELECTOR, css).text))
    except (NoSuchElementException, StaleElementReferenceException):
        return False
    except WebDriverException as e:
        if "does not belong to the document" in (e.msg or ""):
            return False
        raise


def test_the_alert_form_needs_a_login_in_a_real_browser(master, browser, tmp_path: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    port = master[0]
    s = load_settings()
    h = History(s.var_dir / DB)
    alert = AlertStore(h).alerts(builder="regression-other")[0]
    base = f"http://127.0.0.1:{port}"
    page = f"{base}/plugins/wsgi_dashboards/farm/alerts/{alert.id}/"

    _load(browser, page, "#set-state", tmp_path)
    assert "Only a logged-in operator may change it" in browser.page_source
    assert _errors(browser) == []
    _submit(browser, "invalid", "not a real regression")
    wait_until(lambda: _shows(browser, "body", lambda t: "403 Forbidden" in t), 60, "the answer")
    assert browser.find_element(By.TAG_NAME, "body").text.startswith(
        "403 Forbidden: changing an alert's state needs a login")
    assert AlertStore(h).get(alert.id).state == "untriaged"
    refusals = _errors(browser)  # the 403 itself (and the plain-text answer's favicon) are all the console saw
    assert refusals and all(e.endswith("status of 403 (FORBIDDEN)") or "/favicon.ico" in e for e in refusals), refusals

    name, value = _login(port, s.buildbot.admin_user, admin_password(s)).split("=", 1)
    browser.add_cookie({"name": name, "value": value, "path": "/"})  # the session Buildbot's login button gets
    _load(browser, page, "#set-state", tmp_path)
    assert "Logged in as admin." in browser.page_source
    _submit(browser, "invalid", "the benchmark input changed, not the policy")
    wait_until(lambda: _shows(browser, "#state", lambda t: t == "invalid"), 60, "the new state")
    assert browser.current_url == page  # redirected back to the alert's page
    last = browser.find_elements(By.CSS_SELECTOR, "#states tr")[-1].text
    assert "invalid admin the benchmark input changed, not the policy" in last
    assert _errors(browser) == []
    assert AlertStore(h).get(alert.id).state == "invalid"
