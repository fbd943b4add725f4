"""Numbers no float or int conversion takes, in every file a user hands the farm: one line and a non-zero exit.

The real `mlgo-farm` process each time: what is checked is its exit status and its whole stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from farm.config import load_settings
from farm.errors import FarmError, InputError, StoreError
from farm.jsonio import loads

HUGE = "1" * 5001  # over Python's 4,300-digit limit of int(str)
VOCAB = {"Opcodes": {"Ret": [0.1, 0.2]}, "Types": {"VoidTy": [0.1, 0.2]}, "Arguments": {"Function": [0.1, 0.2]}}


def _farm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "farm.cli", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def _one_line(res: subprocess.CompletedProcess) -> str:
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("mlgo-farm: error: "), res.stderr[-3000:]
    return res.stderr.removeprefix("mlgo-farm: error: ").rstrip("\n")


def test_a_vocabulary_integer_no_float_holds_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "vocab.json"
    path.write_text(json.dumps(VOCAB).replace("[0.1, 0.2]", f"[{10**400}, 0.2]", 1))
    res = _farm("vocab", "validate", "--kind", "ir", str(path))
    assert res.returncode == 2
    assert _one_line(res) == f"{path}: Opcodes.Ret holds an integer too large for a float"


def _vocab_file(tmp: Path) -> list[str]:
    (tmp / "vocab.json").write_text(json.dumps(VOCAB).replace("0.1", HUGE, 1))
    return ["vocab", "validate", "--kind", "ir", str(tmp / "vocab.json")]


def _vocab_dir(tmp: Path) -> list[str]:
    (tmp / "v").mkdir()
    (tmp / "v" / "vocab.json").write_text(json.dumps(VOCAB))
    (tmp / "v" / "manifest.json").write_text(f'{{"kind": "ir", "dimension": {HUGE}}}')
    return ["vocab", "publish", str(tmp / "v")]


def _dataset_dir(tmp: Path) -> list[str]:
    (tmp / "ds").mkdir()
    (tmp / "ds" / "manifest.json").write_text(f'{{"kind": "ir", "format": {HUGE}}}')
    return ["vocab", "train", str(tmp / "ds"), "-o", str(tmp / "out"), "--epochs", "1"]


def _store_manifest(tmp: Path) -> list[str]:
    store = tmp / "var" / "store" / "vocab" / "ir"
    store.mkdir(parents=True)
    (store / "latest.json").write_text(f'{{"version": {HUGE}}}')
    return ["vocab", "show", "--kind", "ir"]


@pytest.mark.parametrize(("make", "code", "where"), [
    (_vocab_file, 2, "/vocab.json"), (_vocab_dir, 2, "v/manifest.json"), (_dataset_dir, 2, "ds/manifest.json"),
    (_store_manifest, 4, "vocab/ir/latest.json in file://")])
def test_a_5001_digit_integer_in_json_is_one_line(tmp_path: Path, make, code: int, where: str) -> None:
    env = {"MLGO_FARM_STORE_URL": f"file://{tmp_path / 'var' / 'store'}"}
    res = _farm(*make(tmp_path), env=env)
    assert res.returncode == code, res.stderr[-3000:]
    line = _one_line(res)
    assert where in line and "Exceeds the limit (4300 digits) for integer string conversion" in line, line
    assert "set_int_max_str_digits" not in line
    assert not (tmp_path / "out").exists()


def test_a_5001_digit_integer_in_the_configuration_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "farm.toml"
    config.write_text(f"[celery]\nvisibility_timeout = {HUGE}\n")
    with pytest.raises(FarmError) as e:
        load_settings(config)
    assert str(e.value) == (f"config {config}: Exceeds the limit (4300 digits) for integer string conversion: "
                            "value has 5001 digits")
    res = _farm("vocab", "list", env={"MLGO_FARM_CONFIG": str(config)})
    assert res.returncode == 2 and _one_line(res) == str(e.value)  # a bad configuration file is bad input


def test_loads_raises_the_callers_error_class() -> None:
    with pytest.raises(StoreError, match=r"^obj: invalid JSON: Exceeds the limit \(4300 digits\) .* 5001 digits$"):
        loads(f"[{HUGE}]", "obj", StoreError)
    with pytest.raises(InputError, match=r"^obj: JSON nested too deeply to read$"):
        loads("[" * 100_000, "obj")
