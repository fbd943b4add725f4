"""`mlgo-farm vocab` verbs end to end on the embedded store, and their one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from farm.cli import main
from farm.vocabfile import sha256

TINY = ["--dim", "8", "--epochs", "5", "--batch-size", "64"]
MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))


def test_train_publish_list_show_download(ir_dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "trained"
    assert main(["vocab", "train", str(ir_dataset), "-o", str(out), *TINY]) == 0
    assert "validated" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sha256"] == sha256((out / "vocab.json").read_bytes())
    assert manifest["validation"]["ok"] and manifest["parameters"]["epochs"] == 5
    assert main(["vocab", "publish", str(out)]) == 0
    version = capsys.readouterr().out.split()[1]
    assert main(["vocab", "publish", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"ir {version} (already published)"
    assert main(["vocab", "list"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split()[:4] == ["KIND", "VERSION", "STATE", "DIM"] and rows[1].split()[:4] == ["ir", version,
                                                                                                 "latest", "8"]
    assert main(["vocab", "show", "--kind", "ir", "--version", version]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == version
    dl = tmp_path / "dl.json"
    assert main(["vocab", "download", "--kind", "ir", "-o", str(dl)]) == 0
    assert capsys.readouterr().out.strip() == f"-ir2vec-vocab-path={dl}"
    assert dl.read_bytes() == (out / "vocab.json").read_bytes()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["vocab", "show", "--kind", "ir", "--version", "../../etc"], "invalid version name '../../etc'"),
        (["vocab", "show", "--kind", "ir", "--version", "a/b"], "invalid version name 'a/b'"),
        (["vocab", "download", "--kind", "mir", "-o", "x.json"], "no mir vocabulary has been published"),
        (["vocab", "train", "/nonexistent", "-o", "x"], "dataset /nonexistent is not a directory"),
        (["vocab", "train", "latest", "-o", "x"], "dataset latest: give --kind (ir or mir) to look it up in the store"),
        (["vocab", "train", "latest", "--kind", "ir", "-o", "x"], "no ir dataset has been published to file://"),
        (["vocab", "train", "/nonexistent", "-o", "x", "--seed", "-1"], "seed must be in [0, 2**32), got -1"),
        (["vocab", "train", "/nonexistent", "-o", "x", "--dim", "0"], "dim must be at least 1, got 0"),
        (["vocab", "train", "/nonexistent", "-o", "x", "--lr", "-0.1"], "lr must be a positive number, got -0.1"),
        (["vocab", "validate", "/nonexistent", "--kind", "ir"], "vocabulary file /nonexistent does not exist"),
        (["vocab", "validate", "/", "--kind", "ir"], "vocabulary file / is a directory, not a regular file"),
        (["vocab", "publish", "/nonexistent"], "/nonexistent is not a trained vocabulary directory"),
        (["vocab", "retrain", "--kind", "ir", "--dim", "-3"], "dim must be at least 1, got -3"),
        # neither a directory here nor a store id ('..' may not climb out of the store)
        (["vocab", "retrain", "--kind", "ir", "--dataset", "../mlgo-farm-no-such-dataset"],
         "invalid dataset id '../mlgo-farm-no-such-dataset'"),
    ],
)
def test_errors_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    assert main(argv) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mlgo-farm: error: ") and message in err[0]


def test_malformed_dataset_through_the_real_cli(ir_copy: Path, tmp_path: Path) -> None:
    lines = ir_copy.joinpath("train2id.txt").read_text().splitlines()
    ir_copy.joinpath("train2id.txt").write_text("\n".join([lines[0], "1\t2", *lines[2:]]) + "\n")
    manifest = json.loads(ir_copy.joinpath("manifest.json").read_text())
    del manifest["files"]  # a malformed file, not a checksum mismatch
    ir_copy.joinpath("manifest.json").write_text(json.dumps(manifest))
    res = subprocess.run([MLGO_FARM, "vocab", "train", str(ir_copy),
                          "-o", str(tmp_path / "out"), *TINY], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"mlgo-farm: error: {ir_copy}/train2id.txt:2: expected 3 columns 'head tail relation', got 2"
    ]
    assert not (tmp_path / "out").exists()


def _store_keys() -> list[str]:
    from farm.objectstore import store_from_settings

    return store_from_settings().list("")


def test_publish_validates_again_and_refuses_a_hand_edited_manifest(ir_dataset: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture) -> None:
    """A manifest's validation record is the user's word: `vocab publish` asks LLVM again.

    A hand-edited vocabulary fails the signature first; even one the farm signed (training has a
    bug, say) is refused by LLVM's verdict, whatever validation record its manifest carries.
    """
    from farm.signing import farm_key, sign

    out = tmp_path / "trained"
    assert main(["vocab", "train", str(ir_dataset), "-o", str(out), "--no-validate", *TINY]) == 0
    assert "not validated" in capsys.readouterr().out
    vocab = json.loads((out / "vocab.json").read_text())
    del vocab["Opcodes"]["Ret"]  # LLVM would silently use zeros for it
    data = json.dumps(vocab).encode()
    (out / "vocab.json").write_bytes(data)
    manifest = json.loads((out / "manifest.json").read_text())
    forged = {"ok": True, "sha256": sha256(data)}  # even a record naming the right bytes
    (out / "manifest.json").write_text(json.dumps({**manifest, "sha256": sha256(data), "validation": forged}))
    assert main(["vocab", "publish", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "signature does not match its vocabulary bytes" in err[0], err
    signed = sign(data, {**manifest, "sha256": sha256(data)}, farm_key())
    (out / "manifest.json").write_text(json.dumps({**signed, "validation": forged}))
    assert main(["vocab", "publish", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mlgo-farm: error: ") and "have no vector: Ret" in err[0], err
    assert _store_keys() == []


def test_publish_records_its_own_validation(ir_dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "trained"
    assert main(["vocab", "train", str(ir_dataset), "-o", str(out), "--no-validate", *TINY]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**manifest, "validation": {"ok": True}}))
    assert main(["vocab", "publish", str(out)]) == 0
    capsys.readouterr()
    assert main(["vocab", "show", "--kind", "ir"]) == 0
    validation = json.loads(capsys.readouterr().out)["validation"]
    assert validation["sha256"] == manifest["sha256"] and validation["llvm_read_back"] > 0


def test_a_publish_by_hand_that_awaits_the_policy_says_what_settles_it(ir_dataset: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLGO_FARM_GATE_POLICY_SIZE", "true")
    out = tmp_path / "trained"
    assert main(["vocab", "train", str(ir_dataset), "-o", str(out), *TINY]) == 0
    capsys.readouterr()
    assert main(["vocab", "publish", str(out)]) == 0
    first, second = capsys.readouterr().out.splitlines()
    version = first.split()[1]
    assert "awaiting policy_size" in first
    assert second.strip().startswith(f"its policy_size check runs when the inliner policy is retrained with it: "
                                     f"mlgo-farm policy retrain --vocab {version}")


def test_train_from_the_store_by_id_and_latest(ir_dataset: Path, tmp_path: Path) -> None:
    from farm.objectstore import store_from_settings
    from workers.dataset import publish as publish_dataset

    dataset_id = publish_dataset(ir_dataset, store_from_settings())  # the default store under the test's var/
    outs = {ref: tmp_path / ref for ref in ("latest", dataset_id, "local")}
    assert main(["vocab", "train", "latest", "--kind", "ir", "-o", str(outs["latest"]), "--no-validate", *TINY]) == 0
    assert main(["vocab", "train", dataset_id, "-o", str(outs[dataset_id]), "--no-validate", *TINY]) == 0
    assert main(["vocab", "train", str(ir_dataset), "-o", str(outs["local"]), "--no-validate", *TINY]) == 0
    manifests = {ref: json.loads((out / "manifest.json").read_text()) for ref, out in outs.items()}
    assert {m["dataset"]["id"] for m in manifests.values()} == {dataset_id}
    assert len({(out / "vocab.json").read_bytes() for out in outs.values()}) == 1, "same dataset, same bytes"


def _cli_env(broker: str) -> dict[str, str]:
    return {**os.environ, "MLGO_FARM_CELERY_BROKER_URL": f"{broker}/0",
            "MLGO_FARM_CELERY_RESULT_BACKEND": f"{broker}/1"}


def test_retrain_without_redis_fails_fast_in_one_line(tmp_path: Path) -> None:
    from tests.servers import free_port

    broker = f"redis://127.0.0.1:{free_port()}"  # nothing listens there
    start = time.monotonic()
    res = subprocess.run([MLGO_FARM, "vocab", "retrain", "--kind", "ir", "--wait"], env=_cli_env(broker),
                         capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - start
    assert res.returncode == 1
    assert res.stderr.splitlines() == [
        f"mlgo-farm: error: cannot reach the Celery broker at {broker}/0: Error 111 connecting to "
        f"{broker.removeprefix('redis://')}. Connection refused."
    ]
    assert elapsed < 10, f"took {elapsed:.1f}s (Celery's default reconnecting takes about 20s)"


def test_retrain_checks_parameters_before_enqueueing(redis_url: str) -> None:
    import redis

    queue = redis.Redis.from_url(f"{redis_url}/0")
    queue.flushall()
    try:
        res = subprocess.run([MLGO_FARM, "vocab", "retrain", "--kind", "ir", "--dim", "-3"],
                             env=_cli_env(redis_url), capture_output=True, text=True, timeout=60)
        assert res.returncode == 2
        assert res.stderr.splitlines() == ["mlgo-farm: error: training parameter dim must be at least 1, got -3"]
        assert queue.dbsize() == 0, "nothing enqueued"
        ok = subprocess.run([MLGO_FARM, "vocab", "retrain", "--kind", "ir", "--dim", "3"],
                            env=_cli_env(redis_url), capture_output=True, text=True, timeout=60)
        assert ok.returncode == 0, ok.stderr
        assert queue.llen("celery") == 1, "a good request is enqueued (no worker takes it)"
    finally:
        queue.flushall()


def _one_error_line(capsys: pytest.CaptureFixture) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mlgo-farm: error: "), err
    return err[0].removeprefix("mlgo-farm: error: ")


def test_validating_a_vocabulary_llvm_embeds_as_infinite_is_one_line(ir_dataset: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "trained"
    assert main(["vocab", "train", str(ir_dataset), "-o", str(out), "--no-validate", *TINY]) == 0
    vocab = json.loads((out / "vocab.json").read_text())
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps({s: {k: [1e308] * len(v) for k, v in e.items()} for s, e in vocab.items()}))
    capsys.readouterr()
    assert main(["vocab", "validate", str(huge), "--kind", "ir"]) == 2
    assert _one_error_line(capsys).startswith("LLVM gives infinite embeddings with this vocabulary (")


def test_a_manifest_copied_from_another_vocabulary_is_refused(ir_dataset: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    """Copying A's manifest next to B's vocabulary (its sha256 fixed up) would list A's metrics and dataset for B."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["vocab", "train", str(ir_dataset), "-o", str(a), "--no-validate", *TINY]) == 0
    assert main(["vocab", "train", str(ir_dataset), "-o", str(b), "--no-validate", *TINY, "--seed", "1"]) == 0
    capsys.readouterr()
    manifest = json.loads((a / "manifest.json").read_text())
    manifest["sha256"] = sha256((b / "vocab.json").read_bytes())
    (b / "manifest.json").write_text(json.dumps(manifest))
    assert main(["vocab", "publish", str(b)]) == 2
    assert _one_error_line(capsys) == (
        "the manifest's signature does not match its vocabulary bytes, lineage, metrics and parameters "
        "(copied from another vocabulary or edited); nothing published")
    assert _store_keys() == []


def test_republishing_older_content_leaves_latest_and_says_so(ir_dataset: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    for out, seed in ((old, "0"), (new, "1")):
        assert main(["vocab", "train", str(ir_dataset), "-o", str(out), "--no-validate", *TINY, "--seed", seed]) == 0
    capsys.readouterr()
    versions = []
    for out in (old, new):
        assert main(["vocab", "publish", str(out)]) == 0
        versions.append(capsys.readouterr().out.split()[1])
    assert main(["vocab", "publish", str(old)]) == 0
    assert capsys.readouterr().out.strip() == (
        f"ir {versions[0]} (already published; latest stays at {versions[1]}, published later)")
    assert main(["vocab", "show", "--kind", "ir"]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == versions[1]


@pytest.fixture
def full_disk(tmp_path: Path):
    """A real tmpfs with no page left."""
    from tests import tmpfs

    with tmpfs.mounted(tmp_path / "full", "256k") as fs:
        tmpfs.fill(fs, 0)
        yield fs


def _leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if not p.name.startswith("filler-"))


@pytest.mark.parametrize("where", ["unrelated directory", "full disk"])
def test_train_checks_its_output_before_training(ir_dataset: Path, tmp_path: Path, request, where: str) -> None:
    """With 10**9 epochs, only a check made before training can answer within the time limit."""
    if where == "full disk":
        out = request.getfixturevalue("full_disk") / "out"
        message = f"output directory {out.parent} is not writable: no space left on device"
    else:
        out = tmp_path / "home"
        out.mkdir()
        (out / "thesis.tex").write_text("years of work")
        message = f"output {out} is a non-empty directory without manifest.json"
    res = subprocess.run([MLGO_FARM, "vocab", "train", str(ir_dataset), "-o", str(out), *TINY,
                          "--epochs", "1000000000"], capture_output=True, text=True, timeout=120)
    assert res.returncode != 0
    assert len(res.stderr.splitlines()) == 1 and res.stderr.startswith(f"mlgo-farm: error: {message}"), res.stderr
    assert not (out / "vocab.json").exists()


def test_download_to_a_full_disk_is_one_line(full_disk: Path, capsys: pytest.CaptureFixture) -> None:
    from farm.objectstore import store_from_settings
    from farm.signing import farm_key
    from tests.vocabgen.conftest import handmade_manifest, handmade_vocab
    from vocabgen import publish as pub

    data = handmade_vocab()
    pub.publish(store_from_settings(), data, handmade_manifest(data, farm_key()))
    assert main(["vocab", "download", "--kind", "ir", "-o", str(full_disk / "v.json")]) == 1
    assert _one_error_line(capsys) == f"output directory {full_disk} is not writable: no space left on device"
    assert _leftovers(full_disk) == []


def test_publish_to_a_full_store_is_one_line_and_publishes_nothing(ir_dataset: Path, tmp_path: Path, full_disk: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "trained"
    assert main(["vocab", "train", str(ir_dataset), "-o", str(out), "--no-validate", *TINY]) == 0
    capsys.readouterr()
    monkeypatch.setenv("MLGO_FARM_STORE_URL", (full_disk / "store").as_uri())
    assert main(["vocab", "publish", str(out)]) == 4
    message = _one_error_line(capsys)
    assert message.startswith(f"cannot write {full_disk}/store/vocab/ir/") and message.endswith(
        "/vocab.json: no space left on device"), message
    assert sorted(str(p.relative_to(full_disk)) for p in (full_disk / "store").rglob("*") if p.is_file()) == [
        "store/.vocab-publish.lock"], "nothing published, no temporary left"


def test_nothing_published_is_its_own_exit_code_and_download_answers_in_json(capsys: pytest.CaptureFixture,
                                                                             tmp_path: Path) -> None:
    """An empty store is not bad input (exit 6, not 2), said in JSON too; a download answers with its flag."""
    out = tmp_path / "v.json"
    assert main(["vocab", "download", "--kind", "mir", "-o", str(out), "--json"]) == 6
    got = json.loads(capsys.readouterr().out)
    assert got["exit_code"] == 6 and got["error_kind"] == "nothing_published"
    assert "no mir vocabulary has been published" in got["error"]
    assert not out.exists()
