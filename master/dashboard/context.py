"""What every section of the dashboard reads, and how a view reaches it.

The sections are module-level Flask Blueprints (app.py registers them), so no view closes over the store or the
settings: each asks `current_farm()` for the one `Farm` of the app serving the request, which create_app keeps at
`app.config["FARM"]` (tests reach it there too: its digests, its diffs, its settings). Nothing else is shared
between requests: a page reads the store and the history when it is asked for.

The two answers every section gives the same way live here too: JSON for scripts (`json_answer`: never kept by a
cache without asking, a page's state changes with the history) and a page's link as the absolute URL a script
fetches (`public`, from the configured `[buildbot] web_url`, never from the request's Host header).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from flask import Response, current_app, jsonify, url_for

from farm.config import Settings
from farm.errors import InputError, first_line
from farm.objectstore import CorruptObject, ObjectStore, store_from_settings
from master.dashboard import files
from master.dashboard.memo import Memo

#: Where create_app keeps the app's Farm.
KEY = "FARM"


class Farm:
    """What the pages read: the store (opened once, on first use) and the regression history's path."""

    def __init__(self, settings: Settings, store: ObjectStore | None = None, history: Path | str | None = None,
                 flower_url: str | None = None) -> None:
        from regression import database
        from regression.compare import history_path

        self.settings = settings
        self._store = store
        self._lock = threading.Lock()
        #: the history as the pages open it: connections and statements limited to `[regression] page_timeout`
        #: (a hung database makes a page say the history is unavailable, never hold a thread for a minute)
        where = history or history_path(settings)
        try:
            self.history_path: Path | str | database.URL = database.limited(where, settings.regression.page_timeout)
        except InputError:  # not a history URL: the pages that open it say so (a 503 in one line), as before
            self.history_path = where
        self.flower_url = flower_url
        #: who made a request (master/dashboard/login.py): the logged-in operator's name or None; set by the master
        #: when it mounts the app, else nobody may write
        self.login: Callable[[dict[str, Any]], str | None] = lambda environ: None
        #: sha256 of served objects by their identity (files.Blob), and diffs of published versions
        self.digests = Memo(4096)
        self.diffs = Memo(64)

    def public_url(self, key: str) -> str:
        """The download URL of store `key` as readers reach the master: from the configuration, not the request."""
        return self.settings.buildbot.dashboard(f"store/{key}")

    def digest(self, got: files.Served) -> str:
        if got.blob is None:
            return hashlib.sha256(got.data or b"").hexdigest()
        return self.digests.get(got.blob.identity, got.blob.sha256)

    def verified(self, got: files.Served) -> str:
        """The served bytes' sha256, if it is the one their manifest records (CorruptObject, one line, if not)."""
        digest = self.digest(got)
        if got.expected is not None and digest != got.expected[1]:
            key, recorded = got.expected
            raise CorruptObject(f"{key}: its bytes' sha256 is {digest}, not the {recorded} its manifest records")
        return digest

    def read_verified(self, key: str) -> bytes:
        """A version's file whole (for the diffs), checked like a download (NotServed, CorruptObject): the bytes
        read are hashed, not only the ones the remembered digest was computed from."""
        got = files.serve(self.store, key)
        try:
            digest = self.verified(got)
            data = got.read()
        finally:
            got.close()
        if got.blob is not None and hashlib.sha256(data).hexdigest() != digest:
            self.digests.forget(got.blob.identity)
            raise CorruptObject(f"{key}: its bytes changed since their digest was computed")
        return data

    def integrity(self, base: str, names: Iterable[str]) -> dict[str, str | None]:
        """What a version's page says of its files under `base`: None for bytes that match the manifest, else the
        one line why they are not served (corrupt, missing)."""
        out: dict[str, str | None] = {}
        for name in names:
            try:
                self.read_check(f"{base}/{name}")
                out[name] = None
            except CorruptObject as e:
                out[name] = first_line(e)
            except files.NotServed:
                out[name] = f"{base}/{name} is missing from the store"
        return out

    def read_check(self, key: str) -> None:
        """Check `key` like a download, reading nothing but what its digest needs (once per object identity)."""
        got = files.serve(self.store, key)
        try:
            self.verified(got)
        finally:
            got.close()

    @property
    def store(self) -> ObjectStore:
        with self._lock:
            if self._store is None:
                self._store = store_from_settings(self.settings)
            return self._store


def current_farm() -> Farm:
    """The Farm of the app serving this request."""
    return current_app.config[KEY]


def json_answer(data: Any, status: int = 200) -> Response:
    """`data` as JSON that a cache revalidates before it reuses it."""
    resp = jsonify(data)
    resp.status_code = status
    resp.headers["Cache-Control"] = "no-cache"
    return resp


def public(link: str | None) -> str | None:
    """A page link (None: no link) as the absolute URL a script fetches (from `web_url`, like index.json's)."""
    root = url_for("overview.home")  # the app's prefix ("/plugins/wsgi_dashboards/farm/" where the master mounts it)
    return None if link is None else current_farm().settings.buildbot.dashboard(link.removeprefix(root))
