"""The whole Buildbot configuration dictionary, assembled from the registry and farm settings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from buildbot.config.errors import ConfigErrors
from buildbot.plugins import changes, util, worker

from farm.config import Settings, load_settings
from farm.errors import FarmError
from master.collapse import collapse_requests
from master.factories import FARM_COMMAND, active_builders, builder_configs
from master.layout import web_users, worker_password
from master.registry import REGISTRY, Builder
from master.registrycheck import validate
from master.reporters import make_reporters
from master.schedulers import llvm_poller, make_schedulers
from master.watchdog import Watchdog
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
    llvm = (s.llvm.repo, s.llvm.branch) if s.llvm.polls and any(b.follows_llvm for b in active) else None
    c: dict[str, Any] = {
        "title": "mlgo-farm",
        "titleURL": bb.url,
        "buildbotURL": bb.url,  # build links in mails and the steps' dashboard links start here
        "buildbotNetUsageData": None,
        "db": {"db_url": "sqlite:///state.sqlite"},  # relative to the master directory
        "protocols": {"pb": {"port": f"tcp:{bb.pb_port}:interface={bb.bind}"}},
        "www": {"port": f"tcp:{bb.www_port}:interface={bb.bind}", "plugins": web_plugins(s), **web_access(s)},
        "collapseRequests": collapse_requests,
        "workers": [worker.Worker(w.name, password, max_builds=w.max_builds,
                                  properties={"worker_tags": sorted(w.tags)}) for w in workers],
        "builders": builder_configs(active, workers, farm_command),
        "schedulers": make_schedulers(active, llvm),
        # the watchdog frees builds that never reach their first step; the mail says so
        "services": [*make_reporters(active, s.smtp), Watchdog(deadline=bb.start_deadline)],
        # the LLVM the nightly LLVM builders follow: their builds carry its commits (console and grid views)
        "change_source": llvm_poller(s.llvm.repo, s.llvm.branch, s.llvm.poll_interval) if llvm else [],
    }
    if any(b.on_change for b in active):
        # `buildbot sendchange --master HOST:PB_PORT --auth change:PASSWORD --project P`
        c["change_source"].append(changes.PBChangeSource(user="change", passwd=password))
    return c


def web_plugins(s: Settings) -> dict[str, Any]:
    """`www['plugins']`: Buildbot's console, grid and waterfall views (what the LLVM lab's users know), and
    the farm's own pages and downloads as a WSGI dashboard (master/dashboard), which links Flower."""
    from master import flower
    from master.dashboard.app import dashboards

    return {"console_view": {}, "grid_view": {}, "waterfall_view": {},
            "wsgi_dashboards": dashboards(s, flower_url=flower.url(s))}


#: The role every web login has; every control action needs it.
OPERATOR = "operator"


def web_access(s: Settings) -> dict[str, Any]:
    """`www['auth']` and `www['authz']`: anonymous visitors see everything and change nothing.

    Buildbot's AnyControlEndpointMatcher matches every action that is not a read (force, stop,
    cancel, rebuild, pausing a worker, enabling a scheduler, ...), and with its default deny an
    anonymous request gets HTTP 403. Logins are Buildbot's UserPasswordAuth (HTTP basic or digest
    at /auth/login, then a session cookie): the configured admin and the users file
    (master.layout.web_users); each has the operator role.
    """
    users = web_users(s)
    return {
        "auth": util.UserPasswordAuth(users),
        "authz": util.Authz(
            allowRules=[util.AnyControlEndpointMatcher(role=OPERATOR)],
            roleMatchers=[util.RolesFromUsername(roles=[OPERATOR], usernames=sorted(users))],
        ),
    }
