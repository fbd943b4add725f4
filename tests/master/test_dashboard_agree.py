"""The pages say what the CLI says (issue 48, item 6), through Flask's test client on a store as the demo leaves it
(tests/master/trained.py): the policies list shows what decides `latest` (the held-out `.text`, the size check) as
`policy list` does; a trained policy's page has no blank row, colours a tie as shown as no regression and labels the
figure it judges apart from the one it does not; the overview counts a MIR vocabulary's composed entities apart
from its trained and filler ones, and says why Buildbot's console and grid list no build."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from farm.config import load_settings
from farm.objectstore import FileStore
from master.dashboard.app import create_app
from tests.master.test_dashboard import populate
from tests.master.test_dashboard_policies import VA, VB, _table
from tests.master.trained import add_trained, trained_manifest


@pytest.fixture
def farm(tmp_path: Path):
    populate(tmp_path / "store")
    add_trained(tmp_path / "store")
    store = FileStore(tmp_path / "store")
    return create_app(load_settings(), store=store, history=tmp_path / "history.sqlite").test_client(), store


def _cells(html: str) -> list[str]:
    return re.findall(r"<td[^>]*>(.*?)</td>", html, flags=re.S)


def _row(table: str, first: str) -> str:
    return next(r for r in table.split("<tr") if f"<td>{first}</td>" in r or f">{first}</a></td>" in r)


def test_the_policies_list_shows_the_held_out_text_and_the_size_check_that_decide_latest(farm) -> None:
    c, _ = farm
    page = c.get("/policies/").get_data(as_text=True)
    table = _table(page, "policies")
    head = table.split("</tr>")[0]
    assert "<th>held-out .text</th><th>size check</th>" in head
    assert "agreement" not in head and "majority" not in head  # no trained version records one: no column of `-`
    latest, held = _row(table, VA), _row(table, VB)
    assert ">0.9637x<" in latest and 'class="size-check ok"' in latest and ">0.9871x passed<" in latest
    assert ">1.0021x<" in held and 'class="size-check regression"' in held and ">1.0150x failed<" in held
    assert "not below 0.9950x" in held  # the check's detail, as the gate recorded it


def test_a_warm_start_keeps_its_agreement_column_and_a_version_without_a_size_check_says_none(farm) -> None:
    c, store = farm
    index = json.loads(store.get("policies/index.json"))
    index["versions"].append({"advisor": "inline", "version": "P1", "state": "superseded",
                              "published_at": "2026-01-01T00:00:00Z", "heldout_agreement": 0.875,
                              "heldout_majority_baseline": 0.8125})
    store.put("policies/index.json", json.dumps(index).encode())
    table = _table(c.get("/policies/").get_data(as_text=True), "policies")
    assert "<th>agreement (warm start)</th><th>majority baseline</th>" in table
    warm = _row(table, "P1")
    assert ">0.8750<" in warm and ">0.8125<" in warm and 'title="no size check recorded">-<' in warm


def test_a_trained_policys_page_has_no_blank_row_and_a_tie_as_shown_is_no_regression(farm) -> None:
    c, _ = farm
    page = c.get(f"/policies/inline/{VA}/").get_data(as_text=True)
    metrics = _table(page, "metrics")
    assert all(cell.strip() for cell in _cells(metrics)), metrics  # no agreement rows left empty
    assert "agreement" not in metrics and "majority" not in metrics
    assert "held-out .text / heuristic (worst package)</td><td class=\"num\">1.0000<" in metrics  # a ratio, not "1"
    held = _table(page, "heldout")
    assert all(cell.strip() for cell in _cells(held.split("<td>geomean</td>")[0])), held
    zlib = _row(held, "zlib")  # 162,181 / 162,176 = 1.00003: a tie as shown
    assert 'class="num tie">1.0000<' in zlib and "regression" not in zlib
    from master.dashboard.views_policies import ratio_class

    assert ratio_class(1.00003) == "tie" and ratio_class(1.00006) == "regression" and ratio_class(0.99994) == "ok"


def test_the_bzip2_figures_say_which_is_judged_and_how_the_size_check_differs(farm) -> None:
    c, _ = farm
    page = c.get(f"/policies/inline/{VA}/").get_data(as_text=True)
    held = _table(page, "heldout")
    assert "<th>policy / heuristic (judged)</th><th>sum of shipped objects (not judged)</th>" in held
    bzip2 = _row(held, "bzip2")
    assert "<td>linked files</td>" in bzip2 and 'class="num ok">0.9990<' in bzip2 and ">1.0017<" in bzip2
    assert "the judged figure" in _row(held, "zlib")  # a package judged by its objects shows one figure, not two
    note = page.split('id="two-figures">')[1].split("</p>")[0]
    assert "the <code>bzip2</code> program" in note and "decides <code>latest</code>" in note
    assert "bzip2 0.9871x" in _table(page, "checks")  # the size check's own bzip2 figure, in its own table


def test_a_package_without_a_ratio_says_why(farm) -> None:
    c, store = farm
    m = trained_manifest(VA, "2026-02-10T00:00:00Z", None)
    m["metrics"]["heldout"] = [*m["metrics"]["heldout"], {
        "package": "lua5.4", "modules": 29, "heuristic": 300000, "policy": 290000, "ratio": None,
        "failed": ["lvm.c"], "errors": {"lvm.c": "clang exited with code 1"}, "shipped": None}]
    store.put(f"policies/inline/{VA}/manifest.json", json.dumps(m).encode())
    page = c.get(f"/policies/inline/{VA}/").get_data(as_text=True)
    lua = _row(_table(page, "heldout"), "lua5.4")
    assert "no ratio: 1 of 30 modules failed to compile (lvm.c: clang exited with code 1)" in lua
    assert "not recorded: a package below has no ratio" in _table(page, "metrics")


def test_the_overview_counts_a_mir_vocabularys_trained_composed_and_filler_entities(farm) -> None:
    c, _ = farm
    page = c.get("/").get_data(as_text=True)
    mir = _row(_table(page.replace('<table class="mlgo-table" id="overview-vocab">', '<table id="v">'), "v"), "mir")
    assert "Opcodes 6,868: 396 trained, 5,908 composed, 564 filler" in mir, mir
    assert "CommonOperands 4: 4 trained, 0 composed, 0 filler" in mir
    assert "396/6868 trained" not in mir
    ir = c.get("/vocab/").get_data(as_text=True)
    assert "Opcodes 3/3 trained, Types 2/2, Arguments 1/2" in ir  # IR composes nothing: its line as before


def test_the_overview_says_why_buildbots_console_and_grid_are_empty(farm, monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    c, store = farm
    note = c.get("/").get_data(as_text=True).split('id="buildbot-views">')[1].split("</p>")[0]
    assert "they stay empty" in note and "no change source is configured" in note and "waterfall" in note
    assert "they stay empty" in c.get("/index.html").get_data(as_text=True)  # and in Buildbot's own "Farm" entry
    monkeypatch.setenv("MLGO_FARM_LLVM_REPO", "https://github.com/llvm/llvm-project.git")
    monkeypatch.setenv("MLGO_FARM_LLVM_POLL_INTERVAL", "600")  # the page reads the settings; nothing polls here
    polled = create_app(load_settings(), store=store, history=tmp_path / "history.sqlite").test_client()
    note = polled.get("/").get_data(as_text=True).split('id="buildbot-views">')[1].split("</p>")[0]
    assert "https://github.com/llvm/llvm-project.git" in note and "forced builds" in note
    assert "stay empty" not in note


def test_the_plugins_icon_lookup_walks_the_names_and_a_script_without_it_is_left_alone() -> None:
    """buildbot_wsgi_dashboards 4.3.0 looks the menu icon up by the indices of its candidate names: no icon is ever
    found ("Could not find icon flask" on every page). The farm serves the script with the lookup walking the names."""
    import buildbot_wsgi_dashboards

    from master.dashboard.mount import fixed_scripts

    installed = (Path(buildbot_wsgi_dashboards.__file__).parent / "static" / "scripts.js").read_text()
    fixed = fixed_scripts(installed)
    assert fixed is not None and len(fixed) == len(installed)
    changed = [i for i, (a, b) in enumerate(zip(installed, fixed, strict=True)) if a != b]
    assert fixed[changed[0] - 12:changed[-1] + 18] == "for(const a of c){const h=RV[a]"
    assert fixed_scripts(fixed) is None and fixed_scripts("console.log('a later plugin')") is None
