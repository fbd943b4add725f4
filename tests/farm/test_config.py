"""The configuration loader refuses what it cannot mean: one line each, never a traceback or a silent default."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.config import NON_SETTING_VARIABLES, load_settings
from farm.errors import FarmError


@pytest.mark.parametrize("content, message", [
    (b'store = 5\n', r"'store' must be a table \(\[store\] with keys\), got 5$"),
    (b'"x" = "y"\n', r"'x' must be a table"),
    (b'[smtp]\nsender = "caf\xe9"\n', r"not UTF-8 text \(invalid continuation byte at byte 20\)$"),
    (b"[policy]\ntimeout = -1\n", r"\[policy\] timeout: must be greater than 0, got -1"),
    (b"[policy]\ntimeout = nan\n", r"\[policy\] timeout: expected a finite number, got nan$"),
    (b"[buildbot]\nwww_port = 70000\n", r"\[buildbot\] www_port: a TCP port is 1..65535, got 70000$"),
    (b"[smtp]\nretries = -2\n", r"\[smtp\] retries: must not be negative, got -2$"),
    (b"[policy]\nretrain_time_limit = -1\n", r"\[policy\] retrain_time_limit: must not be negative, got -1$"),
])
def test_bad_files_are_one_line(tmp_path: Path, content: bytes, message: str) -> None:
    cfg = tmp_path / "farm.toml"
    cfg.write_bytes(content)
    with pytest.raises(FarmError, match=message) as e:
        load_settings(cfg, env={})
    assert str(e.value).startswith(f"config {cfg}") and "\n" not in str(e.value)


def test_a_directory_is_not_a_config_file(tmp_path: Path) -> None:
    with pytest.raises(FarmError, match=r"is not a file$"):
        load_settings(tmp_path, env={})


@pytest.mark.parametrize("env, message", [
    ({"MLGO_FARM_SMTP_RECIPIENT": "ops@example.org"},
     r"^environment variable MLGO_FARM_SMTP_RECIPIENT names no setting "),
    ({"MLGO_FARM_POLICY_TIMEOUT": "-5"}, r"^MLGO_FARM_POLICY_TIMEOUT: must be greater than 0, got -5.0$"),
    ({"MLGO_FARM_POLICY_TIMEOUT": "nan"}, r"^MLGO_FARM_POLICY_TIMEOUT: expected a finite number, got nan$"),
    ({"MLGO_FARM_CELERY_VISIBILITY_TIMEOUT": "0"}, r"^MLGO_FARM_CELERY_VISIBILITY_TIMEOUT: must be greater than 0"),
    ({"MLGO_FARM_SMTP_STARTTLS": "maybe"}, r"^MLGO_FARM_SMTP_STARTTLS='maybe': expected true or false$"),
])
def test_bad_environment_is_one_line(tmp_path: Path, env: dict[str, str], message: str) -> None:
    with pytest.raises(FarmError, match=message):
        load_settings(tmp_path / "none.toml", env=env)


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_directory_setting_is_not_the_current_directory(tmp_path: Path, value: str) -> None:
    with pytest.raises(FarmError, match=r"^MLGO_FARM_PATHS_VAR_DIR: must name a directory, got .* \(empty would mean "
                                        r"the current directory\)$"):
        load_settings(tmp_path / "none.toml", env={"MLGO_FARM_PATHS_VAR_DIR": value})
    with pytest.raises(FarmError, match=r"^MLGO_FARM_LLVM_BIN_DIR: must name a directory"):
        load_settings(tmp_path / "none.toml", env={"MLGO_FARM_LLVM_BIN_DIR": value})
    (tmp_path / "f.toml").write_text(f'[paths]\nvar_dir = "{value}"\n')
    with pytest.raises(FarmError, match=r"^config .*f\.toml: \[paths\] var_dir: must name a directory"):
        load_settings(tmp_path / "f.toml", env={})


def test_an_empty_var_dir_is_one_line_from_the_cli(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "MLGO_FARM_PATHS_VAR_DIR": ""}
    before = sorted(tmp_path.iterdir())
    p = subprocess.run([sys.executable, "-m", "farm.cli", "vocab", "list"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and p.stderr.startswith("mlgo-farm: error: MLGO_FARM_PATHS_VAR_DIR: must name"), p.stderr
    assert p.stderr.count("\n") == 1
    assert sorted(tmp_path.iterdir()) == before, "nothing is written into the current directory"


@pytest.mark.parametrize(("value", "says"), [
    ("../../etc", r"'\.\./\.\./etc' is neither a benchmark name"),
    ("zlib, ../zlib", r"'\.\./zlib' is neither a benchmark name"),
    ("zlib,/srv/bench/../../etc", r"'/srv/bench/\.\./\.\./etc' must be an absolute directory without"),
    ("sub/dir", r"'sub/dir' is neither a benchmark name"),
])
def test_gate_benchmarks_are_names_or_absolute_directories(tmp_path: Path, value: str, says: str) -> None:
    (tmp_path / "f.toml").write_text(f'[gate]\npolicy_benchmarks = "{value}"\n')
    with pytest.raises(FarmError, match=r"^\[gate\] policy_benchmarks: " + says):
        load_settings(tmp_path / "f.toml", env={})
    with pytest.raises(FarmError, match=r"^\[gate\] policy_benchmarks: " + says):
        load_settings(tmp_path / "none.toml", env={"MLGO_FARM_GATE_POLICY_BENCHMARKS": value})


def test_gate_benchmarks_may_name_benchmarks_and_absolute_directories(tmp_path: Path) -> None:
    s = load_settings(tmp_path / "none.toml", env={"MLGO_FARM_GATE_POLICY_BENCHMARKS": "zlib, bzip2,/srv/my-bench"})
    assert s.gate.policy_benchmarks == "zlib, bzip2,/srv/my-bench"


def test_every_setting_and_the_documented_extras_are_accepted(tmp_path: Path) -> None:
    env = {name: "x" for name in NON_SETTING_VARIABLES} | {
        "MLGO_FARM_SMTP_RECIPIENTS": "ops@example.org", "MLGO_FARM_SMTP_STARTTLS": "off",
        "MLGO_FARM_POLICY_TIMEOUT": "0.5", "OTHER_VARIABLE": "ignored"}
    s = load_settings(tmp_path / "none.toml", env=env)
    assert (s.smtp.recipients, s.smtp.starttls, s.policy.timeout) == ("ops@example.org", False, 0.5)
