"""What an alert and a step's one-line verdict say, from hand-made comparisons (no build needed)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from farm.cli import build_parser
from farm.config import SMTPConfig, load_settings
from farm.errors import FarmError
from regression import benchmarks, report
from regression.alerts import lifecycle, mailtext
from regression.alerts.records import REGRESSION
from regression.compare import RunRequest, _check_request
from regression.history import History, Skipped
from regression.outcome import reproduce_command
from regression.rules import HEURISTIC_BASELINE, PREVIOUS_BASELINE, Comparison


def _c(subject: str, delta: float, kind: str = "module", metric: str = "text_size", verdict: str = "regressed",
       baseline: str = HEURISTIC_BASELINE, gating: bool = False) -> Comparison:
    base = 1000.0
    return Comparison(subject, kind, metric, baseline, base, base * (1 + delta / 100), delta, None, verdict, gating)


def test_the_worst_twenty_regressed_rows_are_listed_with_units_and_the_rest_counted() -> None:
    deltas = [0.5 + i * 0.25 for i in range(27)]
    comps = [_c(f"zlib/m{i:02}.c", d) for i, d in enumerate(deltas)]
    comps += [_c("zlib", 1.39, kind="binary", gating=True), _c("zlib/ok.c", -3.0, verdict="improved")]
    lines = mailtext.regressed_lines(comps)
    assert lines[0] == "Regressed (28; the 20 worst shown):"
    rows = [ln.split() for ln in lines[2:-1]]
    assert len(rows) == mailtext.TOP
    assert rows[0][:3] == ["zlib", "binary", "(gating)"]  # what decides the verdict comes first
    assert rows[0][-5:] == ["1,000", "bytes", "1,014", "bytes", "+1.39%"]
    shown = [r[0] for r in rows[1:]]
    worst = [f"zlib/m{i:02}.c" for i in sorted(range(27), key=lambda i: -deltas[i])][:mailtext.TOP - 1]
    assert shown == worst
    assert lines[-1] == f"  ... and {28 - mailtext.TOP} more regressed rows in the report"
    assert "zlib/ok.c" not in "\n".join(lines)
    assert mailtext.regressed_lines([_c("a", 0.0, verdict="unchanged")]) == []
    few = mailtext.regressed_lines(comps[:3])
    assert few[0] == "Regressed (3):" and len(few) == 2 + 3  # all of them, no count line


@pytest.mark.parametrize("comps, skipped, verdict, expected", [
    ([_c("zlib", 1.39, kind="binary", gating=True), _c("zlib/a.c", 9.0)], [], "regression",
     "zlib text +1.39% REGRESSION"),
    ([_c("zlib", -0.2, kind="binary", gating=True, verdict="unchanged"), _c("zlib/a.c", 9.0)], [], "ok",
     "zlib text -0.20% ok"),
    ([_c("lua", 0.7, kind="binary", gating=True), _c("zlib", 2.5, kind="binary", gating=True),
      _c("zlib", 3.0, kind="binary", gating=True, baseline=PREVIOUS_BASELINE)], [], "regression",
     "zlib text +3.00% vs previous (+2 more) REGRESSION"),
    ([_c("zlib/run", -1.0, kind="workload", metric="instructions", gating=True, verdict="improved"),
      _c("zlib", 0.05, kind="binary", gating=True, verdict="unchanged")], [], "ok",
     "zlib text +0.05%, zlib/run Ir -1.00% ok"),
    ([_c("zlib", 0.0, kind="binary", gating=True, verdict="unchanged")],
     [Skipped("zlib/run", "policy", "wrong output: differs from the heuristic build's")], "regression",
     "wrong output zlib/run REGRESSION"),
])
def test_headline_names_the_worst_gating_row(comps, skipped, verdict, expected) -> None:
    assert report.headline(report.table_rows(comps), verdict, skipped) == expected


def test_alert_text_names_links_lineage_and_what_came_before(tmp_path: Path) -> None:
    h = History(tmp_path / "h.sqlite")
    good = h.start_run("r1", "nightly", llvm_version="22.1.8", llvm_commit=None, policy_id="p1", vocab_version=None,
                       llvm_package="clang-22 1:22.1.8-1~deb12u1")
    h.complete_run(good, "ok", "file:///store/regression/nightly/r1/index.html")
    run = h.start_run("r2", "nightly", llvm_version="23.0.0", llvm_commit="0123456789abcdef0123", policy_id="p2",
                      vocab_version="v7", config={"build_url": "https://farm.example/#/builders/3/builds/9",
                                                  "reproduce": "mlgo-farm regress run --bench zlib --no-publish"})
    assert lifecycle.transition(h, run, "regression") == REGRESSION
    s = load_settings(env={"MLGO_FARM_BUILDBOT_WEB_URL": "https://farm.example/"})

    facts = lifecycle.alert_facts(s, h, run, REGRESSION, s.buildbot.dashboard("store/regression/nightly/r2/index.html"))
    comps = [_c("zlib", 1.39, kind="binary", gating=True)]
    smtp = SMTPConfig(recipients="a@example.org", sender="farm@example.org")
    body = mailtext.compose(REGRESSION, run, "regression", comps, [], "SUMMARY\n", smtp, facts).get_content()
    dash = "https://farm.example/plugins/wsgi_dashboards/farm/"
    for line in ("  zlib text +1.39% REGRESSION",
                 "Build:              https://farm.example/#/builders/3/builds/9",
                 f"Report:             {dash}store/regression/nightly/r2/index.html",
                 f"Runs and trends:    {dash}regression/nightly/",
                 "LLVM:               23.0.0, commit 0123456789abcdef0123",
                 "Policy:             p2; vocabulary v7",
                 f"{'':20}{dash}store/regression/nightly/r1/index.html",
                 "  mlgo-farm regress run --bench zlib --no-publish"):
        assert line in body.splitlines(), (line, body)
    assert "Previous good run:  r1 (" in body and "LLVM clang-22 1:22.1.8-1~deb12u1)" in body
    assert body.rstrip().endswith("SUMMARY")
    by_hand = mailtext.Facts(report_url="file:///x/index.html")
    first = mailtext.compose(REGRESSION, run, "regression", comps, [], "", smtp, by_hand).get_content()
    assert "Build:              none (run by hand, not by Buildbot)" in first
    assert "Previous good run:  none (the first run of this builder)" in first


def test_reproducing_command_pins_published_versions_and_parses(tmp_path: Path) -> None:
    zlib = benchmarks.lookup("zlib")
    req = RunRequest(benchmarks=(zlib,), policy="/models/m.onnx", vocab="store:latest", opt_flags=("-Oz",),
                     callgrind=False, advisor="inline")
    cmd = reproduce_command(req, None, "20261122-llvm22.1.8-ir-d75-46d617adc845")
    assert cmd == ("mlgo-farm regress run --bench zlib --policy /models/m.onnx --advisor inline --vocab "
                   "store:20261122-llvm22.1.8-ir-d75-46d617adc845 --opt=-Oz --no-callgrind --reproduce")
    published = reproduce_command(RunRequest(benchmarks=(zlib,), policy="/cache/x.onnx", vocab="store:v1",
                                             advisor="inline"), "20261123-inline-abc", "v1")
    assert "--policy store:20261123-inline-abc" in published and "--vocab" not in published
    for c in (cmd, published):
        args = build_parser().parse_args(shlex.split(c)[1:])
        assert args.reproduce and args.bench == ["zlib"]


@pytest.mark.parametrize("url", ["not a url", "file:///etc/passwd", "http://x/ y", "-x"])
def test_a_bad_build_url_is_one_line(url: str) -> None:
    with pytest.raises(FarmError, match="build URL") as e:
        _check_request(RunRequest(benchmarks=(benchmarks.lookup("zlib"),), build_url=url))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("value", ["farm.example", "ftp://farm.example/", "https://farm.example/?x=1",
                                   "https://farm example/"])
def test_web_url_setting_is_checked(value: str) -> None:
    with pytest.raises(FarmError, match="web_url"):
        load_settings(env={"MLGO_FARM_BUILDBOT_WEB_URL": value})
    s = load_settings(env={"MLGO_FARM_BUILDBOT_WEB_URL": "https://farm.example/ci"})
    assert s.buildbot.url == "https://farm.example/ci/"
    assert load_settings(env={"MLGO_FARM_BUILDBOT_MASTER_HOST": "m1"}).buildbot.url == "http://m1:8010/"
