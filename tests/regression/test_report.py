"""Reports: text, HTML, PNG plots and JSON from the history; publishing to a real S3 endpoint; CLI verbs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from farm.cli import main
from farm.objectstore import S3Store
from regression import report
from regression.compare import comparisons_for, history_path
from regression.history import History, Measurement, Run, Skipped
from regression.rules import DEFAULT_RULES, run_verdict
from tests.servers import S3Endpoint

# (binary size heuristic, binary size policy, module sizes heuristic, module sizes policy, Ir heur., Ir policy)
RUNS = [
    (1000, 990, {"a.c": 400, "b<x>.c": 600}, {"a.c": 380, "b<x>.c": 610}, 5000, 4900),
    (1000, 1100, {"a.c": 400, "b<x>.c": 600}, {"a.c": 500, "b<x>.c": 600}, 5000, 5600),
    (1000, 995, {"a.c": 400, "b<x>.c": 600}, {"a.c": 395, "b<x>.c": 600}, 5000, 5000),
]


def _record(h: History, i: int) -> tuple[Run, str]:
    bh, bp, mh, mp, ih, ip = RUNS[i]
    run = h.start_run(f"run{i}", "size", llvm_version="22.1.8", llvm_commit=None, policy_id="model-abc",
                      vocab_version="ir-1")
    rows = [Measurement("prog", "binary", "text_size", "heuristic", bh), Measurement("prog", "binary", "text_size",
                                                                                     "policy", bp),
            Measurement("prog/run", "workload", "instructions", "heuristic", ih),
            Measurement("prog/run", "workload", "instructions", "policy", ip)]
    rows += [Measurement(f"prog/{m}", "module", "text_size", "heuristic", v) for m, v in mh.items()]
    rows += [Measurement(f"prog/{m}", "module", "text_size", "policy", v) for m, v in mp.items()]
    h.add_measurements(run, rows)
    comparisons = comparisons_for(h, run, rows, DEFAULT_RULES)
    h.add_verdicts(run, comparisons)
    h.add_skipped(run, [Skipped("prog/broken.c", "policy", "policy-cc exited with code 1: boom")])
    verdict = run_verdict(comparisons)
    return run, verdict


@pytest.fixture
def history(tmp_path: Path) -> History:
    """Three runs of builder `size` in the farm's own history (var/ of this test)."""
    from farm.config import load_settings

    h = History(history_path(load_settings()))
    for i in range(3):
        run, verdict = _record(h, i)
        h.complete_run(run, verdict, f"file:///reports/run{i}")
    return h


def test_report_files_and_contents(history: History, tmp_path: Path) -> None:
    run = history.run("run1", "size")
    out = report.render(history, run, run.verdict, tmp_path / "rep", link="https://farm.example/r1")
    assert sorted(p.name for p in out.iterdir()) == sorted(report.FILES)
    text = (out / "summary.txt").read_text()
    assert run.verdict == "regression"
    assert text.startswith("mlgo-farm regression run run1 on builder size: REGRESSION")
    delta = (1100 - 1000) / 1000 * 100
    assert any(line.split()[:6] == ["prog", "text_size", "1,000", "1,100", f"{delta:+.2f}%", "regressed"]
               for line in text.splitlines())
    # the previous good run is run0: its policy binary was 990 bytes
    assert f"regressed ({(1100 - 990) / 990 * 100:+.2f}%)" in text
    assert "prog/broken.c [policy]: policy-cc exited with code 1: boom" in text
    assert "Report: https://farm.example/r1" in text
    page = (out / "index.html").read_text()
    assert "prog/b&lt;x&gt;.c" in page and "b<x>" not in page
    assert '<img src="size_deltas.png"' in page and '<img src="ratio_history.png"' in page


def test_plots_are_real_pngs(history: History, tmp_path: Path) -> None:
    import matplotlib.image

    run = history.run("run1", "size")
    out = report.render(history, run, run.verdict, tmp_path / "rep")
    for name in ("size_deltas.png", "ratio_history.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        img = matplotlib.image.imread(out / name)
        assert img.shape[0] >= 300 and img.shape[1] >= 600
        assert img[..., :3].std() > 0.05  # not a blank canvas


def test_ratio_history_follows_runs(history: History) -> None:
    run = history.run("run2", "size")
    points = report.ratio_history(history, run)
    assert [p[0] for p in points] == ["run0", "run1", "run2"]
    assert [p[1] for p in points] == [history.run(f"run{i}", "size").verdict for i in range(3)]
    for (_, _, series, _), (bh, bp, _, _, ih, ip) in zip(points, RUNS, strict=True):
        assert series["size (binaries + corpus)"] == pytest.approx(bp / bh)
        assert series["instructions (geomean)"] == pytest.approx(ip / ih)
    assert report.ratio_history(history, history.run("run0", "size")) == points[:1]


def test_results_json_matches_the_table(history: History, tmp_path: Path) -> None:
    run = history.run("run2", "size")
    out = report.render(history, run, run.verdict, tmp_path / "rep")
    data = json.loads((out / "results.json").read_text())
    assert (data["run_id"], data["policy_id"], data["vocab_version"]) == ("run2", "model-abc", "ir-1")
    row = next(r for r in data["rows"] if r["subject"] == "prog/a.c")
    assert (row["heuristic"], row["policy"]) == (400, 395)
    assert math.isclose(row["delta_pct"], (395 - 400) / 400 * 100)


def test_publish_to_s3_endpoint(history: History, tmp_path: Path, s3_endpoint: S3Endpoint) -> None:
    store = S3Store("farm", "pre", s3_endpoint.url, access_key_id="test", secret_access_key="test")
    store.ensure_bucket()
    run = history.run("run1", "size")
    out = report.render(history, run, run.verdict, tmp_path / "rep")
    link = report.publish(store, out, "size", "run1")
    keys = store.list("regression/size/run1/")
    assert keys == sorted(f"regression/size/run1/{n}" for n in report.FILES)
    assert store.get("regression/size/run1/index.html") == (out / "index.html").read_bytes()
    assert link == f"{s3_endpoint.url}/farm/pre/regression/size/run1/index.html"
    head = store.client.head_object(Bucket="farm", Key="pre/regression/size/run1/size_deltas.png")
    assert head["ContentType"] == "image/png"


def test_cli_report_and_history(history: History, capsys: pytest.CaptureFixture) -> None:
    assert main(["regress", "report", "run1", "--builder", "size", "--publish"]) == 0
    out = capsys.readouterr().out
    assert "run run1 on builder size: REGRESSION" in out and "published: file://" in out
    from farm.config import load_settings

    published = load_settings().var_dir / "store" / "regression" / "size" / "run1" / "index.html"
    assert published.is_file()
    assert main(["regress", "history", "--builder", "size"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines[1:]] == ["run0", "run1", "run2"]
    assert "instructions (geomean) 1.1200" in lines[2]  # 5600 / 5000
    assert lines[0].split()[6] == "llvm" and all(ln.split()[6] == "22.1.8" for ln in lines[1:])  # no commit known
    assert main(["regress", "history", "--json", "--limit", "1"]) == 0
    [entry] = json.loads(capsys.readouterr().out)
    assert entry["run_id"] == "run2" and entry["ratios"]["size (binaries + corpus)"] == pytest.approx(0.995)
    assert main(["regress", "history", "--history", str(history.path)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4
    assert main(["regress", "history", "--history", str(history.path.with_name("other.sqlite"))]) == 0
    assert capsys.readouterr().out == "no runs\n"
    commit = history.start_run("run3", "size", llvm_version="23.0.0", llvm_commit="0123456789abcdef" * 2,
                               policy_id="model-abc", vocab_version=None)
    history.fail_run(commit, "stopped")
    assert main(["regress", "history", "--builder", "size", "--limit", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[6] == "0123456789ab"  # a built LLVM: its commit


def test_report_summaries_name_the_dashboard_page_not_the_stores_link(history: History, capsys: pytest.CaptureFixture,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The history keeps the store's own link of a published report (file:// here, s3 or https elsewhere); what a
    reader is given is the report's page on the master's dashboard, at `[buildbot] web_url`."""
    from farm.config import load_settings
    from regression.outcome import report_page

    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WEB_URL", "https://farm.example/ci/")
    page = "https://farm.example/ci/plugins/wsgi_dashboards/farm/store/regression/size/run1/index.html"
    assert main(["regress", "report", "run1", "--builder", "size", "--publish"]) == 0
    out = capsys.readouterr().out
    assert f"Report: {page}\n" in out and f"page: {page}" in out
    stored = history.run("run1", "size").report_url
    assert stored.startswith("file://") and stored.endswith("/store/regression/size/run1/index.html")
    assert main(["regress", "report", "run1", "--builder", "size"]) == 0  # rendered again later: still the page
    assert f"Report: {page}\n" in capsys.readouterr().out
    settings = load_settings()
    assert report_page(settings, history.run("run1", "size")) == page
    assert report_page(settings, history.run("run0", "size")) == "file:///reports/run0"  # not published: as kept


def test_cli_report_of_unknown_run_is_one_line(history: History, capsys: pytest.CaptureFixture) -> None:
    assert main(["regress", "report", "nope", "--builder", "size"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mlgo-farm: error: no run 'nope' of builder 'size'") and err.count("\n") == 1
