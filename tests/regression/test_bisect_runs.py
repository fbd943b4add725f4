"""An alert's bisect with real re-runs (regression/bisectrun.py): real comparisons of the tests' C benchmark with
real clang, the history file, the loopback SMTP sink. A good night, then a night where only the policy changed for
the worse: one alert; the bisect names the policy in 2 re-runs, and its re-runs neither alert, nor mail as alerts,
nor enter the trend or the next night's baseline. The pure logic (flaky, interacting inputs, the commit search) is
in test_bisect_core.py."""

from __future__ import annotations

import email
import email.policy
import html
import json
import time

from farm.cli import main
from farm.config import load_settings
from regression import compare
from regression.alerts.records import AlertStore
from regression.bisectrun import run_bisect
from tests.regression.alerts.test_delivery import _run
from tests.regression.conftest import delivered


def _mail(raw):
    return raw if hasattr(raw, "get_payload") else email.message_from_bytes(raw, policy=email.policy.default)


def test_only_the_policy_changed_bisect_names_it_in_two_reruns(smtp_env, capsys) -> None:
    assert _run("n1", "heuristic").verdict == "ok"
    assert _run("n2", "never").verdict == "regression"
    history = compare.open_history()
    store = AlertStore(history)
    [alert] = store.alerts()
    assert alert.inputs == {"policy": ["heuristic", "never"]}
    [first] = delivered(smtp_env)

    t0 = time.time()
    assert main(["regress", "bisect", str(alert.id), "--json"]) == 0
    took = time.time() - t0
    said = json.loads(capsys.readouterr().out)
    assert said["culprit"] == "policy" and said["reruns"] == 2, said
    print(f"policy bisect: {said['reruns']} re-runs in {took:.1f} s")  # for the closing note (pytest -s)

    stored = store.get(alert.id).bisect
    assert stored["culprit"] == "policy" and stored["changed"] == {"policy": ["heuristic", "never"]}
    assert [s["swap"] for s in stored["steps"]] == [None, "policy"]
    assert [s["verdict"] for s in stored["steps"]] == ["regression", "ok"]
    assert stored["sentence"] == f"culprit policy heuristic -> never (evidence runs {', '.join(stored['evidence'])})"
    control, swapped = (history.run(r, "nightly") for r in stored["evidence"])
    assert (control.policy_id, swapped.policy_id) == ("never", "heuristic")
    assert swapped.config["bisect"]["alert"] == alert.id and swapped.config["bisect"]["good_run"] == "n1"

    # the re-runs: no new alert, no alert mail, not in the trend; the alert keeps its state
    assert len(store.alerts()) == 1 and store.get(alert.id).state == "untriaged"
    assert [r.run_id for r in history.runs("nightly")] == ["n1", "n2"]
    assert len(history.runs("nightly", bisect=True)) == 4
    # one more mail: the follow-up, in the alert mail's thread
    assert len(delivered(smtp_env)) == 2
    follow = _mail(delivered(smtp_env)[1])
    assert follow["In-Reply-To"] == first["Message-ID"] and follow["References"] == first["Message-ID"]
    assert " ".join(str(follow["Subject"]).split()) == "Re: " + " ".join(str(first["Subject"]).split())
    body = follow.get_payload(decode=True).decode().replace("\r\n", "\n")
    assert stored["sentence"] in body
    assert load_settings().buildbot.dashboard(f"alerts/{alert.id}/") in body
    for run_id in stored["evidence"]:
        assert run_id in body and stored["links"][run_id] in body

    # the alert's page and JSON on the dashboard name the culprit and link every evidence run's report
    from master.dashboard.app import create_app

    c = create_app(load_settings(), history=history.path).test_client()
    page = c.get(f"/alerts/{alert.id}/").get_data(as_text=True)
    assert f'<dd id="bisect-result">{html.escape(stored["sentence"])}</dd>' in page
    for run_id in stored["evidence"]:
        assert f'<a href="{stored["links"][run_id]}">{run_id}</a>' in page
    data = c.get(f"/alerts/{alert.id}/alert.json").get_json()
    assert data["alert"]["bisect"]["culprit"] == "policy" and data["alert"]["bisect"]["evidence"] == stored["evidence"]
    # each evidence link is the re-run's published report, served by the dashboard
    key = stored["links"][stored["evidence"][1]].split("/farm/", 1)[1]
    assert c.get(f"/{key}").status_code == 200

    # the next night is judged against n1 (the last good night), not against the good-looking bisect re-run
    nxt = _run("n3", "never")
    assert nxt.alert is None and len(store.alerts()) == 1
    assert compare.previous_baseline(history, nxt.run).run_id == "n1"
    assert len(delivered(smtp_env)) == 2


def test_only_the_benchmark_sources_changed_bisect_names_them(smtp_env, tmp_path) -> None:
    """The benchmark's sources grew between two nights (the same policy, vocabulary and LLVM): the sources are an
    input the runs record by content, the alert names them, and the bisect swaps the good night's back."""
    import shutil

    from regression import benchmarks
    from regression.compare import RunRequest, run_comparison
    from tests.conftest import DATA

    good, bad = (shutil.copytree(DATA / "csrc", tmp_path / side / "csrc") for side in ("good", "bad"))
    with (bad / "sort.c").open("a") as f:  # a function the binary keeps: its .text grows past the rules' 0.1 %
        f.write("\nint mlgo_bench_growth(int x) {\n  volatile int a[64];\n  int s = 0;\n"
                "  for (int i = 0; i < 64; i++) a[i] = x * i + (x >> (i & 7));\n"
                "  for (int i = 0; i < 64; i++) s += a[i] ^ (s << 1) ^ (s >> 3);\n  return s;\n}\n")

    def night(run_id: str, sources):
        return run_comparison(RunRequest(builder="nightly", run_id=run_id, policy="heuristic", repeats=0, jobs=2,
                                         benchmarks=(benchmarks.local_benchmark(sources, ("20000",)),)))

    assert night("s1", good).verdict == "ok"
    assert night("s2", bad).verdict == "regression"
    history = compare.open_history()
    [alert] = AlertStore(history).alerts()
    assert list(alert.inputs) == ["bench"]
    old, new = alert.inputs["bench"]
    assert old.startswith("csrc@") and new.startswith("csrc@") and old != new
    found = run_bisect(alert.id, history)
    assert found.culprit == "bench" and [s.trial.swap for s in found.steps] == [None, "bench"]
    assert [s.verdict for s in found.steps] == ["regression", "ok"]
    assert found.sentence().startswith(f"culprit bench {old} -> {new} (evidence runs ")


def test_a_bisect_that_cannot_rerun_says_why(smtp_env, capsys) -> None:
    """The good run's LLVM is not on this host: the LLVM swap cannot be made, so it cannot decide (and says why)."""
    assert _run("g1", "heuristic").verdict == "ok"
    history = compare.open_history()
    with history.transaction() as db:  # the good night ran another LLVM (as if the host was upgraded since)
        db.execute("UPDATE runs SET llvm_commit='0123456789abcdef', llvm_package=NULL WHERE run_id='g1'")
    assert _run("b1", "never").verdict == "regression"
    [alert] = AlertStore(history).alerts()
    assert set(alert.inputs) == {"llvm", "policy"}
    assert main(["regress", "bisect", "latest", "--json"]) == 0  # what a forced `regression-bisect` build runs
    said = json.loads(capsys.readouterr().out)
    assert said["alert"]["id"] == alert.id and said["culprit"] is None and said["reruns"] == 3
    found = run_bisect(alert.id, history)  # the same again from Python: the same answer
    assert found.culprit is None and len(found.steps) == 3
    assert found.why == "the re-run with llvm swapped back failed: no toolchain of LLVM 0123456789abcdef on this host"
    assert AlertStore(history).get(alert.id).bisect["why"] == found.why
    assert "cannot decide" in _mail(delivered(smtp_env)[-1]).get_payload(decode=True).decode()
    # bisected: `latest` finds nothing left to bisect (one line, exit 2)
    assert main(["regress", "bisect", "latest"]) == 2
    assert capsys.readouterr().err.strip() == "mlgo-farm: error: no open regression alert waits for a bisect"


def test_a_regression_that_does_not_come_back_is_flaky_and_undecided(smtp_env, tmp_path) -> None:
    """The bad night's own inputs, re-run, no longer regress (here: the rules file the runs read was relaxed after
    the night, an input the lineage does not record): the control says so and no swap is made."""
    from regression.compare import RunRequest, run_comparison
    from tests.regression.alerts.test_delivery import BENCH

    rules = tmp_path / "rules.toml"
    rules.write_text("[instructions]\nthreshold_pct = 0.5\n")

    def night(run_id: str, policy: str):
        return run_comparison(RunRequest(builder="nightly", run_id=run_id, benchmarks=(BENCH,), policy=policy,
                                         repeats=0, jobs=2, rules_file=rules))

    assert night("f1", "heuristic").verdict == "ok"
    assert night("f2", "never").verdict == "regression"
    history = compare.open_history()
    [alert] = AlertStore(history).alerts()
    rules.write_text("[instructions]\nthreshold_pct = 100000.0\n[text_size]\nthreshold_pct = 100000.0\n")
    found = run_bisect(alert.id, history)
    assert found.culprit is None and len(found.steps) == 1 and found.steps[0].verdict == "ok"
    assert found.why.startswith("flaky: the bad run's own inputs did not regress again")
    stored = AlertStore(history).get(alert.id).bisect
    assert stored["sentence"].startswith("cannot decide: flaky") and stored["evidence"] == [found.steps[0].run_id]
    assert len(AlertStore(history).alerts()) == 1 and [r.run_id for r in history.runs("nightly")] == ["f1", "f2"]


def _embedding_gated_policy(path, width: int):
    """A real ONNX inliner model: LLVM's own decision (`inlining_default`) when the callee's IR2Vec embedding has a
    positive first component, else "do not inline". Its code is the heuristic's with a vocabulary whose vectors are
    positive, and bigger with one whose vectors are negative: the vocabulary alone decides the verdict."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Slice", ["callee_embedding", "zero", "one", "one"], ["first"]),
             helper.make_node("Greater", ["first", "k"], ["positive"]),
             helper.make_node("Cast", ["positive"], ["gate"], to=TensorProto.INT64),
             helper.make_node("Mul", ["inlining_default", "gate"], ["inlining_decision"])]
    inits = [helper.make_tensor("k", TensorProto.FLOAT, [], [0.0])] + [
        helper.make_tensor(n, TensorProto.INT64, [1], [v]) for n, v in (("zero", 0), ("one", 1))]
    graph = helper.make_graph(
        nodes, "embedding_gate",
        [helper.make_tensor_value_info("inlining_default", TensorProto.INT64, ["batch", 1]),
         helper.make_tensor_value_info("callee_embedding", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info("inlining_decision", TensorProto.INT64, ["batch", 1])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def test_only_the_vocabulary_changed_bisect_names_it_in_two_reruns(smtp_env, tmp_path, ir2vec_vocab) -> None:
    from regression.compare import RunRequest, run_comparison
    from tests.policyhost.conftest import VOCAB_DIM, publish_vocab
    from tests.regression.alerts.test_delivery import BENCH

    sections = json.loads(ir2vec_vocab.read_text())

    def vocab(sign: float) -> str:
        same = {s: {name: [sign] * len(v) for name, v in entries.items()} for s, entries in sections.items()}
        return publish_vocab(json.dumps(same).encode())

    good_vocab, bad_vocab = vocab(1.0), vocab(-1.0)
    policy = _embedding_gated_policy(tmp_path / "gate.onnx", VOCAB_DIM)

    def night(run_id: str, version: str):
        return run_comparison(RunRequest(builder="nightly", run_id=run_id, benchmarks=(BENCH,), policy=str(policy),
                                         vocab=f"store:{version}", repeats=0, jobs=2))

    assert night("v1", good_vocab).verdict == "ok"
    assert night("v2", bad_vocab).verdict == "regression"
    history = compare.open_history()
    store = AlertStore(history)
    [alert] = store.alerts()
    assert alert.inputs == {"vocab": [good_vocab, bad_vocab]}  # the same policy file, the same LLVM

    t0 = time.time()
    found = run_bisect(alert.id, history)
    print(f"vocabulary bisect: {len(found.steps)} re-runs in {time.time() - t0:.1f} s")
    assert found.culprit == "vocab" and len(found.steps) == 2, found.sentence()
    assert [(s.trial.swap, s.verdict) for s in found.steps] == [(None, "regression"), ("vocab", "ok")]
    swapped = history.run(found.steps[1].run_id, "nightly")
    assert (swapped.vocab_version, swapped.policy_id) == (good_vocab, history.run("v2", "nightly").policy_id)
    assert store.get(alert.id).bisect["sentence"] == f"culprit vocab {good_vocab} -> {bad_vocab} (evidence runs " \
        f"{', '.join(found.evidence)})"
    assert [r.run_id for r in history.runs("nightly")] == ["v1", "v2"] and len(store.alerts()) == 1
    follow = _mail(delivered(smtp_env)[-1])
    assert follow["In-Reply-To"] == _mail(delivered(smtp_env)[0])["Message-ID"]
