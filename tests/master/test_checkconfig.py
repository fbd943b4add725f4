"""`buildbot checkconfig` on the repository's master.cfg, through the farm's settings."""

from __future__ import annotations

import pytest

from farm.cli import main
from farm.config import load_settings
from farm.errors import FarmError
from master import control
from master.layout import admin_password_file, password_file


def test_checkconfig_passes_on_the_real_master_cfg(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MLGO_FARM_SMTP_RECIPIENTS", "ops@example.org")
    s = load_settings()
    assert "Config file is good!" in control.check(s)  # before `create`: the file itself, no password yet
    assert not password_file(s).exists() and not admin_password_file(s).exists()
    basedir = control.create(s)
    assert (basedir / "state.sqlite").is_file() and (basedir / "master.cfg").resolve() == control.MASTER_CFG
    assert password_file(s).stat().st_mode & 0o077 == 0
    assert admin_password_file(s).stat().st_mode & 0o777 == 0o600
    assert "Config file is good!" in control.check(s)
    assert control.create(s) == basedir  # idempotent


def test_checkconfig_reports_bad_farm_settings_in_one_line(monkeypatch: pytest.MonkeyPatch, capsys):
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WORKER_PASSWORD", "pw")
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WORKERS", "w1:big:0")
    with pytest.raises(FarmError, match="max_builds must be a positive integer"):
        control.check(load_settings())
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WORKERS", "w1:big")
    assert main(["master", "force", "no-such-builder", "--url", "http://127.0.0.1:9/"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mlgo-farm: error: buildbot master at http://127.0.0.1:9/")
