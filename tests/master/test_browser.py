"""The farm's pages in a real browser (Debian's chromium through chromium-driver and selenium) against a real
master with a worker: Buildbot's views and the farm dashboard load without console errors, the vocabulary
diff and a trend render, the download link gives the bytes whose sha256 the page shows, and over plain
HTTP anonymous writes and path traversal are refused. Screenshots of a failure go to pytest's tmp_path,
never into the repository."""

from __future__ import annotations

import hashlib
import http.client
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from farm.config import load_settings
from master.layout import admin_password
from tests.master.test_dashboard import DATASET_FILES, DS, V1, V2, fill_history, populate
from tests.master.test_master_live import live  # noqa: F401  (the live master fixture)
from tests.servers import wait_until

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
pytestmark = pytest.mark.skipif(not (shutil.which(CHROMIUM) and shutil.which(DRIVER)),
                                reason="Debian's chromium and chromium-driver are not installed (deploy/setup.sh)")
DASH = "plugins/wsgi_dashboards/farm/"


@pytest.fixture
def browser(tmp_path: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run",
                f"--user-data-dir={tmp_path / 'chromium-profile'}", "--window-size=1400,1000"):
        opts.add_argument(arg)
    # the console, and the network log that says what each stylesheet's request got (test_styles_browser.py)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=opts, service=Service(DRIVER, log_output=str(tmp_path / "chromedriver.log")))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _errors(driver) -> list[str]:
    """Console errors since the last call (selenium returns each entry once): a stylesheet Buildbot's UI asks every
    web plugin for is one too (the farm answers for the plugins that ship none, master/dashboard/mount.py)."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _load(driver, url: str, css: str, tmp_path: Path):
    """Open `url` and wait until the page has rendered `css` (the single-page UI renders after loading)."""
    from selenium.webdriver.common.by import By

    driver.get(url)
    try:
        return wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, css), 60, f"{css} on {url}")[0]
    except TimeoutError:
        driver.save_screenshot(str(tmp_path / "failure.png"))
        raise


def _status(base: str, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    """A raw request (no client-side normalisation of `..`), as anyone on the web port could send it."""
    host, port = base.removeprefix("http://").rstrip("/").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_farm_pages_in_a_real_browser_against_the_live_master(live, browser, tmp_path: Path):  # noqa: F811
    from selenium.webdriver.common.by import By

    s = load_settings()
    data = populate(s.var_dir / "store")
    fill_history(s.var_dir / "regression" / "history.sqlite")
    start, _ = live
    api = start()
    base = api.base

    # Buildbot's own views, and the farm's entry in its menu, load without console errors
    for route, css in (("#/console", ".bb-console, .bb-console-container"), ("#/grid", ".grid, .bb-grid-container"),
                       ("#/waterfall", ".bb-waterfall-view"), ("#/farm", ".mlgo-farm-dashboard")):
        _load(browser, base + route, css, tmp_path)
        assert _errors(browser) == [], route
    browser.save_screenshot(str(tmp_path / "farm.png"))  # pytest's tmp directory, for a person to look at
    frag = browser.find_element(By.CSS_SELECTOR, ".mlgo-farm-dashboard")
    assert V2 in frag.text and "regression-inliner-size" in frag.text and "Flower" in frag.text

    # the force form: the builder's parameters as choice lists, no branch/revision/repository/project fields
    _load(browser, f"{base}#/builders/{api.builders()['triplets-ir']}", "button", tmp_path)
    button = wait_until(lambda: [b for b in browser.find_elements(By.TAG_NAME, "button")
                                 if b.text.strip() == "run triplets-ir"], 60, "the force button")[0]
    button.click()
    modal = _load(browser, browser.current_url, ".bb-forcebuild-modal", tmp_path)
    wait_until(lambda: "corpus_input" in modal.get_attribute("innerHTML") or "Debian source" in modal.text, 30,
               "the force form's fields")
    labels = modal.text
    assert not any(word in labels for word in ("Branch", "Revision", "Repository", "Project")), labels
    # Buildbot renders a strict choice parameter as a select box (react-select), marked with its field name
    choices = {e.get_attribute("data-bb-test-id") for e in modal.find_elements(By.CSS_SELECTOR, "[data-bb-test-id]")}
    assert {"force-field-corpus_source", "force-field-corpus_input", "force-field-shards"} <= choices, choices
    assert not any(f.endswith(("branch", "revision", "repository", "project")) for f in choices), choices
    assert _errors(browser) == []

    # the diff: its plot and the entity that moved most (Add, reversed)
    _load(browser, f"{base}{DASH}vocab/ir/diff?a={V1}&b={V2}", "#drift-plot svg", tmp_path)
    plot = browser.find_element(By.CSS_SELECTOR, "#drift-plot svg")
    assert plot.size["width"] > 300 and plot.size["height"] > 100
    first = browser.find_elements(By.CSS_SELECTOR, "#top tr")[1].text
    assert first.startswith("Opcodes Add 1.9990") and "2.0000" in first, first  # aligned, overlap, raw drift
    assert "mean aligned drift" in browser.find_element(By.CSS_SELECTOR, "#overall").text
    assert "Arguments/Constant (filler)" in plot.get_attribute("innerHTML")
    assert _errors(browser) == []

    # a trend with both lines and the previous good run
    _load(browser, f"{base}{DASH}regression/regression-inliner-size/trend?subject=zlib&metric=text_size",
          "#trend-plot svg", tmp_path)
    svg = browser.find_element(By.CSS_SELECTOR, "#trend-plot svg")
    assert svg.size["width"] > 300 and "previous good (r1)" in svg.get_attribute("innerHTML")
    assert _errors(browser) == []

    # the download link gives exactly the bytes whose sha256 the page shows (hashed in the browser and here)
    _load(browser, f"{base}{DASH}vocab/ir/latest/", "#download", tmp_path)
    shown = browser.find_element(By.CSS_SELECTOR, "#sha256").text
    href = browser.find_element(By.CSS_SELECTOR, "#download").get_attribute("href")
    in_browser = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0]).then(r => r.arrayBuffer()).then(b => crypto.subtle.digest('SHA-256', b))"
        ".then(d => done(Array.from(new Uint8Array(d)).map(x => x.toString(16).padStart(2, '0')).join('')))"
        ".catch(e => done('error: ' + e));", href)
    with urllib.request.urlopen(href, timeout=30) as r:
        got = r.read()
    assert shown == in_browser == hashlib.sha256(got).hexdigest() == hashlib.sha256(data[V2]).hexdigest()
    assert _errors(browser) == []

    # a dataset's page and a policy version's page (reached from their lists, as a person would)
    _load(browser, f"{base}{DASH}datasets/", f'a[href$="datasets/ir/{DS}/"]', tmp_path).click()
    skipped = _load(browser, browser.current_url, "#skipped", tmp_path)
    assert "contrib/broken.c" in skipped.text and V2 in browser.find_element(By.CSS_SELECTOR, "#vocabs").text
    assert _errors(browser) == []
    _load(browser, f"{base}{DASH}policies/", 'a[href$="policies/inline/P1/"]', tmp_path).click()
    assert "latest" in _load(browser, browser.current_url, "#state", tmp_path).text
    assert _errors(browser) == []

    # anonymous writes are refused on the download URLs (and nothing changes); traversal finds nothing
    for method in ("POST", "PUT", "DELETE"):
        for path in (f"/{DASH}store/vocab/ir/latest/vocab.json", f"/{DASH}store/vocab/ir/{V1}/vocab.json"):
            status, _ = _status(base, method, path, b'{"Opcodes": {}}')
            assert status == 405, (method, path, status)
    with urllib.request.urlopen(f"{base}{DASH}store/vocab/ir/{V1}/vocab.json", timeout=30) as r:
        assert r.read() == data[V1]
    password = admin_password(s).encode()
    (s.var_dir / "store" / "vocab-staging" / "note.txt").write_text("staged\n")
    for path in (f"/{DASH}store/../../../secrets/www-admin-password", f"/{DASH}store/%2e%2e/secrets/www-admin-password",
                 f"/{DASH}store/vocab/..%2F..%2Fsecrets/www-admin-password", f"/{DASH}store/vocab-staging/note.txt",
                 f"/{DASH}store//etc/passwd", f"/{DASH}store/vocab/ir/{V1}/../../../../secrets/redis-password"):
        status, body = _status(base, "GET", path)
        assert status in (400, 404), (path, status)
        assert password not in body and b"staged" not in body and b"root:" not in body
    with pytest.raises(urllib.error.HTTPError) as refused:  # a sharded run's part: staging, never served
        urllib.request.urlopen(f"{base}{DASH}store/datasets/shards/run7/1-of-2/train2id.txt", timeout=30)
    assert refused.value.code == 404
    with urllib.request.urlopen(f"{base}{DASH}store/datasets/ir/{DS}/train2id.txt", timeout=30) as r:
        assert r.read() == DATASET_FILES["train2id.txt"]  # a published dataset's file is
