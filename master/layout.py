"""Where the master and worker directories and the shared worker password live."""

from __future__ import annotations

import secrets
from pathlib import Path

from farm.atomic import write_atomic
from farm.config import Settings
from farm.errors import FarmError


def buildbot_dir(settings: Settings) -> Path:
    return settings.var_dir / "buildbot"


def master_dir(settings: Settings) -> Path:
    return Path(settings.buildbot.master_dir).absolute() if settings.buildbot.master_dir \
        else buildbot_dir(settings) / "master"


def worker_dir(settings: Settings, name: str | None = None) -> Path:
    if settings.buildbot.worker_dir and name in (None, settings.buildbot.worker_name):
        return Path(settings.buildbot.worker_dir).absolute()
    return buildbot_dir(settings) / f"worker-{name or settings.buildbot.worker_name}"


def password_file(settings: Settings) -> Path:
    return buildbot_dir(settings) / "worker-password"


def worker_password(settings: Settings, create: bool = False) -> str:
    """The configured password, else the generated one (made once, mode 0600, when `create`)."""
    if settings.buildbot.worker_password:
        return settings.buildbot.worker_password
    path = password_file(settings)
    if path.is_file():
        return path.read_text().strip()
    if not create:
        raise FarmError(f"no worker password: set MLGO_FARM_BUILDBOT_WORKER_PASSWORD or run "
                        f"`mlgo-farm master create` to generate {path}")
    value = secrets.token_urlsafe(18)
    write_atomic(path, value + "\n", mode=0o600)
    return value
