"""Published policies: train-bc -> publish -> list/show/download -> `store:latest`, with the real LLVM and CLI."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from farm.artifacts import POLICIES
from farm.errors import InputError, StoreError, ValidationFailed
from farm.objectstore import FileStore, store_from_settings
from farm.signing import sign
from farm.toolchain import Toolchain
from policyhost import publish as pstore
from policytrain import warmstart
from tests.policyhost.callgraph import write_sources
from tests.policyhost.conftest import publish_vocab, signed_policy_manifest, write_onnx_policy

MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))
#: One farm key for the module: `trained` is trained once, and every test's CLI publishes it.
KEY = "policy-store-tests-signing-key"


@pytest.fixture(autouse=True)
def _one_signing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLGO_FARM_VOCAB_SIGNING_KEY", KEY)


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """The real entry point, in this test's isolated configuration (the environment carries it)."""
    return subprocess.run([MLGO_FARM, *args], capture_output=True, text=True, timeout=timeout)


def one_error_line(res: subprocess.CompletedProcess) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.returncode != 0 and len(lines) == 1 and lines[0].startswith("mlgo-farm: error: "), res.stderr
    return lines[0]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain, ir2vec_vocab: Path) -> Path:
    """A real warm-start model with IR2Vec features (train-bc's code) on generated C sources."""
    out = tmp_path_factory.mktemp("ws")
    src = write_sources(out / "src")
    model = out / "warm.onnx"
    warmstart.train_from(src, model, toolchain, epochs=60, vocab=str(ir2vec_vocab), key=KEY.encode())
    return model


def model_copy(trained: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for suffix in (".onnx", ".json"):
        (dest / f"warm{suffix}").write_bytes(trained.with_suffix(suffix).read_bytes())
    return dest / "warm.onnx"


def test_publish_list_show_download_round_trip(trained: Path, ir2vec_vocab: Path, tmp_path: Path) -> None:
    vocab = publish_vocab(ir2vec_vocab.read_bytes())
    model = model_copy(trained, tmp_path / "m")
    first = cli("policy", "publish", str(model), "--vocab", f"store:{vocab}")
    assert first.returncode == 0, first.stderr
    version = first.stdout.split()[2]
    assert first.stdout.strip() == f"policy inline {version} (published)"
    assert version.endswith(hashlib.sha256(model.read_bytes()).hexdigest()[:12]) and "-inline-ir2vec-" in version
    again = cli("policy", "publish", str(model), "--vocab", f"store:{vocab}")
    assert again.stdout.strip() == f"policy inline {version} (already published)", again.stderr

    listed = cli("policy", "list")
    assert listed.stdout.startswith("ADVISOR") and version in listed.stdout and vocab in listed.stdout
    rows = json.loads(cli("policy", "list", "--json").stdout)
    assert [r["version"] for r in rows] == [version]

    manifest = json.loads(cli("policy", "show").stdout)
    assert manifest["version"] == version and manifest["advisor"] == "inline" and manifest["vocab_version"] == vocab
    assert manifest["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    assert {"callee_embedding", "caller_embedding", "callee_basic_block_count"} <= set(manifest["features"])
    assert manifest["validation"]["ok"] and manifest["validation"]["sha256"] == manifest["sha256"]
    metrics = manifest["metrics"]
    assert metrics["heldout_agreement"] > metrics["heldout_majority_baseline"]
    assert manifest["llvm"]["llvm_version"] and manifest["parameters"]["epochs"] == 60
    assert manifest["training"]["corpus"].endswith("src")

    out = tmp_path / "dl" / "policy.onnx"
    out.parent.mkdir()
    out.with_suffix(".weights").write_bytes(b"another model's weights")  # a stale file the launcher would pair with it
    got = cli("policy", "download", "-o", str(out))
    assert got.returncode == 0 and got.stdout.strip() == str(out), got.stderr
    assert out.read_bytes() == model.read_bytes() and out.stat().st_mode & 0o777 == 0o644
    assert "this version has no native weights" in got.stderr and not out.with_suffix(".weights").exists()
    store = store_from_settings()
    assert isinstance(store, FileStore)
    for key in (f"policies/inline/{version}/model.onnx", f"policies/inline/{version}/manifest.json",
                "policies/index.json", "policies/inline/latest.json"):
        assert (store.root / key).stat().st_mode & 0o777 == 0o644, key
    assert json.loads(store.get("policies/inline/latest.json"))["version"] == version


def test_store_latest_brings_its_vocabulary_and_compiles(trained: Path, ir2vec_vocab: Path, tmp_path: Path,
                                                         toolchain: Toolchain) -> None:
    vocab = publish_vocab(ir2vec_vocab.read_bytes())
    assert cli("policy", "publish", str(model_copy(trained, tmp_path / "m")), "--vocab", f"store:{vocab}"
               ).returncode == 0
    launcher = cli("policy-cc", "--print-launcher", "--policy", "store:latest")
    assert launcher.returncode == 0, launcher.stderr
    argv = launcher.stdout.split()
    cached = Path(argv[argv.index("--policy") + 1])
    assert cached.read_bytes() == trained.read_bytes() and Path(argv[argv.index("--vocab") + 1]).stem == vocab
    src = tmp_path / "a.c"
    src.write_text("int h(int);\nstatic int f(int x) { return h(x) * 3; }\nint g(int y) { return f(y) + 1; }\n")
    res = subprocess.run([*argv, str(toolchain.path("clang")), "-Oz", "-c", str(src), "-o", str(tmp_path / "a.o")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and (tmp_path / "a.o").is_file(), res.stderr
    by_hand = subprocess.run([str(Path(sys.executable).with_name("mlgo-farm-cc")), "--policy", "store:latest", "--",
                              "clang", "-Oz", "-c", str(src), "-o", str(tmp_path / "b.o")],
                             capture_output=True, text=True, timeout=120)
    assert by_hand.returncode == 0 and (tmp_path / "b.o").read_bytes() == (tmp_path / "a.o").read_bytes(), \
        by_hand.stderr
    # a vocabulary other than the one it was trained with is refused in one line
    other = publish_vocab(json.dumps({**json.loads(ir2vec_vocab.read_text()), "Opcodes": {
        k: [v * 0.5 for v in vec] for k, vec in json.loads(ir2vec_vocab.read_text())["Opcodes"].items()}}).encode())
    line = one_error_line(cli("policy-cc", "--print-launcher", "--policy", "store:latest", "--vocab",
                              f"store:{other}"))
    assert f"was trained with vocabulary {vocab}, not {other}" in line


def test_bad_inputs_are_one_line_and_publish_nothing(trained: Path, ir2vec_vocab: Path, tmp_path: Path) -> None:
    store = store_from_settings()
    assert "no inline policy has been published" in one_error_line(cli("policy", "show"))
    assert "no inline policy has been published" in one_error_line(
        cli("policy-cc", "--print-launcher", "--policy", "store:latest"))
    assert "invalid version name" in one_error_line(cli("policy", "show", "--version", "../x"))
    vocab = publish_vocab(ir2vec_vocab.read_bytes())

    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "warm.onnx").write_bytes(trained.read_bytes())
    assert "train-bc" in one_error_line(cli("policy", "publish", str(bare / "warm.onnx")))

    weak = model_copy(trained, tmp_path / "weak")  # no better than always answering the majority
    result = json.loads(weak.with_suffix(".json").read_text())
    weak_record = sign(weak.read_bytes(), {**result, "heldout_agreement": 0.5, "heldout_majority_baseline": 0.6},
                       KEY.encode())  # as training signs a weak model's record
    weak.with_suffix(".json").write_text(json.dumps(weak_record))
    assert "no better than always answering the majority" in one_error_line(
        cli("policy", "publish", str(weak), "--vocab", f"store:{vocab}"))

    (tmp_path / "alien").mkdir()
    alien = write_onnx_policy(tmp_path / "alien" / "alien.onnx", "no_such_feature", "Greater", 0)
    alien.with_suffix(".json").write_text(json.dumps(sign(alien.read_bytes(), {
        "heldout_agreement": 0.9, "heldout_majority_baseline": 0.6}, KEY.encode())))
    assert "needs feature 'no_such_feature', which this LLVM does not send" in one_error_line(
        cli("policy", "publish", str(alien)))
    assert store.list("policies/") == []


def test_a_model_failing_validation_exits_with_its_own_code_not_a_usage_error(tmp_path: Path) -> None:
    """A model whose input LLVM does not send is a rejected artifact (ValidationFailed), not bad usage (2)."""
    alien = write_onnx_policy(tmp_path / "alien.onnx", "no_such_feature", "Greater", 0)
    alien.with_suffix(".json").write_text(json.dumps(sign(alien.read_bytes(), {
        "heldout_agreement": 0.9, "heldout_majority_baseline": 0.6}, KEY.encode())))
    rejected = cli("policy", "publish", str(alien))
    assert "which this LLVM does not send" in one_error_line(rejected)
    assert rejected.returncode == ValidationFailed.exit_code == 5
    assert cli("policy", "publish").returncode == 2  # a usage error keeps 2
    assert store_from_settings().list("policies/") == []


def test_an_inliner_model_giving_five_scores_is_not_published(tmp_path: Path) -> None:
    from tests.policyhost.test_policies import write_onnx_scores

    five = write_onnx_scores(tmp_path / "five.onnx", "callee_basic_block_count", 5)
    five.with_suffix(".json").write_text(json.dumps(sign(five.read_bytes(), {
        "heldout_agreement": 0.9, "heldout_majority_baseline": 0.6}, KEY.encode())))
    assert "5 values per observation; the advisor takes one logit or two scores" in one_error_line(
        cli("policy", "publish", str(five)))
    assert store_from_settings().list("policies/") == []


def _stand_in(model: Path, features: list[str], **extra) -> dict:
    """A manifest as release.validate/manifest_for would write it (these tests are about the store's logic)."""
    return signed_policy_manifest(model.read_bytes(), features, **extra)


def test_tampered_or_mismatched_policies_are_refused(tmp_path: Path) -> None:
    store = store_from_settings()
    alien = write_onnx_policy(tmp_path / "alien.onnx", "no_such_feature", "Greater", 0)
    pstore.publish(store, alien.read_bytes(), _stand_in(alien, ["no_such_feature"]))
    line = one_error_line(cli("regress", "run", "--corpus", str(tmp_path), "--policy", "store:latest"))
    assert "needs feature 'no_such_feature', which this LLVM does not send" in line

    good = write_onnx_policy(tmp_path / "good.onnx", "inlining_default", "Greater", 0)
    version = pstore.publish(store, good.read_bytes(), _stand_in(good, ["inlining_default"]), when=2e9)["version"]
    launcher = cli("policy-cc", "--print-launcher", "--policy", "store:latest").stdout.split()
    cached = Path(launcher[launcher.index("--policy") + 1])
    cached.write_bytes(alien.read_bytes())  # a cached copy that changed is fetched again, and checked
    assert cli("policy-cc", "--print-launcher", "--policy", "store:latest").returncode == 0
    assert cached.read_bytes() == good.read_bytes()
    store.put(f"policies/inline/{version}/model.onnx", alien.read_bytes())  # the bytes changed in the store
    cached.unlink()
    out = tmp_path / "dl.onnx"
    line = one_error_line(cli("policy", "download", "-o", str(out)))
    assert line.startswith(f"mlgo-farm: error: checksum mismatch for policies/inline/{version}/model.onnx")
    assert not out.exists()
    assert "checksum mismatch" in one_error_line(cli("policy-cc", "--print-launcher", "--policy", "store:latest"))
    with pytest.raises(InputError, match="does not match the sha256"):
        pstore.publish(store, alien.read_bytes(), _stand_in(good, ["inlining_default"]))
    with pytest.raises(InputError, match="has not passed validation"):
        pstore.publish(store, good.read_bytes(), {**_stand_in(good, ["inlining_default"]), "validation": {}})


def test_latest_only_moves_forward_and_same_content_is_one_version(tmp_path: Path) -> None:
    store = store_from_settings()
    a = write_onnx_policy(tmp_path / "a.onnx", "inlining_default", "Greater", 0)
    b = write_onnx_policy(tmp_path / "b.onnx", "callee_basic_block_count", "Greater", 0)
    new = pstore.publish(store, b.read_bytes(), _stand_in(b, ["callee_basic_block_count"]), when=2e9)
    old = pstore.publish(store, a.read_bytes(), _stand_in(a, ["inlining_default"]), when=1e9)
    assert old["created"] and old["latest"] == new["version"] and old["previous"] == new["version"]
    assert "latest stays at" in pstore.summary(old)
    again = pstore.publish(store, b.read_bytes(), _stand_in(b, ["callee_basic_block_count"]), when=3e9)
    assert not again["created"] and again["version"] == new["version"]
    assert [v["version"] for v in POLICIES.read_index(store)] == [old["version"], new["version"]]
    assert POLICIES.read_latest(store, "inline")["version"] == new["version"]


class FailingLatest(FileStore):
    """The directory store, except that writing `latest` fails (a store outage at the last step)."""

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        if key.endswith("/latest.json"):
            raise StoreError(f"put {key}: connection reset")
        super().put(key, data, content_type)


def test_a_failed_publish_leaves_nothing_that_is_not_referred_to(tmp_path: Path) -> None:
    root = tmp_path / "store"
    good = write_onnx_policy(tmp_path / "a.onnx", "inlining_default", "Greater", 0)
    with pytest.raises(StoreError, match="connection reset"):
        pstore.publish(FailingLatest(root), good.read_bytes(), _stand_in(good, ["inlining_default"]))
    store = FileStore(root)
    assert store.list("policies/") == []  # index taken back, files deleted: nothing refers to them
    done = pstore.publish(store, good.read_bytes(), _stand_in(good, ["inlining_default"]))
    assert done["created"] and POLICIES.read_latest(store, "inline")["version"] == done["version"]


def test_metrics_and_lineage_are_signed_to_the_model_bytes(trained: Path, ir2vec_vocab: Path, tmp_path: Path) -> None:
    """train-bc signs MODEL.json; publishing signs the manifest; neither can be copied or edited."""
    store = store_from_settings()
    vocab = publish_vocab(ir2vec_vocab.read_bytes())
    model = model_copy(trained, tmp_path / "m")
    record = json.loads(model.with_suffix(".json").read_text())
    assert record["signature"]["algorithm"] == "hmac-sha256"
    record["heldout_agreement"] = 0.9999  # a better number, by hand
    model.with_suffix(".json").write_text(json.dumps(record))
    line = one_error_line(cli("policy", "publish", str(model), "--vocab", f"store:{vocab}"))
    assert line == (f"mlgo-farm: error: {model.with_suffix('.json')}: the manifest's signature does not match its "
                    f"policy bytes, lineage, metrics and parameters (copied from another policy or edited); "
                    f"nothing published")
    other = write_onnx_policy(tmp_path / "other.onnx", "inlining_default", "Greater", 0)
    copied = signed_policy_manifest(other.read_bytes(), ["inlining_default"])
    with pytest.raises(InputError, match="signature does not match its policy bytes"):
        pstore.publish(store, trained.read_bytes(), {**copied, "sha256": pstore.sha256(trained.read_bytes()),
                                                     "validation": {"ok": True,
                                                                    "sha256": pstore.sha256(trained.read_bytes())}})
    unsigned = {k: v for k, v in copied.items() if k != "signature"}
    with pytest.raises(InputError, match=r"^the policy's manifest is not signed by this farm .*policy train-bc"):
        pstore.publish(store, other.read_bytes(), unsigned)
    assert store.list("policies/") == []
    pstore.publish(store, other.read_bytes(), copied)  # signed for its own bytes: published
    assert "signature" in POLICIES.show(store, "inline", "latest")


def test_heldout_of_a_model_reading_embeddings_uses_its_training_vocabulary_or_says_it_needs_one(
        trained: Path, packages: dict[str, Path], tmp_path: Path) -> None:
    """Measured without its vocabulary, a model that reads IR2Vec embeddings fails every compile with a decision,
    and the table showed 1.0000x over the modules without one. `policy heldout` takes the vocabulary its training
    record names; a record that names none is one line before anything compiles."""
    model = model_copy(trained, tmp_path / "m")
    evaluation = f"gamma={packages['gamma']}"
    held = cli("policy", "heldout", str(model), "--evaluation", evaluation, "--json", timeout=600)
    assert held.returncode == 0, held.stderr
    row = json.loads(held.stdout)["packages"][0]
    assert row["failed"] == [] and row["modules"] == 3, row
    record = json.loads(model.with_suffix(".json").read_text())
    model.with_suffix(".json").write_text(json.dumps({**record, "vocab": None, "vocab_version": None}))
    line = one_error_line(cli("policy", "heldout", str(model), "--evaluation", evaluation))
    assert line == ("mlgo-farm: error: policy warm.onnx reads IR2Vec embeddings: checking it needs its vocabulary "
                    "(--vocab: the one it was trained with)"), line


def test_heldout_refuses_a_corpus_from_another_front_end_and_judges_shipped_modules(
        trained: Path, packages: dict[str, Path], tmp_path: Path, toolchain: Toolchain) -> None:
    """Issue 34: `-O2` bitcode compiled at `-Oz` is not the `-Oz` users build (no `minsize optsize`), so a held-out
    table on it is refused in one line; on `-Oz` bitcode the table judges shipped modules, all modules beside."""
    from workers.corpus import from_sources

    model = model_copy(trained, tmp_path / "m")
    o2 = from_sources(write_sources(tmp_path / "src", files=2, per_file=8, seed=3), tmp_path / "o2", toolchain,
                      jobs=2).path
    line = one_error_line(cli("policy", "heldout", str(model), "--evaluation", f"delta={o2}"))
    assert f"corpus {o2} was compiled by an -O2 front end, but the inliner for size needs -Oz bitcode" in line
    held = cli("policy", "heldout", str(model), "--evaluation", f"gamma={packages['gamma']}", "--json", timeout=600)
    assert held.returncode == 0, held.stderr
    table = json.loads(held.stdout)
    row = table["packages"][0]
    assert row["shipped"] is None  # no shipped list for a corpus named NAME=DIR: every module counts, and says so
    assert table["geomean"] == pytest.approx(row["ratio"]) and table["all"]["geomean"] == pytest.approx(row["ratio"])
    text = cli("policy", "heldout", str(model), "--evaluation", f"gamma={packages['gamma']}", timeout=600).stdout
    assert "(no shipped list: all modules)" in text


def test_a_policy_held_back_by_its_size_check_can_be_promoted_with_a_reason(tmp_path: Path) -> None:
    """`policy promote`, as `vocab promote`: a candidate becomes latest, who, why and what was latest recorded."""
    from farm.artifacts import POLICIES
    from farm.artifacts.verdict import POLICY_SIZE

    store = store_from_settings()
    first = write_onnx_policy(tmp_path / "a.onnx", "inlining_default", "Greater", 0)
    held = write_onnx_policy(tmp_path / "b.onnx", "inlining_default", "Greater", 1)
    was = pstore.publish(store, first.read_bytes(), _stand_in(first, ["inlining_default"]), when=1e9)["version"]
    out = pstore.publish(store, held.read_bytes(), _stand_in(held, ["inlining_default"]), when=2e9,
                         pending=POLICY_SIZE)
    assert out["state"] == "candidate" and POLICIES.read_latest(store, "inline")["version"] == was
    no_reason = cli("policy", "promote", out["version"])
    assert no_reason.returncode == 2 and "required: --reason" in no_reason.stderr
    unknown = cli("policy", "promote", "20990101-nope", "--reason", "x")
    assert unknown.returncode != 0 and "20990101-nope" in one_error_line(unknown)
    res = cli("policy", "promote", out["version"], "--reason", "try it on our builds")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"policy inline {out['version']} is latest (was {was})"
    assert POLICIES.read_latest(store, "inline")["version"] == out["version"]
    entry = next(v for v in POLICIES.read_index(store) if v["version"] == out["version"])
    assert entry["promoted"]["reason"] == "try it on our builds" and entry["promoted"]["previous"] == was


def _weights_for(model: Path, drop: int = 0) -> bytes:
    """A weights file (policytrain/native_export.py's format) whose features are `model`'s inputs, less `drop`."""
    import numpy as np
    import onnx

    from policytrain.native_export import _pack

    dtypes = {onnx.TensorProto.INT64: "int64", onnx.TensorProto.FLOAT: "float32"}
    feats = [(i.name, i.type.tensor_type.shape.dim[-1].dim_value or 1, dtypes[i.type.tensor_type.elem_type])
             for i in onnx.load(str(model)).graph.input][drop:]
    width = sum(f[1] for f in feats)
    return _pack(feats, np.zeros(width), np.ones(width), [np.zeros((width, 2))], [np.zeros(2)], None, [])


def test_publish_takes_the_weights_beside_the_model_and_refuses_another_models(trained: Path, ir2vec_vocab: Path,
                                                                              tmp_path: Path) -> None:
    vocab = publish_vocab(ir2vec_vocab.read_bytes())
    model = model_copy(trained, tmp_path / "m")
    model.with_suffix(".weights").write_bytes(_weights_for(model, drop=1))
    line = one_error_line(cli("policy", "publish", str(model), "--vocab", f"store:{vocab}"))
    assert line.startswith("mlgo-farm: error: the weights file's features are not the model's ("), line
    assert line.endswith("; nothing published")
    assert not [k for k in store_from_settings().list("policies/") if "/model." in k]
    weights = _weights_for(model)
    model.with_suffix(".weights").write_bytes(weights)
    done = cli("policy", "publish", str(model), "--vocab", f"store:{vocab}")
    assert done.returncode == 0, done.stderr
    version = done.stdout.split()[2]
    store = store_from_settings()
    assert store.get(f"policies/inline/{version}/model.weights") == weights
    digest = hashlib.sha256(weights).hexdigest()
    # in the version's signed manifest (policy show), and what `policy download` fetches and verifies beside the model
    assert json.loads(cli("policy", "show").stdout)["weights"] == {"file": "model.weights", "sha256": digest,
                                                                     "format_version": 1}
    out = tmp_path / "dl" / "inline.onnx"
    got = cli("policy", "download", "-o", str(out))
    assert got.returncode == 0 and out.read_bytes() == model.read_bytes(), got.stderr
    assert out.with_suffix(".weights").read_bytes() == weights and f"sha256 {digest[:12]} verified" in got.stderr
