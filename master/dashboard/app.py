"""The farm's WSGI dashboard: its pages and the read-only download URLs, mounted in the Buildbot master.

Buildbot's `wsgi_dashboards` plugin (buildbot_wsgi_dashboards) mounts this Flask app at
`/plugins/wsgi_dashboards/farm/` of the master's web port, puts "Farm" in the web UI's menu and
shows this app's `index.html` there; the other pages are full pages under the same prefix.
Downloads live under `store/`, in the store's own key layout (`store/vocab/ir/latest/vocab.json`),
so the URL a user without the farm fetches has the same shape as the S3 key of the same file.

Links that leave the page (the download URLs of `index.json`, the `curl` lines of the version pages)
are built from the configured `[buildbot] web_url` (farm.config's BuildbotConfig.dashboard), never
from the request's Host header, which anyone can set; links inside the pages are paths.

Everything here only reads, but one thing. Anonymous visitors may look, never act: every method other than GET
and HEAD is answered 405 before any page code runs (middleware below, for every path, existing or
not), and no page writes to the store. The one write is an alert's state in the regression history (POST
`alerts/ID/state`, master/dashboard/views_alerts.py), which only a logged-in operator may make (Buildbot's login
and authz, master/dashboard/login.py; anyone else gets 403). What is served of the store is decided in
master/dashboard/files.py (published prefixes only; no staging, no traversal).

Nothing corrupt is served as good: a version's file whose bytes do not hash to its manifest's sha256 (the
digest computed once per object identity: path, inode, size and modification time, or S3's ETag), or an index or
manifest that does not parse, is answered `500` with one line naming it and `Cache-Control: no-store` (a cache must
not keep the refusal either: the next request, after an operator restored the file, gets the bytes), and a
version's page says its file is corrupt. Rot that keeps the identity (a bit flipped in place) is caught on the way
out: every download is hashed again as it is sent, and bytes that do not hash to its ETag are never sent whole
(master/dashboard/stream.py). `mlgo-farm store verify` finds
every such object at once (farm/artifacts/scrub.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from flask import Flask, Response, abort, jsonify, request
from werkzeug.exceptions import NotFound
from werkzeug.routing import BaseConverter, ValidationError

from farm import ids
from farm.artifacts.kinds import POLICY, VOCAB
from farm.config import Settings
from farm.errors import HistoryError, InputError, StoreError, first_line
from farm.objectstore import CorruptObject, ObjectStore, store_from_settings
from master.dashboard import files, stream
from master.dashboard.memo import Memo
from master.dashboard.mount import STATIC

log = logging.getLogger(__name__)
READ_METHODS = ("GET", "HEAD")
#: The most characters of what was not found a 404 repeats.
MAX_404 = 200
#: Pages of the store (regression reports) may show images and inline style, never run a script.
STORE_HTML_CSP = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'"


#: The one write the dashboard takes: a logged-in operator's change of an alert's state (views_alerts.py).
WRITABLE = re.compile(rf"/alerts/[0-9]{{1,{ids.MAX_DIGITS}}}/state")


class IdConverter(BaseConverter):
    """`<id:name>` in a route: a record number as farm/ids.py reads it (ASCII digits within a database integer);
    anything else matches no route, a 404 (werkzeug's `int` takes any script's digits and any size)."""

    regex = rf"[0-9]{{1,{ids.MAX_DIGITS}}}"

    def to_python(self, value: str) -> int:
        try:
            return ids.record_id(value)
        except InputError:
            raise ValidationError() from None

    def to_url(self, value: Any) -> str:
        return str(int(value))


class ReadOnly:
    """WSGI middleware: 405 with `Allow: GET, HEAD` for any other method, whatever the path, but a POST of an
    alert's state (WRITABLE), which its page answers 403 unless an operator is logged in."""

    def __init__(self, app: Callable) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET").upper()
        if method not in READ_METHODS and not (method == "POST" and WRITABLE.fullmatch(environ.get("PATH_INFO", ""))):
            body = b"405 Method Not Allowed: the farm's pages and downloads are read-only (GET, HEAD)\n"
            start_response("405 Method Not Allowed", [("Allow", ", ".join(READ_METHODS)),
                                                      ("Content-Type", "text/plain; charset=utf-8"),
                                                      ("Content-Length", str(len(body)))])
            return [body]

        def keep_write(*args: Any) -> Callable:
            environ[stream.WRITE] = write = start_response(*args)  # the server's own (see stream.py)
            return write

        return self.app(environ, keep_write)


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


def _forget(farm: Farm, blob: files.Blob) -> Callable[[], None]:
    """What a download does when its bytes turn out not to hash to its ETag: the digest remembered for their
    identity is dropped (the next request hashes them before it answers) and the master's log says so."""

    def forget() -> None:
        farm.digests.forget(blob.identity)
        log.warning("dashboard: %s no longer hashes to the digest remembered for it: download cut short", blob.identity)

    return forget


def _download(farm: Farm, key: str) -> Response:
    """The object streamed (stream.py), its sha256 as ETag (computed once per object, Farm.digests) and checked
    again on the way out (stream.Checked: bytes that no longer hash to it are never sent whole)."""
    try:
        got = files.serve(farm.store, key)
    except files.NotServed:
        abort(404)
    try:
        etag = farm.verified(got)
        if got.blob is None:
            resp = Response(got.data, content_type=got.content_type)
        else:
            checked = stream.Checked(got.blob.reader, etag, _forget(farm, got.blob))
            resp = Response(stream.Stream(checked, request.environ), content_type=got.content_type,
                            direct_passthrough=True)
            resp.content_length = got.blob.size
    except BaseException:
        got.close()
        raise
    resp.set_etag(etag)
    resp.headers["Cache-Control"] = "public, max-age=31536000, immutable" if got.immutable else "no-cache"
    resp.headers["X-Content-Type-Options"] = "nosniff"
    if got.version:
        resp.headers["X-Farm-Version"] = got.version
    if got.content_type.startswith("text/html"):
        resp.headers["Content-Security-Policy"] = STORE_HTML_CSP
    return resp.make_conditional(request)


def _plain_error(status: int, reason: str, text: str) -> Response:
    """An error as one line of plain text that no cache keeps."""
    resp = Response(f"{status} {reason}: {' '.join(text.split())}\n", status, content_type="text/plain; charset=utf-8")
    resp.headers["Cache-Control"] = "no-store"
    return resp


def download_index(farm: Farm) -> dict[str, Any]:
    """Every published version with its absolute download URLs (from `web_url`): what a script fetches first."""
    url = farm.public_url

    out: dict[str, Any] = {"format": 1}
    for declared in (VOCAB, POLICY):  # the kinds' declarations say which field groups their versions
        root, artifact = declared.root, files.ARTIFACTS[declared.root]
        kinds: dict[str, Any] = {}
        for v in files.versions(farm.store, root):
            kind, version = str(v.get(declared.group) or ""), str(v.get("version") or "")
            if not kind or not version:
                continue
            base = f"{root}/{kind}/{version}"
            entry = kinds.setdefault(kind, {"latest": None, "latest_url": url(f"{root}/{kind}/latest/{artifact}"),
                                            "versions": []})
            if v.get("state") == "latest":
                entry["latest"] = version
            entry["versions"].append({
                **{k: v.get(k) for k in ("version", "sha256", "dimension", "state", "llvm_version", "llvm_commit",
                                         "published_at", "dataset_id", "vocab_version") if k in v},
                "validated_with_llvm": files.validated_with(farm.store, root, kind, version),
                "url": url(f"{base}/{artifact}"), "sha256_url": url(f"{base}/{artifact}.sha256"),
                "manifest_url": url(f"{base}/manifest.json"),
            })
        for kind, entry in kinds.items():
            if entry["latest"] is None:
                with contextlib.suppress(files.NotServed):
                    entry["latest"] = files.latest_version(farm.store, root, kind)
        out[root] = kinds
    return out


def create_app(settings: Settings, store: ObjectStore | None = None, history: Path | str | None = None,
               flower_url: str | None = None) -> Flask:
    """The dashboard app for `settings` (`store` and `history` override where it reads, for tests)."""
    from master.dashboard import views

    app = Flask("master.dashboard", template_folder=str(Path(__file__).with_name("templates")),
                static_folder=str(STATIC), static_url_path="/static")  # the pages' one stylesheet: static/styles.css
    app.config["FARM"] = farm = Farm(settings, store, history, flower_url)
    app.jinja_env.autoescape = True
    app.url_map.converters["id"] = IdConverter
    app.url_map.merge_slashes = False  # `store//etc/passwd` is a refused key, not a redirect to another one
    app.wsgi_app = ReadOnly(app.wsgi_app)  # type: ignore[method-assign]

    @app.route("/store/<path:key>")
    def download(key: str) -> Response:
        return _download(farm, key)

    @app.route("/index.json")
    def index_json() -> Response:
        resp = jsonify(download_index(farm))
        resp.headers["Cache-Control"] = "no-cache"
        return resp

    views.register(app, farm)

    @app.errorhandler(404)
    def _not_found(e: NotFound) -> Response:
        """One line of plain text: what was not found, never a page that could be mistaken for one."""
        text = e.description if e.description != NotFound.description else f"nothing at {request.path}"
        text = " ".join(str(text).split())
        if len(text) > MAX_404:  # a hostile path of 4 KB is not echoed back whole
            text = text[:MAX_404] + "…"
        return Response(f"404 Not Found: {text}\n", 404, content_type="text/plain; charset=utf-8")

    @app.errorhandler(CorruptObject)
    def _corrupt(e: CorruptObject) -> Response:
        """A stored object that is not what the farm published: one line naming it, a status that says the fault
        is the server's, and nothing a cache keeps (the object may be restored in a minute)."""
        return _plain_error(500, "Internal Server Error", f"corrupt object in the store: {first_line(e, 600)} "
                                                        "(an operator runs `mlgo-farm store verify`)")

    @app.errorhandler(HistoryError)
    @app.errorhandler(StoreError)
    def _store_down(e: StoreError) -> Response:
        """The store or the history did not answer (S3 down, a hung database past `[regression] page_timeout`): one
        line, and a status that says "try again", not "no such file"."""
        return Response(f"503 Service Unavailable: {' '.join(str(e).split())}\n", 503,
                        content_type="text/plain; charset=utf-8", headers={"Cache-Control": "no-store"})

    @app.after_request
    def _headers(resp: Response) -> Response:
        resp.headers.setdefault("X-Content-Type-Options", "nosniff")
        resp.headers.setdefault("Referrer-Policy", "same-origin")
        return resp

    return app


def dashboards(settings: Settings, flower_url: str | None = None) -> list[dict[str, Any]]:
    """`www['plugins']['wsgi_dashboards']`: the farm's pages as one entry of the web UI's menu, served by a thread
    pool of their own (master/dashboard/mount.py)."""
    from master.dashboard.login import BuildbotLogin
    from master.dashboard.mount import Mounted

    app = create_app(settings, flower_url=flower_url)
    farm = app.config["FARM"]

    def logged_in_through(api: Any) -> None:
        farm.login = BuildbotLogin(api)

    return [{"name": "farm", "caption": "Farm", "app": Mounted(app, "farm", logged_in_through),
             "order": 20, "icon": "flask"}]
