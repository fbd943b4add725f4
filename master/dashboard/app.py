"""The farm's WSGI dashboard: its pages and the read-only download URLs, mounted in the Buildbot master.

Buildbot's `wsgi_dashboards` plugin (buildbot_wsgi_dashboards) mounts this Flask app at
`/plugins/wsgi_dashboards/farm/` of the master's web port, puts "Farm" in the web UI's menu and
shows this app's `index.html` there; the other pages are full pages under the same prefix.
Downloads live under `store/`, in the store's own key layout (`store/vocab/ir/latest/vocab.json`),
so the URL a user without the farm fetches has the same shape as the S3 key of the same file.

Links that leave the page (the download URLs of `index.json`, the `curl` lines of the version pages)
are built from the configured `[buildbot] web_url` (farm.config's BuildbotConfig.dashboard), never
from the request's Host header, which anyone can set; links inside the pages are paths.

Each section is a Flask Blueprint in a module of its own, with plain view functions, registered by `create_app`
(BLUEPRINTS): the front page (views.py, `overview`), the vocabularies (views_vocab.py, `vocab`), the datasets
(views_datasets.py), the policies (views_policies.py), the regression runs (views_regression.py), the alerts
(views_alerts.py), the mail (views_mail.py) and the downloads (downloads.py); the filters and globals every
template may use are the route-less Blueprint of templating.py. An endpoint is its section's name and the view's
(`url_for("vocab.vocab_version", ...)`). What the views share is one typed object, the `Farm` (context.py: the
store, the history's path, the settings, the digest and diff caches, who is logged in), which this factory keeps
at `app.config["FARM"]` and every view reaches through `context.current_farm()`, never a closure or a global;
what a request alone needs is on `flask.g`. This module keeps what is the app's own: the read-only middleware,
the `id` converter, the error pages and the headers every answer carries.

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

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from flask import Flask, Response, request
from werkzeug.exceptions import NotFound
from werkzeug.routing import BaseConverter, ValidationError

from farm import ids
from farm.config import Settings
from farm.errors import HistoryError, InputError, StoreError, first_line
from farm.objectstore import CorruptObject, ObjectStore
from master.dashboard import (
    context,
    downloads,
    stream,
    templating,
    views,
    views_alerts,
    views_datasets,
    views_mail,
    views_policies,
    views_regression,
    views_vocab,
)
from master.dashboard.context import Farm
from master.dashboard.mount import STATIC

READ_METHODS = ("GET", "HEAD")
#: The most characters of what was not found a 404 repeats.
MAX_404 = 200


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


def _plain_error(status: int, reason: str, text: str) -> Response:
    """An error as one line of plain text that no cache keeps."""
    resp = Response(f"{status} {reason}: {' '.join(text.split())}\n", status, content_type="text/plain; charset=utf-8")
    resp.headers["Cache-Control"] = "no-store"
    return resp


#: The sections, each a Blueprint of its own module, registered in this order.
BLUEPRINTS = (templating.bp, downloads.bp, views.bp, views_vocab.bp, views_datasets.bp, views_policies.bp,
            views_regression.bp, views_alerts.bp, views_mail.bp)


def create_app(settings: Settings, store: ObjectStore | None = None, history: Path | str | None = None,
               flower_url: str | None = None) -> Flask:
    """The dashboard app for `settings` (`store` and `history` override where it reads, for tests)."""
    app = Flask("master.dashboard", template_folder=str(Path(__file__).with_name("templates")),
                static_folder=str(STATIC), static_url_path="/static")  # the pages' one stylesheet: static/styles.css
    app.config[context.KEY] = Farm(settings, store, history, flower_url)
    app.jinja_env.autoescape = True
    app.url_map.converters["id"] = IdConverter
    app.url_map.merge_slashes = False  # `store//etc/passwd` is a refused key, not a redirect to another one
    app.wsgi_app = ReadOnly(app.wsgi_app)  # type: ignore[method-assign]
    for section in BLUEPRINTS:
        app.register_blueprint(section)

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
    farm = app.config[context.KEY]

    def logged_in_through(api: Any) -> None:
        farm.login = BuildbotLogin(api)

    return [{"name": "farm", "caption": "Farm", "app": Mounted(app, "farm", logged_in_through),
             "order": 20, "icon": "flask"}]
