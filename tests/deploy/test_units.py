"""deploy/systemd: the units systemd itself accepts, each restarted when it dies, no secret on a command line."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNITS = ROOT / "deploy" / "systemd"
INSTALL = "/opt/mlgo-farm"  # where the units expect the checkout (docs/operations.md, Under systemd)


def _service(unit: Path) -> dict[str, list[str]]:
    """The [Service] section's keys and values (a key may repeat in a unit, so not configparser)."""
    keys: dict[str, list[str]] = {}
    section = ""
    for line in unit.read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            keys.setdefault(key, []).append(value)
    return keys


def test_every_part_has_a_unit_that_restarts_it() -> None:
    units = {u.name: _service(u) for u in UNITS.glob("*.service")}
    assert set(units) == {"mlgo-farm-redis.service", "mlgo-farm-celery-worker.service",
                          "mlgo-farm-celery-beat.service", "mlgo-farm-buildbot-master.service",
                          "mlgo-farm-buildbot-worker@.service", "mlgo-farm-flower.service"}
    for name, keys in units.items():
        assert keys.get("Restart") in (["always"], ["on-failure"]), name
        assert "--detach" not in keys["ExecStart"][0] and "--daemonize yes" not in keys["ExecStart"][0], name
    assert not re.search(r"requirepass|PASSWORD|:[^/@ ]+@", units["mlgo-farm-redis.service"]["ExecStart"][0])
    conf = (UNITS / "redis.conf").read_text()
    for line in ("appendonly yes", "appendfsync always", "include /etc/mlgo-farm/redis-password.conf"):
        assert re.search(rf"^{re.escape(line)}$", conf, re.M), line
    assert "requirepass" not in re.sub(r"#.*", "", conf), "the password lives in its own 0600 file"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_accepts_the_units(tmp_path: Path) -> None:
    """`systemd-analyze verify` (unknown keys, bad values, missing executables) on the units as installed here."""
    units = tmp_path / "units"
    units.mkdir()
    for unit in UNITS.glob("*.service"):
        (units / unit.name).write_text(unit.read_text().replace(INSTALL, str(ROOT)))
    res = subprocess.run(["systemd-analyze", "verify", *sorted(str(p) for p in units.iterdir())],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and not (res.stdout + res.stderr).strip(), res.stdout + res.stderr
