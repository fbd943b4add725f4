"""The dashboard over HTTP on loopback, mounted at the path the master gives it, with `[buildbot] web_url` pointing
at it: what a browser, curl or a command from a mail reaches, without starting Buildbot."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.serving import make_server

from farm.config import DASHBOARD_PATH, load_settings
from farm.objectstore import ObjectStore
from master.dashboard.app import create_app
from tests import servers


@contextlib.contextmanager
def dashboard_app(monkeypatch: pytest.MonkeyPatch, store: ObjectStore | None = None,
                  history: Path | None = None) -> Iterator[tuple[str, Any]]:
    """(the dashboard's base URL, ending in DASHBOARD_PATH, and its Flask app) while it is served."""
    port = servers.free_port()
    monkeypatch.setenv("MLGO_FARM_BUILDBOT_WEB_URL", f"http://127.0.0.1:{port}/")
    app = create_app(load_settings(), store=store, history=history)
    mounted = DispatcherMiddleware(lambda env, start: (start("404 Not Found", []), [b""])[1],
                                   {"/" + DASHBOARD_PATH.rstrip("/"): app})
    server = make_server("127.0.0.1", port, mounted, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/{DASHBOARD_PATH}", app
    finally:
        server.shutdown()
        thread.join(timeout=10)


@contextlib.contextmanager
def dashboard(monkeypatch: pytest.MonkeyPatch, store: ObjectStore | None = None,
              history: Path | None = None) -> Iterator[str]:
    """The dashboard's base URL (ending in DASHBOARD_PATH) while it is served."""
    with dashboard_app(monkeypatch, store, history) as (url, _):
        yield url
