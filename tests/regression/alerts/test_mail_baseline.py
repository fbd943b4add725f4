"""An alert says which baseline regressed, leaves compile time out of its regressed rows, and says what to do."""

from __future__ import annotations

from pathlib import Path

from farm.config import SMTPConfig
from regression.alerts import mailtext
from regression.alerts.records import REGRESSION
from regression.history import History
from regression.rules import HEURISTIC_BASELINE, PREVIOUS_BASELINE, Comparison


def _c(subject: str, delta: float, kind: str, metric: str, baseline: str, gating: bool) -> Comparison:
    return Comparison(subject, kind, metric, baseline, 1000.0, 1000.0 * (1 + delta / 100), delta, None, "regressed",
                      gating)


BINARY = _c("zlib", 1.39, "binary", "text_size", HEURISTIC_BASELINE, True)
AGAIN = _c("zlib", 2.0, "binary", "text_size", PREVIOUS_BASELINE, True)
#: the policy build's compile time is the channel's cost: +300 % against plain clang, and gating nothing
COMPILE = _c("zlib", 300.0, "build", "compile_time", HEURISTIC_BASELINE, False)
MODULE = _c("zlib/a.c", 9.0, "module", "text_size", HEURISTIC_BASELINE, False)


def _body(tmp_path: Path, comps: list[Comparison], policy: str = "p2") -> str:
    h = History(tmp_path / "h.sqlite")
    good = h.start_run("r1", "nightly", llvm_version="22.1.8", llvm_commit=None, policy_id="p1", vocab_version=None)
    h.complete_run(good, "ok", "file:///store/regression/nightly/r1/index.html")
    run = h.start_run("r2", "nightly", llvm_version="22.1.8", llvm_commit=None, policy_id=policy, vocab_version=None)
    facts = mailtext.Facts(report_url="https://farm.example/r2/index.html", before=good)
    smtp = SMTPConfig(recipients="a@example.org")
    return mailtext.compose(REGRESSION, run, "regression", comps, [], "SUMMARY\n", smtp, facts).get_content()


def test_compile_time_is_not_listed_as_regressed() -> None:
    lines = mailtext.regressed_lines([BINARY, COMPILE, MODULE])
    assert lines[0] == "Regressed (2):", lines
    assert not any("compile_time" in ln for ln in lines), lines
    assert any(ln.split()[0] == "zlib/a.c" for ln in lines[2:])  # modules still are: they show what a policy traded


def test_the_intro_names_the_baseline_that_regressed(tmp_path: Path) -> None:
    first = _body(tmp_path / "h", [BINARY, COMPILE]).splitlines()[0]
    assert first == "nightly: the ML policy now regresses against LLVM's heuristic (built in the same run)."
    only_previous = _body(tmp_path / "p", [AGAIN]).splitlines()[0]
    assert only_previous == ("nightly: the ML policy now regresses against the previous good run (r1), "
                             "not against the heuristic.")
    both = _body(tmp_path / "b", [BINARY, AGAIN]).splitlines()[0]
    assert both == ("nightly: the ML policy now regresses against both LLVM's heuristic (built in the same run) "
                    "and the previous good run (r1).")


def test_the_alert_says_what_to_do(tmp_path: Path) -> None:
    body = _body(tmp_path / "a", [BINARY])
    todo = body.split("What to do:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert todo[0] == "  Open the report (link at the top) for every row; the regressed rows above are the worst."
    assert "The policy changed since the previous good run (p1 -> p2)" in todo[1]
    same = _body(tmp_path / "s", [BINARY], policy="p1").split("What to do:\n", 1)[1]
    assert "The policy did not change since the previous good run" in same
    smtp = SMTPConfig(recipients="a@example.org")
    run = History(tmp_path / "first.sqlite").start_run("r1", "nightly", llvm_version="22.1.8", llvm_commit=None,
                                                       policy_id="p1", vocab_version=None)
    first = mailtext.compose(REGRESSION, run, "regression", [BINARY], [], "", smtp,
                           mailtext.Facts(report_url="https://farm.example/r1/")).get_content()
    assert "The builder has no good run before this one" in first.split("What to do:\n", 1)[1]
