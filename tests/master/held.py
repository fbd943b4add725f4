"""Test-only: a master configuration whose first build holds where Buildbot 4.3.0 wedges, until its worker is gone.

The hold is in the master process, at the start of `Build._setup_locks` (the first read of the
worker after the build was recorded, where the issue's AttributeError came from). It touches
`<gate>/reached`, then waits, without blocking the reactor, until the master has detached the
build's worker (the test SIGKILLs it); the builds after it pass straight through. So the test
lands its kill in the window that used to wedge the build every time, on any machine's speed.
"""

from __future__ import annotations

from pathlib import Path

from buildbot.process.build import Build
from twisted.internet import defer, reactor, task


def held(base: type[Build], gate: Path) -> type[Build]:
    class Held(base):
        holding = True

        @defer.inlineCallbacks
        def _setup_locks(self):
            if Held.holding:
                Held.holding = False
                (gate / "reached").touch()
                while self.workerforbuilder.worker is not None:
                    yield task.deferLater(reactor, 0.05, lambda: None)
                (gate / "released").touch()
            yield super()._setup_locks()

    return Held


def hold_first_build(config: dict, gate: Path, plain: bool = False) -> dict:
    """`config` (a BuildmasterConfig) with every builder's build class held; `plain`: on Buildbot's own
    Build instead of the farm's (what the master ran before master/watchdog.py), to test the watchdog alone."""
    for b in config["builders"]:
        b.factory.buildClass = held(Build if plain else b.factory.buildClass, gate)
    return config
