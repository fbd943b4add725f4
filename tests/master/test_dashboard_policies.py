"""The policy pages of the dashboard with hand-made store contents and history, through Flask's test client: one
version with its lineage, metrics, gate and the regression runs that used it, and the diff of two versions (their
manifests, metric deltas and the weight drift of the two ONNX models)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from farm.config import load_settings
from farm.objectstore import FileStore
from master.dashboard.app import create_app
from regression.history import History
from tests.master.test_dashboard import DS, V2, fill_history, populate

VA, VB = "20260210-llvm22.1.8-inline-ir2vec-aaaaaaaaaaaa", "20260301-llvm22.1.8-inline-ir2vec-bbbbbbbbbbbb"
RNG = np.random.default_rng(7)
W1 = RNG.normal(size=(4, 3)).astype(np.float32)
B1 = np.zeros(3, dtype=np.float32)
W2 = RNG.normal(size=(3, 1)).astype(np.float32)


def onnx_model(tensors: dict[str, np.ndarray]) -> bytes:
    """A model whose initializers are `tensors` (the graph only has to be valid ONNX, not meaningful)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(v, name=k) for k, v in tensors.items()]
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "policy",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], initializer=inits)
    model = helper.make_model(graph)
    onnx.checker.check_model(model)
    return model.SerializeToString()


MODELS = {
    VA: onnx_model({"w1": W1, "b1": B1, "w2": W2}),
    # w1 nudged by 1%, w2 doubled (a relative change of 1), b1 reshaped, w3 new
    VB: onnx_model({"w1": W1 * 1.01, "b1": np.zeros((1, 3), dtype=np.float32), "w2": W2 * 2,
                    "w3": np.ones(2, dtype=np.float32)}),
}


def manifest(version: str, agreement: float, epochs: int, when: str) -> dict:
    """What policyhost/release.py's manifest_for writes and policyhost/publish.py's publish adds."""
    digest = hashlib.sha256(MODELS[version]).hexdigest()
    return {
        "format": 1, "advisor": "inline", "kind": "warm-start (behavioural cloning of LLVM's heuristic)",
        "version": version, "published_at": when, "sha256": digest,
        "features": ["callee_basic_block_count", "callee_embedding", "caller_embedding"], "vocab_version": V2,
        "training": {"corpus": "/w/corpus", "corpus_source": "debian:zlib", "corpus_digest": "cd" * 32,
                     "corpus_lineage": {"package": "zlib"}, "dataset_id": DS, "log_digest": "ef" * 8,
                     "skipped_modules": 1},
        "parameters": {"seed": 0, "epochs": epochs, "holdout": 0.25, "hidden": 32},
        "metrics": {"heldout_agreement": agreement, "heldout_majority_baseline": 0.8125, "decisions": 412},
        "llvm": {"llvm_version": "22.1.8", "llvm_commit": None, "clang": "Debian clang version 22.1.8"},
        "validation": {"ok": True, "sha256": digest, "inputs_match_llvm": True, "llvm_features": 84,
                       "checked_at": "2026-03-01T00:00:00Z"},
    }


def entry(m: dict, state: str, gate: dict | None = None) -> dict:
    return {"advisor": "inline", "version": m["version"], "sha256": m["sha256"], "vocab_version": V2,
            "dataset_id": DS, "llvm_version": "22.1.8", "llvm_commit": None, "published_at": m["published_at"],
            "heldout_agreement": m["metrics"]["heldout_agreement"], "heldout_majority_baseline": 0.8125,
            "state": state, **({"gate": gate} if gate else {})}


@pytest.fixture
def client(tmp_path: Path):
    store = FileStore(tmp_path / "store")
    populate(tmp_path / "store")  # vocabulary V2 from dataset DS, a policy P1 whose "model" is not ONNX
    ma, mb = manifest(VA, 0.875, 30, "2026-02-10T00:00:00Z"), manifest(VB, 0.85, 40, "2026-03-01T00:00:00Z")
    for m in (ma, mb):
        store.put(f"policies/inline/{m['version']}/model.onnx", MODELS[m["version"]])
        store.put(f"policies/inline/{m['version']}/manifest.json", json.dumps(m).encode())
    gate = {"passed": False, "against": VA, "reasons": ["heldout_agreement: 0.8500 < 0.8750 of the latest"],
            "pending": ["policy_size"],
            "checks": [{"rule": "heldout_agreement", "ok": False, "detail": "0.8500 < 0.8750 of the latest"},
                       {"rule": "validation", "ok": True, "detail": "passed"},
                       {"rule": "policy_size", "ok": False, "detail": "waiting for its size check", "pending": True}]}
    versions = [{"advisor": "inline", "version": "P1", "state": "superseded", "published_at": "2026-01-01T00:00:00Z"},
                entry(ma, "latest"), entry(mb, "candidate", gate)]
    store.put("policies/index.json", json.dumps({"format": 1, "versions": versions}).encode())
    store.put("policies/inline/latest.json", json.dumps({"advisor": "inline", "version": VA}).encode())
    h = fill_history(tmp_path / "history.sqlite")  # runs of the built-in policy "never"
    for run_id, policy, verdict in (("s0", VA, "ok"), ("s1", VB, "regression"), ("s2", VB, "ok")):
        run = h.start_run(run_id, "regression-inliner-size", llvm_version="22.1.8", llvm_commit=None,
                          policy_id=policy, vocab_version=V2, config={"advisor": "inline", "policy_version": policy})
        h.complete_run(run, verdict, None)
    store.put("regression/regression-inliner-size/s1/index.html", b"<!DOCTYPE html><h1>report s1</h1>")
    app = create_app(load_settings(), store=store, history=tmp_path / "history.sqlite")
    return app.test_client(), ma, mb


def _table(page: str, table_id: str) -> str:
    return page.split(f'<table id="{table_id}">')[1].split("</table>")[0]


def test_a_version_page_shows_state_gate_downloads_lineage_metrics_validation_and_its_runs(client):
    c, _, mb = client
    page = c.get(f"/policies/inline/{VB}/").get_data(as_text=True)
    assert 'id="state" class="candidate">candidate' in page
    assert f"not passed (waiting for policy_size) against {VA}" in page and "0.8500 &lt; 0.8750 of the latest" in page
    checks = _table(page, "checks")
    assert ">pending<" in checks and ">no<" in checks and ">yes<" in checks
    assert f'href="/store/policies/inline/{VB}/model.onnx"' in page
    assert f'href="/store/policies/inline/{VB}/model.onnx.sha256"' in page and mb["sha256"] in page
    lineage = _table(page, "lineage")
    assert f'<a href="/vocab/ir/{V2}/">{V2}</a>' in lineage and f'<a href="/datasets/ir/{DS}/">{DS}</a>' in lineage
    assert "debian:zlib" in lineage and "22.1.8" in lineage
    assert "<dt>epochs</dt><dd>40</dd>" in lineage and "{" not in lineage  # a definition list, not a dict
    assert "callee_embedding" in page
    metrics = _table(page, "metrics")
    assert "0.8500" in metrics and "0.8125" in metrics and "+0.0375" in metrics
    assert "passed" in page.split('id="validation"')[1] and "84 features" in page
    runs = _table(page, "runs")
    assert "s1" in runs and "s2" in runs and "s0" not in runs and "r0" not in runs  # only runs of this version
    assert 'class="regression">regression' in runs and 'href="/regression/regression-inliner-size/"' in runs
    assert 'href="/store/regression/regression-inliner-size/s1/index.html"' in runs
    assert runs.index("s2") < runs.index("s1")  # newest first
    latest = c.get("/policies/inline/latest/").get_data(as_text=True)
    assert f"inline policy {VA}" in latest and 'class="latest">latest' in latest and "s0" in _table(latest, "runs")
    # the downloads the page links give the bytes and the checksum its manifest records
    assert c.get(f"/store/policies/inline/{VB}/model.onnx").data == MODELS[VB]
    assert c.get(f"/store/policies/inline/{VB}/model.onnx.sha256").data == f"{mb['sha256']}  model.onnx\n".encode()


def test_a_hand_made_version_with_a_bare_manifest_still_has_a_page(client):
    c, _, _ = client
    page = c.get("/policies/inline/P1/")
    assert page.status_code == 200 and "no regression run has used this version yet" in page.get_data(as_text=True)


def test_the_policies_page_links_each_version_and_offers_a_diff(client):
    c, _, _ = client
    page = c.get("/policies/").get_data(as_text=True)
    assert f'href="/policies/inline/{VA}/"' in page and f'href="/policies/inline/{VB}/"' in page
    assert 'action="/policies/inline/diff"' in page and 'class="candidate">candidate' in page
    assert "0.8125" in page


def test_the_diff_shows_changed_fields_metric_deltas_and_the_weight_drift_per_tensor(client):
    c, _, _ = client
    page = c.get(f"/policies/inline/diff?a={VA}&b={VB}").get_data(as_text=True)
    fields = _table(page, "fields")
    changed = [r for r in fields.split("<tr")[2:] if "(changed)" in r]
    names = {r.split("<b>")[1].split("</b>")[0] for r in changed}
    assert {"metrics.heldout_agreement", "parameters.epochs", "sha256", "published_at"} <= names
    assert "metrics.heldout_majority_baseline" not in names and "vocab_version" not in names
    deltas = _table(page, "metric-deltas")
    row = deltas.split("heldout_agreement</td>")[1].split("</tr>")[0]
    assert "0.8750" in row and "0.8500" in row and "-0.0250" in row and "-2.86%" in row

    tensors = {r.split("<td>")[1].split("</td>")[0]: r for r in _table(page, "tensors").split("<tr")[2:]}
    assert set(tensors) == {"w1", "b1", "w2", "w3"}
    assert ">1<" in tensors["w2"]  # ||2w - w|| / ||w|| = 1
    assert f">{np.linalg.norm(W1 * 1.01 - W1) / np.linalg.norm(W1):.4g}<" in tensors["w1"]
    assert "shape [3] → [1, 3]" in tensors["b1"] and "only in b" in tensors["w3"]
    svg = page.split('<div id="weights-plot">')[1].split("</div>")[0]
    assert svg.startswith("<svg") and "w2" in svg and "w1" in svg and "b1" not in svg
    # defaults: the two newest versions
    assert "w2" in c.get("/policies/inline/diff").get_data(as_text=True)


def test_a_diff_with_a_model_that_is_not_onnx_still_compares_the_manifests(client):
    c, _, _ = client
    r = c.get(f"/policies/inline/diff?a=P1&b={VA}")
    page = r.get_data(as_text=True)
    assert r.status_code == 200 and "The weights cannot be compared: not an ONNX model" in page
    assert "<b>sha256</b> (changed)" in page


def test_an_empty_farm_has_no_policy_pages_but_says_so(tmp_path: Path):
    c = create_app(load_settings(), store=FileStore(tmp_path / "s"), history=tmp_path / "h.sqlite").test_client()
    assert "No policy published yet" in c.get("/policies/").get_data(as_text=True)
    assert "fewer than two versions" in c.get("/policies/inline/diff").get_data(as_text=True)
    assert c.get("/policies/inline/latest/").status_code == 404
    assert not (tmp_path / "h.sqlite").exists()


def test_runs_of_another_advisor_with_the_same_id_are_not_this_versions(client, tmp_path: Path):
    c, _, _ = client
    h = History(tmp_path / "history.sqlite")
    run = h.start_run("x0", "regression-regalloc-speed", llvm_version="22.1.8", llvm_commit=None, policy_id=VA,
                      vocab_version=None, config={"advisor": "regalloc"})
    h.complete_run(run, "ok", None)
    assert "x0" not in _table(c.get(f"/policies/inline/{VA}/").get_data(as_text=True), "runs")


def test_a_trained_policy_shows_its_held_out_table_and_its_training_curve(tmp_path: Path) -> None:
    """The manifest of policytrain/trainer.py's kind: the held-out packages and the validation curve per stage."""
    store = FileStore(tmp_path / "store")
    populate(tmp_path / "store")
    m = manifest(VA, 0.0, 0, "2026-02-10T00:00:00Z")
    m["kind"] = "exploration + weighted behavioural cloning + evolution strategies (policytrain/trainer.py)"
    m["training"]["splits"] = {"train": ["lua5.4", "libzstd"], "validation": ["xz-utils"], "evaluation": ["zlib"]}
    m["metrics"] = {"validation_ratio": 0.9572, "chosen": "es step 4", "heldout_geomean": 0.9637,
                    "heldout": [{"package": "zlib", "modules": 33, "heuristic": 162176, "policy": 161864,
                                 "ratio": 0.99808, "failed": []},
                                {"package": "bzip2", "modules": 13, "heuristic": 84001, "policy": 84090,
                                 "ratio": 1.00106, "failed": []},
                                {"package": "re2", "modules": 53, "heuristic": 500000, "policy": 470000,
                                 "ratio": 0.94, "failed": [],
                                 "shipped": {"modules": 22, "heuristic": 400000, "policy": 376000, "ratio": 0.94},
                                 "linked": {"modules": 22, "heuristic": 466282, "policy": 379199, "ratio": 0.81323,
                                            "outputs": {"libre2.so.9": [466282, 379199]}}}],
                    "history": [{"stage": "bc", "round": 1, "validation": 0.9614},
                                {"stage": "es", "step": 1, "validation": 0.9622},
                                {"stage": "es", "step": 4, "validation": 0.9572},
                                {"stage": "average", "draws": 2, "validation": 0.9580}]}
    store.put(f"policies/inline/{VA}/model.onnx", MODELS[VA])
    store.put(f"policies/inline/{VA}/manifest.json", json.dumps(m).encode())
    store.put("policies/index.json", json.dumps({"format": 1, "versions": [entry({**m, "metrics": {
        "heldout_agreement": None}}, "latest")]}).encode())
    c = create_app(load_settings(), store=store, history=tmp_path / "history.sqlite").test_client()
    page = c.get(f"/policies/inline/{VA}/").get_data(as_text=True)
    held = _table(page, "heldout")
    assert "zlib" in held and "162,176" in held and 'class="num ok">0.9981' in held
    assert 'class="num regression">1.0011' in held and "0.9637" in held
    re2 = held.split("<td>re2</td>")[1].split("</tr>")[0]  # judged by its linked files, the objects beside
    assert "<td>linked files</td>" in re2 and "466,282" in re2 and 'class="num ok">0.8132' in re2 and "0.9400" in re2
    training = page.split('id="training"')[1]
    assert "es step 4" in training and "0.9572" in training and "lua5.4, libzstd" in training
    curve = page.split('<div id="curve">')[1].split("</div>")[0]
    assert curve.startswith("<svg") and "validation .text / heuristic" in curve and "evolution strategies step" in curve
    assert "the draws averaged" in curve  # a recipe of two draws (policytrain/draws.py) ends with their average
    assert "[{" not in _table(page, "metrics"), "the table and curve are shown, not dumped as Python lists"


def test_the_overview_counts_policies_by_state_as_policy_list_does(client) -> None:
    """One latest, one candidate held back by its size check, one superseded: not "3 published"."""
    c, _, _ = client
    page = c.get("/").get_data(as_text=True)
    assert "Policies</a> (1 latest, 1 candidate, 1 superseded)" in page, page


def test_a_policy_held_back_by_its_size_check_says_so_where_it_says_how_to_use_it(client, tmp_path: Path) -> None:
    c, ma, mb = client
    store = FileStore(tmp_path / "store")
    failed = {"passed": False, "against": VA, "reasons": ["policy_size: geomean 1.0021x: not below 0.9950x"],
              "pending": [], "checks": [{"rule": "policy_size", "ok": False, "value": 1.0021,
                                         "detail": "geomean 1.0021x: not below 0.9950x"}]}
    store.put("policies/index.json", json.dumps({"format": 1, "versions": [
        entry(ma, "latest"), entry(mb, "candidate", failed)]}).encode())
    page = c.get(f"/policies/inline/{VB}/").get_data(as_text=True)
    held = page.split('id="held-back"')[1].split("</p>")[0]
    assert "failed its gate (policy_size: geomean 1.0021x: not below 0.9950x)" in held
    assert f"mlgo-farm policy promote {VB} --reason" in held
    assert 'id="held-back"' not in c.get(f"/policies/inline/{VA}/").get_data(as_text=True)
