"""Issue 21 item 7 in a real browser (Debian's chromium through chromium-driver and selenium), against the dashboard
served over HTTP: pages that agree with the downloads and read as a person reads, not as Python prints.

The overview's latest row is the version its latest link serves (a newer candidate is a row of its own, marked);
numbers are written once, to four decimals; nested records are definition lists, never dict reprs; a MIR version's
thousands of filler names are collapsed, so its page stays short; trends are drawn over time with the policy changes
marked; runs and trends are JSON for scripts, documented on the pages; the regression report links its build,
policy, vocabulary and previous runs, and says its units. Screenshots go to pytest's tmp_path."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import urllib.request
from pathlib import Path

import pytest

from farm.config import load_settings
from farm.objectstore import FileStore
from regression import report
from regression.history import History, Measurement
from regression.rules import Comparison
from tests.master.served import dashboard
from tests.master.test_browser import _errors, _load, browser  # noqa: F401  (the browser fixture)
from tests.master.test_dashboard import V2, _vocab, populate
from tests.master.test_dashboard_policies import MODELS, VA, VB, entry, manifest

V3 = "20260301-llvm22.1.8-ir-d4-cccccccccccc"  # newer than V2, held back by the gate: a candidate
MIR = "20260301-llvm22.1.8-mir-d4-dddddddddddd"
BUILDER = "regression-inliner-size"
DAY = 86400.0
T0 = 1_780_000_000.0  # 2026-05-28: the runs of the history, a night apart


def _candidate_and_mir(store: FileStore) -> None:
    """An IR candidate newer than `latest`, and a MIR version whose coverage names 7,000 filler entries."""
    index = json.loads(store.get("vocab/index.json"))
    data = _vocab(flip="Ret")  # other bytes than V2's: the link's sha256 tells which version it served
    m = {**json.loads(store.get(f"vocab/ir/{V2}/manifest.json")), "version": V3,
         "sha256": hashlib.sha256(data).hexdigest(), "published_at": "2026-03-01T00:00:00Z",
         "metrics": {"holdout": {"mrr": 0.41666666666666669, "hits_at_10": 0.9}, "analogy": {"score": 0.5},
                     "final_loss": 1234.5678901234567},
         "lineage": {"dataset_id": "ir-00000000000000aa", "llvm_version": "22.1.8", "llvm_commit": None,
                     "trainer": {"name": "pykeen", "version": "1.10.2", "model": {"name": "TransE", "norm": 1}}},
         "parameters": {"dim": 4, "epochs": 5, "lr": 0.001}}
    store.put(f"vocab/ir/{V3}/vocab.json", data)
    store.put(f"vocab/ir/{V3}/manifest.json", json.dumps(m).encode())
    filler = [f"PHYSREG_{i:05d}" for i in range(7000)]
    mir = {"format": 1, "kind": "mir", "version": MIR, "sha256": hashlib.sha256(data).hexdigest(), "dimension": 4,
           "entities": 7100, "published_at": "2026-03-01T00:00:00Z", "lineage": {"llvm_version": "22.1.8"},
           "coverage": {"Opcodes": {"trained": 90, "total": 100, "filler": filler[:10]},
                        "Registers": {"trained": 10, "total": 7000, "filler": filler}}}
    store.put(f"vocab/mir/{MIR}/vocab.json", data)
    store.put(f"vocab/mir/{MIR}/manifest.json", json.dumps(mir).encode())
    store.put("vocab/mir/latest.json", json.dumps({"kind": "mir", "version": MIR}).encode())
    index["versions"] += [
        {"kind": "ir", "version": V3, "sha256": m["sha256"], "dimension": 4, "state": "candidate",
         "published_at": m["published_at"], "mrr": 0.41666666666666669, "coverage": m["coverage"]},
        {"kind": "mir", "version": MIR, "sha256": mir["sha256"], "dimension": 4, "state": "latest",
         "published_at": mir["published_at"]}]
    store.put("vocab/index.json", json.dumps(index).encode())


def _policies(store: FileStore) -> None:
    ma, mb = manifest(VA, 0.875, 30, "2026-02-10T00:00:00Z"), manifest(VB, 0.85, 40, "2026-03-01T00:00:00Z")
    for m in (ma, mb):
        m["training"]["corpus_lineage"] = {"package": "zlib", "debian": {"version": "1:1.2.13.dfsg-1"}}
        m["metrics"]["heldout_loss"] = 0.123456789012345678
        store.put(f"policies/inline/{m['version']}/model.onnx", MODELS[m["version"]])
        store.put(f"policies/inline/{m['version']}/manifest.json", json.dumps(m).encode())
    store.put("policies/index.json", json.dumps({"format": 1, "versions": [entry(ma, "superseded"),
                                                                           entry(mb, "latest")]}).encode())
    store.put("policies/inline/latest.json", json.dumps({"advisor": "inline", "version": VB}).encode())


def _history(path: Path) -> History:
    """Four nightly runs a day apart: VA twice, then VB (a size regression), then VB again."""
    h = History(path)
    for i, (run_id, policy, size, verdict) in enumerate((("n0", VA, 1000, "ok"), ("n1", VA, 990, "ok"),
                                                         ("n2", VB, 1100, "regression"), ("n3", VB, 1000, "ok"))):
        run = h.start_run(run_id, BUILDER, llvm_version="22.1.8", llvm_commit=None, policy_id=policy,
                          vocab_version=V2, config={"advisor": "inline", "policy_version": policy,
                                                    "build_url": f"http://127.0.0.1:8010/#/builders/3/builds/{i}"})
        h.add_measurements(run, [Measurement("zlib", "binary", "text_size", "heuristic", 1000, (), "bytes"),
                                 Measurement("zlib", "binary", "text_size", "policy", size, (), "bytes")])
        delta = (size - 1000) / 10
        h.add_verdicts(run, [Comparison("zlib", "binary", "text_size", "heuristic", 1000, size, delta, None,
                                        "regressed" if delta > 1 else "improved" if delta < 0 else "unchanged",
                                        True)])
        h.complete_run(run, verdict, None)
        with sqlite3.connect(path) as db:  # the nights they ran, not the second this fixture ran
            db.execute("UPDATE runs SET started=?, finished=? WHERE run_id=?", (T0 + i * DAY, T0 + i * DAY + 600,
                                                                                run_id))
    return h


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "store"
    populate(root)
    store = FileStore(root)
    _candidate_and_mir(store)
    _policies(store)
    _history(tmp_path / "history.sqlite")
    with dashboard(monkeypatch, store, tmp_path / "history.sqlite") as base:
        yield base, store, tmp_path / "history.sqlite"


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read()


def test_the_overview_row_is_what_its_latest_link_serves(served, browser, tmp_path: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    base, store, _ = served
    table = _load(browser, base, "table.mlgo-table", tmp_path)  # the first: vocabularies
    rows = [r for r in table.find_elements(By.TAG_NAME, "tr") if r.text.startswith("ir ")]
    served_row = next(r for r in rows if "latest/vocab.json" in r.text)
    shown = served_row.find_elements(By.TAG_NAME, "td")[1].text
    link = served_row.find_element(By.LINK_TEXT, "latest/vocab.json").get_attribute("href")
    assert hashlib.sha256(_get(link)).hexdigest() == json.loads(store.get(f"vocab/ir/{shown}/manifest.json"))[
        "sha256"]
    assert shown == V2 and "latest" in served_row.text
    candidate = next(r for r in rows if V3 in r.text)
    assert "candidate" in candidate.text and "latest/vocab.json" not in candidate.text
    assert _errors(browser) == []


def test_numbers_and_records_read_as_text(served, browser, tmp_path: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    base, _, _ = served
    page = _load(browser, f"{base}vocab/ir/{V3}/", "main", tmp_path).text
    assert "0.4167" in page and "1,234.5679" not in page and "0.41666" not in page and "1234.56789" not in page
    assert "{" not in page and "}" not in page, "a dict or JSON repr on the vocabulary page"
    trainer = browser.find_element(By.ID, "trainer")
    assert trainer.tag_name == "dl" and "model.name" in trainer.text and "TransE" in trainer.text
    policy = _load(browser, f"{base}policies/inline/{VB}/", "#lineage", tmp_path).text
    assert "{" not in policy and "'" not in policy
    lineage = browser.find_element(By.ID, "corpus-lineage")
    assert lineage.tag_name == "dl" and "debian.version" in lineage.text and "1:1.2.13.dfsg-1" in lineage.text
    assert "0.1235" in browser.find_element(By.ID, "metrics").text
    assert browser.find_element(By.ID, "parameters").tag_name == "dl"
    _load(browser, f"{base}datasets/ir/latest/", "#facts", tmp_path)
    assert browser.find_element(By.ID, "corpus-lineage").tag_name == "dl"
    assert _errors(browser) == []


def test_a_mir_page_with_thousands_of_filler_names_stays_short(served, browser, tmp_path: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    base, _, _ = served
    _load(browser, f"{base}vocab/mir/{MIR}/", "main", tmp_path)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.save_screenshot(str(tmp_path / "mir.png"))
    (tmp_path / "mir-height.txt").write_text(f"{height}\n")
    assert height < 3000, f"the MIR page is {height} px tall"
    summary = browser.find_element(By.CSS_SELECTOR, "details summary")
    assert "7,000 entries" in summary.text
    summary.click()  # the names are one click away
    assert "PHYSREG_06999" in browser.find_element(By.CSS_SELECTOR, "details .names").get_attribute("textContent")
    assert _errors(browser) == []


def test_trends_are_over_time_with_the_policy_change_marked(served, browser, tmp_path: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    base, _, _ = served
    _load(browser, f"{base}regression/{BUILDER}/trend?subject=zlib&metric=text_size", "#trend-plot svg", tmp_path)
    svg = browser.find_element(By.CSS_SELECTOR, "#trend-plot svg").get_attribute("innerHTML")
    assert "run started (UTC)" in svg and f"policy {VB}" in svg and "policy changed" in svg
    assert "May-29" in svg or "29" in svg  # dates on the axis, not run ids
    assert ">n0<" not in svg and ">n2<" not in svg
    assert "previous good (n1)" in svg
    points = browser.find_element(By.ID, "points")
    assert VB in points.text and points.find_element(By.LINK_TEXT, VB).get_attribute("href").endswith(
        f"policies/inline/{VB}/")
    assert _errors(browser) == []


def test_runs_and_trends_are_json_documented_on_the_pages(served, browser, tmp_path: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    base, _, _ = served
    _load(browser, f"{base}regression/", "#json-doc", tmp_path)
    index = json.loads(_get(browser.find_element(By.CSS_SELECTOR, "#json-doc a").get_attribute("href")))
    runs_url = index["builders"][BUILDER]["runs"]
    assert runs_url == f"{base}regression/{BUILDER}/runs.json"
    assert index["builders"][BUILDER]["newest"]["run_id"] == "n3"

    doc = _load(browser, f"{base}regression/{BUILDER}/", "#json-doc", tmp_path)
    assert "runs.json" in doc.text and "trend.json" in doc.text and "started_utc" in doc.text
    runs = json.loads(_get(doc.find_element(By.LINK_TEXT, "runs.json").get_attribute("href")))
    assert [r["run_id"] for r in runs["runs"]] == ["n3", "n2", "n1", "n0"] and runs["previous_good"] == "n1"
    assert runs["runs"][1]["started"] == T0 + 2 * DAY and runs["runs"][1]["started_utc"].startswith("2026-05-30T")
    assert runs["runs"][1]["policy_id"] == VB and runs["runs"][1]["verdict"] == "regression"
    [size] = [s for s in runs["series"] if (s["subject"], s["metric"]) == ("zlib", "text_size")]
    assert size["unit"] == "bytes"
    trend = json.loads(_get(size["trend"]))
    assert trend["unit"] == "bytes" and trend["better"] == "lower"
    assert [(p["run_id"], p["policy_id"], p["policy"]) for p in trend["points"]] == [
        ("n0", VA, 1000), ("n1", VA, 990), ("n2", VB, 1100), ("n3", VB, 1000)]
    _load(browser, f"{base}regression/{BUILDER}/trend?subject=zlib&metric=text_size", "#trend-json", tmp_path)
    assert json.loads(_get(browser.find_element(By.ID, "trend-json").get_attribute("href"))) == trend
    assert _errors(browser) == []


def test_the_regression_report_links_its_build_policy_vocabulary_and_previous_runs(
        served, browser, tmp_path: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    base, store, history_path = served
    history = History(history_path)
    run = history.run("n2", BUILDER)
    settings = load_settings()
    for r in history.runs(BUILDER):
        out = report.render(history, r, r.verdict, tmp_path / "reports" / r.run_id, None, settings.buildbot.dashboard)
        report.publish(store, out, BUILDER, r.run_id)
    _load(browser, f"{base}store/regression/{BUILDER}/n2/index.html", "#links", tmp_path)
    links = {dt.text: dd.find_element(By.TAG_NAME, "a").get_attribute("href") for dt, dd in zip(
        browser.find_elements(By.CSS_SELECTOR, "#links dt"), browser.find_elements(By.CSS_SELECTOR, "#links dd"),
        strict=True)}
    assert links["build"] == run.config["build_url"]
    assert links["policy"] == f"{base}policies/inline/{VB}/" and links["vocabulary"] == f"{base}vocab/ir/{V2}/"
    assert links["previous run"] == links["previous good run"] == f"{base}store/regression/{BUILDER}/n1/index.html"
    for what in ("runs", "policy", "vocabulary", "previous run"):
        assert _get(links[what]), what  # each one is a page the dashboard serves
    table = browser.find_element(By.ID, "results")
    head = [th.text for th in table.find_elements(By.TAG_NAME, "th")]
    row = [td.text for td in table.find_elements(By.CSS_SELECTOR, "tr")[1].find_elements(By.TAG_NAME, "td")]
    assert row[head.index("unit")] == "bytes" and row[head.index("policy")] == "1,100"
    assert _errors(browser) == []
