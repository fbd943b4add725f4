"""End-to-end comparisons with the real launcher (`mlgo-farm policy-cc`) and real clang-22."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from farm.cli import main
from farm.config import load_settings
from farm.errors import FarmError, InputError
from regression import benchmarks, compare, lineage, report
from regression.alerts.outbox import Outbox
from regression.compare import RunRequest, run_comparison
from regression.rules import DEFAULT_RULES, HEURISTIC_BASELINE, PREVIOUS_BASELINE, judge, run_verdict
from tests.conftest import DATA
from tests.policyhost.conftest import write_onnx_policy
from tests.regression.conftest import with_corrupt_module

CSRC = DATA / "csrc"
BENCH = benchmarks.local_benchmark(CSRC, ("20000",))


def _values(result, policy: str) -> dict[tuple[str, str], float]:
    h = compare.open_history()
    return {(m.subject, m.metric): m.value for m in h.measurements(result.run, policy)}


def test_heuristic_policy_reproduces_the_heuristic(compare_corpus: Path) -> None:
    result = run_comparison(RunRequest(builder="e2e", run_id="same", corpus=compare_corpus, benchmarks=(BENCH,),
                                       policy="heuristic", repeats=3, jobs=2))
    heur, pol = _values(result, "heuristic"), _values(result, "policy")
    sizes = {k for k in heur if k[1] in ("text_size", "instructions")}
    modules = json.loads((compare_corpus / "corpus_description.json").read_text())["modules"]
    assert {f"corpus:csrc/{m}" for m in modules} | {f"csrc/{m}" for m in modules} <= {s for s, _ in sizes}
    assert {("corpus:csrc", "text_size"), ("csrc", "text_size"), ("csrc/run", "instructions")} <= sizes
    kinds = {(m.subject, m.metric): m.kind for m in compare.open_history().measurements(result.run)}
    assert (kinds[("corpus:csrc", "text_size")], kinds[("csrc", "text_size")]) == ("total", "binary")
    assert {k: heur[k] for k in sizes} == {k: pol[k] for k in sizes}  # byte-identical builds measure the same
    # instruction counts come with their spread: each build counted `repeats` times (issue 38 item 4)
    counts = [m for m in compare.open_history().measurements(result.run) if m.metric == "instructions"]
    assert counts and all(len(m.samples) == 3 and m.value == sorted(m.samples)[1] for m in counts)
    assert result.verdict == "ok" and result.skipped == []
    run = result.run
    assert (run.status, run.policy_id, run.llvm_version) == ("complete", "heuristic", "22.1.8")
    assert result.report_url.endswith("/regression/e2e/same/index.html")
    assert Path(result.report_url.removeprefix("file://")).read_bytes() == \
        (result.report_dir / "index.html").read_bytes()
    # readers get the report on the master's dashboard, which serves the same stored bytes
    assert result.web_url == load_settings().buildbot.dashboard("store/regression/e2e/same/index.html")
    assert "Report: " + result.web_url in (result.report_dir / "summary.txt").read_text()
    assert result.headline == report.headline(report.table_rows(result.comparisons), "ok", [])
    assert result.headline.endswith(" ok") and " text +0.00%" in result.headline


def test_decision_changing_policy_is_judged_from_its_measurements(compare_corpus: Path) -> None:
    first = run_comparison(RunRequest(builder="e2e", run_id="good", corpus=compare_corpus, benchmarks=(BENCH,),
                                      policy="heuristic", repeats=0))
    assert first.verdict == "ok"
    result = run_comparison(RunRequest(builder="e2e", run_id="never", corpus=compare_corpus, benchmarks=(BENCH,),
                                       policy="never", repeats=0))
    heur, pol = _values(result, "heuristic"), _values(result, "policy")
    assert any(heur[k] != pol[k] for k in heur if k[1] == "text_size")  # inlining nothing changes the code
    by_base = {(c.subject, c.metric, c.baseline): c for c in result.comparisons}
    prev = _values(first, "policy")
    for (subject, metric, baseline), c in by_base.items():
        base = heur if baseline == HEURISTIC_BASELINE else prev
        expected = judge(DEFAULT_RULES[metric], base[(subject, metric)], pol[(subject, metric)])
        assert (c.verdict, c.base_value, c.value) == (expected.verdict, base[(subject, metric)],
                                                      pol[(subject, metric)])
    assert {b for _, _, b in by_base} == {HEURISTIC_BASELINE, PREVIOUS_BASELINE}
    assert result.verdict == run_verdict(result.comparisons)
    # and the verdicts are what the history holds
    stored = compare.open_history().verdicts(result.run)
    assert sorted(stored, key=repr) == sorted(result.comparisons, key=repr)


def test_onnx_policy_is_identified_by_its_content(compare_corpus: Path, tmp_path: Path) -> None:
    model = write_onnx_policy(tmp_path / "callee-small.onnx", "callee_basic_block_count", "Less", 3)
    result = run_comparison(RunRequest(builder="onnx", corpus=compare_corpus, policy=str(model), repeats=0))
    assert result.run.policy_id.startswith("callee-small-") and len(result.run.policy_id) == len("callee-small-") + 12
    assert result.run.config["policy"] == str(model)
    assert _values(result, "policy")  # measured through the model


def test_bad_module_is_skipped_and_listed(compare_corpus: Path, tmp_path: Path) -> None:
    corpus = with_corrupt_module(compare_corpus, tmp_path / "withbad")
    result = run_comparison(RunRequest(builder="bad", corpus=corpus, policy="heuristic", repeats=0))
    assert result.run.status == "complete"
    assert {(s.subject, s.variant) for s in result.skipped} == {("corpus:withbad/corrupt", "heuristic"),
                                                                ("corpus:withbad/corrupt", "policy")}
    assert all("\n" not in s.reason and s.reason for s in result.skipped)
    assert ("corpus:withbad/sort.c", "text_size") in _values(result, "policy")
    assert "corpus:withbad/corrupt [policy]: policy-cc" in (result.report_dir / "summary.txt").read_text()


def test_bad_input_fails_before_recording_a_run(compare_corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown policy 'smart'"):
        run_comparison(RunRequest(corpus=compare_corpus, policy="smart"))
    bogus = tmp_path / "bogus.onnx"
    bogus.write_bytes(b"not a model")
    with pytest.raises(InputError):
        run_comparison(RunRequest(corpus=compare_corpus, policy=str(bogus)))
    with pytest.raises(InputError, match="vocabulary"):
        run_comparison(RunRequest(corpus=compare_corpus, vocab=tmp_path / "missing.json"))
    with pytest.raises(InputError, match="nothing to compare"):
        run_comparison(RunRequest())
    with pytest.raises(InputError, match="benchmark names must differ: csrc, csrc"):
        run_comparison(RunRequest(benchmarks=(BENCH, BENCH)))
    with pytest.raises(InputError, match="builder 'a/b'"):
        run_comparison(RunRequest(builder="a/b", corpus=compare_corpus))
    assert compare.open_history().runs() == []


def test_nothing_measurable_fails_the_run_in_one_line(tmp_path: Path) -> None:
    src = tmp_path / "broken"
    src.mkdir()
    shutil.copy(DATA / "bad" / "syntax_error.c", src)
    with pytest.raises(FarmError, match=r"^run r1: nothing could be measured \(broken \[heuristic\]: 1 source"):
        run_comparison(RunRequest(run_id="r1", benchmarks=(benchmarks.local_benchmark(src),), repeats=0))
    [run] = compare.open_history().runs()
    assert run.status == "failed" and "nothing could be measured" in run.error


def test_dead_object_store_keeps_the_result(compare_corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.servers import free_port

    monkeypatch.setenv("MLGO_FARM_STORE_URL", "s3://farm/reports")
    monkeypatch.setenv("MLGO_FARM_STORE_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    result = run_comparison(RunRequest(builder="nostore", corpus=compare_corpus, repeats=0))
    assert result.publish_error and "\n" not in result.publish_error
    assert result.run.status == "complete" and result.run.report_url.startswith("file://")
    assert Path(result.run.report_url.removeprefix("file://")).is_file()
    assert result.web_url == result.run.report_url  # not published: the dashboard has nothing to serve


def test_cli_run_exit_codes(compare_corpus: Path, capsys: pytest.CaptureFixture) -> None:
    code = main(["regress", "run", "--corpus", str(compare_corpus), "--policy", "never", "--builder", "cli",
                 "--run-id", "c1", "--opt=-Oz", "--fail-on-regression", "--no-publish",
                 "--bench-dir", str(CSRC), "--bench-arg", "3000", "--repeats", "0"])
    out = capsys.readouterr().out
    run = compare.open_history().run("c1", "cli")
    assert run.config["benchmarks"] == ["csrc"] and run.config["opt_flags"] == ["-Oz"]
    assert any(ln.startswith("csrc/run ") and "instructions" in ln for ln in out.splitlines())
    assert out.startswith(f"mlgo-farm regression run c1 on builder cli: {run.verdict.upper()}")
    assert code == (10 if run.verdict == "regression" else 0)
    assert f"report: {load_settings().var_dir}/regression/runs/cli/c1/report" in out
    # the line the Buildbot step shows as its summary (master/outputs.py reads it)
    verdict_line = report.headline(report.table_rows(compare.open_history().verdicts(run)), run.verdict,
                                   compare.open_history().skipped(run))
    assert f"verdict: {verdict_line}" in out.splitlines()
    assert run.config["reproduce"].startswith(f"mlgo-farm regress run --corpus {compare_corpus} --bench-dir {CSRC} ")
    assert main(["regress", "run", "--corpus", str(compare_corpus), "--builder", "cli", "--run-id", "c1"]) == 2
    err = capsys.readouterr().err
    assert err == "mlgo-farm: error: run c1 of builder cli already exists (complete)\n"


def test_vocabulary_version_is_recorded(compare_corpus: Path, ir2vec_vocab: Path, tmp_path: Path) -> None:
    published = tmp_path / "ir-v7"
    published.mkdir()
    vocab = published / "vocab.json"
    shutil.copy(ir2vec_vocab, vocab)
    assert lineage.vocab_version(vocab).startswith("sha256-")  # no manifest: the content names it
    (published / "manifest.json").write_text(json.dumps({"version": "20261122-ir-abc", "kind": "ir"}))
    result = run_comparison(RunRequest(builder="vocab", corpus=compare_corpus, policy="heuristic", vocab=vocab,
                                       repeats=0))
    assert result.run.vocab_version == "20261122-ir-abc"
    h = compare.open_history()
    assert {m.subject for m in h.measurements(result.run, "policy")}  # the launcher compiled with it
    import sqlite3

    with sqlite3.connect(compare.history_path(load_settings())) as db:
        assert db.execute("SELECT DISTINCT vocab_version FROM measurements").fetchall() == [("20261122-ir-abc",)]


def test_differing_output_is_a_regression_not_a_measurement(tmp_path: Path) -> None:
    src = tmp_path / "whoami"
    src.mkdir()
    # prints its own path: the heuristic and the policy binaries live in different directories
    (src / "main.c").write_text('#include <stdio.h>\nint main(int c, char **v) { puts(v[0]); return 0; }\n')
    result = run_comparison(RunRequest(builder="out", benchmarks=(benchmarks.local_benchmark(src),), repeats=0))
    assert result.verdict == "regression"
    assert [(s.subject, s.variant, s.reason) for s in result.skipped] == [
        ("whoami/run", "policy", "wrong output: differs from the heuristic build's")]
    assert not [c for c in result.comparisons if c.metric == "instructions"]
    assert "wrong output" in (result.report_dir / "summary.txt").read_text()


def test_vocabulary_published_by_the_farm_is_resolved_once(compare_corpus: Path, ir2vec_vocab: Path) -> None:
    from tests.policyhost.conftest import publish_vocab

    with pytest.raises(InputError, match="no ir vocabulary has been published"):
        run_comparison(RunRequest(builder="pub", corpus=compare_corpus, vocab="store:latest", repeats=0))
    version = publish_vocab(ir2vec_vocab.read_bytes())
    result = run_comparison(RunRequest(builder="pub", corpus=compare_corpus, vocab="store:latest", repeats=0))
    assert result.run.vocab_version == version
    assert result.run.config["vocab"] == "store:latest"
    assert result.skipped == [] and _values(result, "policy")


def test_policy_that_cannot_serve_the_advisor_fails_before_recording_a_run(compare_corpus: Path,
                                                                           ir2vec_vocab: Path) -> None:
    for policy in ("heuristic", "never", "always"):
        with pytest.raises(InputError, match=f"^policy {policy} answers the inline advisor, not regalloc"):
            run_comparison(RunRequest(corpus=compare_corpus, policy=policy, advisor="regalloc"))
    with pytest.raises(InputError, match=r"^policy spill answers the regalloc advisor, not inline"):
        run_comparison(RunRequest(corpus=compare_corpus, policy="spill", advisor="inline"))
    with pytest.raises(InputError,
                       match=r"^an IR2Vec vocabulary does not apply to the regalloc advisor \(only to: inline\)$"):
        run_comparison(RunRequest(corpus=compare_corpus, policy="spill", vocab=ir2vec_vocab))
    with pytest.raises(InputError, match="IR2Vec vocabulary does not apply"):
        run_comparison(RunRequest(corpus=compare_corpus, policy="spill", vocab="store:latest"))
    assert compare.open_history().runs() == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--opt", "Oz"], "optimization flags must start with '-' (as --opt=-Oz), not 'Oz'"),
        (["--policy", "always", "--advisor", "regalloc"],
         "policy always answers the inline advisor, not regalloc "
         "(built-in regalloc policies: spill; or an .onnx model)"),
    ],
)
def test_cli_run_inputs_are_checked_before_recording(compare_corpus: Path, capsys: pytest.CaptureFixture,
                                                     options: list[str], message: str) -> None:
    assert main(["regress", "run", "--corpus", str(compare_corpus), "--no-publish", *options]) == 2
    assert capsys.readouterr().err == f"mlgo-farm: error: {message}\n"
    assert compare.open_history().runs() == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--policy-timeout", "0"], "argument --policy-timeout: '0' is not a positive number"),
        (["--policy-timeout", "-3"], "argument --policy-timeout: '-3' is not a positive number"),
        (["--policy-timeout", "nan"], "argument --policy-timeout: 'nan' is not a positive number"),
        (["--repeats", "-1"], "argument --repeats: '-1' is not an integer >= 0"),
        (["--jobs", "0"], "argument --jobs: '0' is not a positive integer"),
    ],
)
def test_cli_run_numbers_are_usage_errors(compare_corpus: Path, capsys: pytest.CaptureFixture,
                                          options: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as e:
        main(["regress", "run", "--corpus", str(compare_corpus), "--no-publish", *options])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and message in err, err
    assert compare.open_history().runs() == []


def _published_eviction_policy(tmp_path: Path, capsys: pytest.CaptureFixture) -> str:
    """A smoke eviction policy trained on generated register-pressure C and published (`policy publish --advisor
    regalloc`) to this test's store: what the speed builder's default, store:latest, then judges. Its version."""
    from farm.toolchain import Toolchain
    from policytrain import evict_data
    from policytrain.corpora import Package
    from policytrain.evict_train import train_to
    from tests.policytrain.evictsrc import write_sources
    from workers.corpus import from_sources

    tc = Toolchain.from_settings()
    pkgs = [Package(n, tuple(evict_data.units(n, from_sources(write_sources(tmp_path / f"{n}-src", files=1, seed=s),
                                                              tmp_path / n, tc, jobs=2, level="O2").path)))
            for n, s in (("alpha", 31), ("beta", 32))]
    model = tmp_path / "evict.onnx"
    train_to(model, tc, (pkgs[0],), (pkgs[1],), "smoke", progress=lambda _: None)
    assert main(["policy", "publish", "--advisor", "regalloc", str(model)]) == 0
    return capsys.readouterr().out.split()[2]


def test_nightly_regalloc_builder_defaults_measure(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The registry's regalloc builder, as scheduled (its default policy: the published eviction policy), on a
    local benchmark: it measures."""
    from master.registry import REGISTRY, by_name
    from master.stepspec import render_args

    version = _published_eviction_policy(tmp_path, capsys)
    builder = by_name(REGISTRY)["regression-regalloc-speed"]
    assert builder.defaults()["policy"] == "store:latest"
    args = render_args(builder.steps[0].args, builder.defaults().get)
    at = args.index("--bench")
    # no Debian download in a test; the builder's --pgo trains its profile on a run of its own
    args[at:at + 2] = ["--bench-dir", str(CSRC), "--bench-arg", "3000", "--bench-train-arg", "2000"]
    code = main([*args, "--repeats", "0", "--no-publish", "--run-id", "n1"])
    out = capsys.readouterr().out
    run = compare.open_history().run("n1", "regression-regalloc-speed")
    assert (run.status, run.policy_id, run.config["advisor"]) == ("complete", version, "regalloc")
    assert code == (10 if run.verdict == "regression" else 0)
    rows = compare.open_history().measurements(run, "policy")
    assert {("csrc/run", "instructions"), ("csrc", "text_size")} <= {(m.subject, m.metric) for m in rows}
    assert "Skipped" not in out


def test_report_that_cannot_be_written_keeps_the_verdict_and_the_alert(tmp_path: Path, smtp_env,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture) -> None:
    """A full disk while rendering: one line, exit 1, and the run is complete with its verdict and queued alert."""
    import errno

    from regression import report

    src = tmp_path / "whoami"
    src.mkdir()
    (src / "main.c").write_text('#include <stdio.h>\nint main(int c, char **v) { puts(v[0]); return 0; }\n')
    real_render, disk_full = report.render, [True]

    def render(*args, **kw):
        if disk_full[0]:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_render(*args, **kw)

    monkeypatch.setattr(report, "render", render)
    assert main(["regress", "run", "--bench-dir", str(src), "--repeats", "0", "--builder", "full",
                 "--run-id", "f1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "mlgo-farm: error: run f1 of builder full is complete (regression), but its report could not be written to ")
    assert "No space left on device; render it again with `mlgo-farm regress report f1 --builder full`" in err
    history = compare.open_history()
    run = history.run("f1", "full")
    assert (run.status, run.verdict) == ("complete", "regression")
    [alert] = Outbox(history).messages()
    assert (alert.kind, alert.run_id, alert.builder) == ("regression", "f1", "full")
    from regression.tasks import deliver_alerts

    assert alert.sent is None and deliver_alerts()["sent"] == 1 and len(smtp_env.messages) == 1  # sent all the same
    disk_full[0] = False
    assert main(["regress", "report", "f1", "--builder", "full"]) == 0
    assert "run f1 on builder full: REGRESSION" in capsys.readouterr().out


def test_a_corpus_from_another_front_end_is_refused_before_recording(tmp_path: Path, toolchain,
                                                                    capsys: pytest.CaptureFixture) -> None:
    """Issue 34: `-O2` bitcode compiled at `-Oz` lacks `minsize optsize`, so a comparison on it measures a build
    nobody makes at those flags: one line, nothing recorded."""
    from workers.corpus import from_sources

    o2 = from_sources(CSRC, tmp_path / "o2", toolchain, jobs=2).path
    assert main(["regress", "run", "--corpus", str(o2), "--no-publish", "--policy", "never"]) == 2
    assert capsys.readouterr().err == (f"mlgo-farm: error: corpus {o2} was compiled by an -O2 front end, but a "
                                       "comparison at -Oz needs -Oz bitcode (the front end writes the level's "
                                       "function attributes): rebuild it with --level Oz\n")
    assert compare.open_history().runs() == []


def test_a_thinlto_comparison_builds_each_variant_as_distributed_thinlto(tmp_path: Path) -> None:
    """`regress run --thinlto`: pre-link, thin link, one backend per module through the launcher, linked by ld.lld.
    The heuristic through the launcher builds exactly the heuristic's binary, the binary runs, its reproduce line
    keeps --thinlto, and its objects are backends' (not the pre-link's bitcode, which llvm-size would not read)."""
    result = run_comparison(RunRequest(builder="thin", run_id="t1", benchmarks=(BENCH,), policy="heuristic",
                                       repeats=0, callgrind=False, jobs=2, thinlto=True))
    assert result.verdict == "ok" and result.skipped == [], result.skipped
    heur, pol = _values(result, "heuristic"), _values(result, "policy")
    assert heur[("csrc", "text_size")] == pol[("csrc", "text_size")] > 0
    assert result.run.config["thinlto"] is True and " --thinlto " in result.run.config["reproduce"] + " "
    per_file = run_comparison(RunRequest(builder="file", run_id="f1", benchmarks=(BENCH,), policy="heuristic",
                                         repeats=0, callgrind=False, jobs=2))
    assert "thinlto" not in per_file.run.config
    assert _values(per_file, "heuristic")[("csrc", "text_size")] != heur[("csrc", "text_size")]
    with pytest.raises(InputError, match=r"^--thinlto builds benchmarks; a corpus is compiled per file"):
        run_comparison(RunRequest(builder="thin", corpus=tmp_path, benchmarks=(BENCH,), thinlto=True))
