"""The whole Buildbot configuration dictionary, assembled from the registry and farm settings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from buildbot.config.errors import ConfigErrors
from buildbot.plugins import changes, worker

from farm.config import Settings, load_settings
from farm.errors import FarmError
from master.factories import FARM_COMMAND, active_builders, builder_configs
from master.layout import worker_password
from master.registry import REGISTRY, Builder, validate
from master.reporters import make_reporters
from master.schedulers import make_schedulers
from master.workerset import parse_workers


def build_config(settings: Settings | None = None, registry: Sequence[Builder] = REGISTRY,
                 farm_command: Sequence[str] = FARM_COMMAND) -> dict[str, Any]:
    """`BuildmasterConfig` for master.cfg; farm errors become Buildbot configuration errors."""
    try:
        return _build(settings or load_settings(), registry, farm_command)
    except FarmError as e:
        raise ConfigErrors([str(e)]) from None


def _build(s: Settings, registry: Sequence[Builder], farm_command: Sequence[str]) -> dict[str, Any]:
    validate(registry)
    bb = s.buildbot
    workers = parse_workers(bb.workers)
    password = worker_password(s)
    active = active_builders(registry, workers)
    c: dict[str, Any] = {
        "title": "mlgo-farm",
        "titleURL": f"http://{bb.master_host}:{bb.www_port}/",
        "buildbotURL": f"http://{bb.master_host}:{bb.www_port}/",
        "buildbotNetUsageData": None,
        "db": {"db_url": "sqlite:///state.sqlite"},  # relative to the master directory
        "protocols": {"pb": {"port": f"tcp:{bb.pb_port}:interface={bb.bind}"}},
        "www": {"port": f"tcp:{bb.www_port}:interface={bb.bind}", "plugins": {}},
        "workers": [worker.Worker(w.name, password, max_builds=w.max_builds,
                                  properties={"worker_tags": sorted(w.tags)}) for w in workers],
        "builders": builder_configs(active, workers, farm_command),
        "schedulers": make_schedulers(active),
        "services": make_reporters(active, s.smtp),
        "change_source": [],
    }
    if any(b.on_change for b in active):
        # `buildbot sendchange --master HOST:PB_PORT --auth change:PASSWORD --project P`
        c["change_source"].append(changes.PBChangeSource(user="change", passwd=password))
    return c
