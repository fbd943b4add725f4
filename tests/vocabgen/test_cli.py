"""`mlgo-farm vocab` verbs end to end on the embedded store, and their one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from farm.cli import main
from vocabgen.vocabfile import sha256

TINY = ["--dim", "8", "--epochs", "5", "--batch-size", "64"]


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
    assert rows[0].split()[:3] == ["KIND", "VERSION", "DIM"] and rows[1].split()[:3] == ["ir", version, "8"]
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
    res = subprocess.run([str(Path(sys.executable).with_name("mlgo-farm")), "vocab", "train", str(ir_copy),
                          "-o", str(tmp_path / "out"), *TINY], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"mlgo-farm: error: {ir_copy}/train2id.txt:2: expected 3 columns 'head tail relation', got 2"
    ]
    assert not (tmp_path / "out").exists()
