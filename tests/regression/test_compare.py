"""End-to-end comparisons with the real launcher (`mlgo-farm policy-cc`) and real clang-22."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from farm.cli import main
from farm.config import load_settings
from farm.errors import FarmError, InputError
from regression import benchmarks, compare
from regression.compare import RunRequest, run_comparison
from regression.rules import DEFAULT_RULES, HEURISTIC_BASELINE, PREVIOUS_BASELINE, judge, run_verdict
from tests.conftest import DATA
from tests.regression.conftest import with_corrupt_module, write_onnx_policy

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
    assert result.verdict == "ok" and result.skipped == []
    run = result.run
    assert (run.status, run.policy_id, run.llvm_version) == ("complete", "heuristic", "22.1.8")
    assert result.report_url.endswith("/regression/e2e/same/index.html")
    assert Path(result.report_url.removeprefix("file://")).read_bytes() == \
        (result.report_dir / "index.html").read_bytes()
    assert "Report: " + result.report_url in (result.report_dir / "summary.txt").read_text()


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
    assert main(["regress", "run", "--corpus", str(compare_corpus), "--builder", "cli", "--run-id", "c1"]) == 2
    err = capsys.readouterr().err
    assert err == "mlgo-farm: error: run c1 of builder cli already exists (complete)\n"


def test_vocabulary_version_is_recorded(compare_corpus: Path, ir2vec_vocab: Path, tmp_path: Path) -> None:
    published = tmp_path / "ir-v7"
    published.mkdir()
    vocab = published / "vocab.json"
    shutil.copy(ir2vec_vocab, vocab)
    assert compare.vocab_version(vocab).startswith("sha256-")  # no manifest: the content names it
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
    import hashlib

    from farm.store import store_from_settings
    from vocabgen.publish import publish

    with pytest.raises(InputError, match="no ir vocabulary has been published"):
        run_comparison(RunRequest(builder="pub", corpus=compare_corpus, vocab="store:latest", repeats=0))
    data = ir2vec_vocab.read_bytes()
    manifest = {"kind": "ir", "dimension": 8, "sha256": hashlib.sha256(data).hexdigest(),
                "validation": {"ok": True}, "lineage": {}}
    published = publish(store_from_settings(), data, manifest)
    result = run_comparison(RunRequest(builder="pub", corpus=compare_corpus, vocab="store:latest", repeats=0))
    assert result.run.vocab_version == published["version"]
    assert result.run.config["vocab"] == "store:latest"
    assert result.skipped == [] and _values(result, "policy")
