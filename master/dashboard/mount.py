"""The dashboard on a thread pool of its own inside the master, so that no load on it delays the REST API.

Buildbot's `wsgi_dashboards` plugin (4.3.0) mounts each app with `WSGIResource(reactor,
reactor.getThreadPool(), app)`: the reactor's own pool, which Buildbot's REST API also needs for every
answer (buildbot/www/rest.py writes each JSON response through `deferToThread`). 400 anonymous requests
of a dashboard page then queue ahead of every REST answer in that pool, however cheap each page is
(measured: REST answers waited as long as the whole burst, 45 s before the diffs were cached, still a
second after). So the plugin's mount is replaced right after it is made: the plugin sets the app's
`buildbot_api` attribute just before it mounts the app (buildbot_wsgi_dashboards/__init__.py); Mounted
takes that as the signal and, on the reactor's next turn, puts the same app under the same name on a
WSGIResource with a pool of POOL_THREADS threads. Should a later plugin change how it mounts, the
plugin's own mount stays and only the isolation is lost.

Downloads (`store/...`) get a pool of their own too, DOWNLOAD_THREADS threads: the pages read the regression
history, and a hung history database holds each page's thread until `[regression] page_timeout`; on one pool, a
few such pages queued every download behind them (a minute per request before there was a page timeout). The app
is one under its name; `_Split` hands each request to the WSGIResource of its pool by its first path segment.

The same hook gives the plugin its stylesheet. Buildbot's web UI asks every web plugin for
`plugins/NAME/styles.css` (and `scripts.js`) on every page; the plugin's resource serves its package's
`static/` folder, and buildbot_wsgi_dashboards 4.3.0 ships no `styles.css` there (its build emits only
scripts.js), so that request was a 404 on every page of the UI. Buildbot's manual asks a dashboard to style its
HTML itself, scoped to its own class because the styles are shared with the whole UI; so the farm's one
stylesheet (master/dashboard/static/styles.css, every rule under `.mlgo-farm-dashboard`) becomes that
`styles.css`, a child of the plugin's resource beside the mounted app. A later plugin that ships its own
`styles.css` keeps it: the farm's is put only where there is none.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from master.dashboard import stream

#: The pages' one stylesheet, `static/styles.css`: served by the app as its `static/styles.css` (app.py) and, to
#: Buildbot's web UI, as the plugin's own `plugins/wsgi_dashboards/styles.css` (give_stylesheet).
STATIC = Path(__file__).with_name("static")
STYLESHEET = STATIC / "styles.css"
#: Threads serving the dashboard's pages (they hold the GIL while they render: more would not serve faster).
POOL_THREADS = 4
#: Threads serving downloads (a local file's is handed to the reactor after its first chunk; an S3 body's stays).
DOWNLOAD_THREADS = 4
#: The first path segment of a download (downloads.py's `store/<key>`).
DOWNLOADS = b"store"

_pools: dict[str, Any] = {}


def _own_pool(reactor: Any, name: str = "pages", threads: int = POOL_THREADS) -> Any:
    """One pool of each name for the master's life (a reconfig mounts the app again, on the same pools)."""
    if name not in _pools:
        from twisted.python.threadpool import ThreadPool

        pool = _pools[name] = ThreadPool(minthreads=0, maxthreads=threads, name=f"mlgo-farm-dashboard-{name}")
        pool.start()
        if len(_pools) == 1:
            reactor.addSystemEventTrigger("before", "shutdown", stream.stop_all)  # no thread waits on a client then
        reactor.addSystemEventTrigger("during", "shutdown", pool.stop)
    return _pools[name]


def _split(pages: Any, downloads: Any) -> Any:
    """A resource that serves `store/...` through `downloads` and every other path through `pages` (two
    WSGIResources of one app, each a leaf: the path segment looked at is put back, so the app sees the same paths
    as when it was mounted alone)."""
    from twisted.web.resource import Resource

    class _Split(Resource):
        def getChildWithDefault(self, path: bytes, request: Any) -> Any:
            request.postpath.insert(0, request.prepath.pop())
            return downloads if path == DOWNLOADS else pages

        def render(self, request: Any) -> Any:  # the app's own root, without a trailing slash
            return pages.render(request)

    return _Split()


class Mounted:
    """The WSGI app as the plugin is given it: itself, remounted on its own pool once the plugin has mounted it."""

    def __init__(self, app: Callable, name: str, on_api: Callable[[Any], None] | None = None) -> None:
        self.app = app
        self.name = name
        #: told the plugin's API object when the plugin mounts the app (the dashboard's login reads the master)
        self.on_api = on_api
        self._api: Any = None
        #: The pools serving its pages and its downloads once remounted (None under any other server, and before).
        self.pool: Any = None
        self.download_pool: Any = None

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        return self.app(environ, start_response)

    @property
    def buildbot_api(self) -> Any:
        return self._api

    @buildbot_api.setter
    def buildbot_api(self, api: Any) -> None:
        """Set by the plugin right before it mounts this app on the reactor's pool."""
        from twisted.internet import reactor

        self._api = api
        if self.on_api is not None:
            self.on_api(api)
        reactor.callLater(0, self._remount, reactor, api)

    def _remount(self, reactor: Any, api: Any) -> None:
        from twisted.web.wsgi import WSGIResource

        parent = getattr(api, "resource", None)
        if parent is None or not hasattr(parent, "putChild"):
            return
        give_stylesheet(parent, api)
        give_scripts(parent)
        self.pool = _own_pool(reactor)
        self.download_pool = _own_pool(reactor, "downloads", DOWNLOAD_THREADS)
        parent.putChild(self.name.encode(), _split(WSGIResource(reactor, self.pool, self),
                                                   WSGIResource(reactor, self.download_pool, self)))


def _ships_stylesheet(resource: Any) -> bool:
    static_dir = getattr(resource, "path", None)
    return static_dir is not None and (Path(static_dir) / "styles.css").is_file()


def give_stylesheet(parent: Any, api: Any = None) -> None:
    """The farm's stylesheet as the plugin's `styles.css`, unless the plugin's static folder has one of its own; and
    an empty one to every other configured web plugin that ships none (the grid view of 4.3.0), so that no page of
    Buildbot's UI asks for a stylesheet in vain."""
    from twisted.web.static import Data, File

    if not _ships_stylesheet(parent):
        parent.putChild(b"styles.css", File(str(STYLESHEET), defaultType="text/css"))
    master = getattr(api, "master", None)
    apps = getattr(getattr(master, "www", None), "apps", None)
    configured = (getattr(getattr(master, "config", None), "www", None) or {}).get("plugins", {})
    for name in configured:
        other = getattr(apps.get(name), "resource", None) if apps is not None and name in apps.names else None
        if other is not None and other is not parent and hasattr(other, "putChild") and not _ships_stylesheet(other):
            other.putChild(b"styles.css", Data(b"/* this plugin ships no stylesheet */\n", "text/css"))


#: buildbot_wsgi_dashboards 4.3.0's lookup of a menu icon, minified: `function kV(c){for(const a in c){const h=RV[a];
#: if(h!==void 0)return h}}` is given the candidate names ["FaFlask", "flask"] but walks the array's indices ("0",
#: "1"), so it finds no icon whatever the configuration names, and every page of the UI logs
#: "Error in WSGI plugin farm: Could not find icon flask" and shows the plugin's fallback icon.
ICON_LOOKUP = re.compile(r"function (\w+)\((\w+)\)\{for\(const (\w+) in \2\)\{const (\w+)=(\w+)\[\3\];"
                         r"if\(\4!==void 0\)return \4\}\}")


def fixed_scripts(script: str) -> str | None:
    """The plugin's scripts.js with its icon lookup walking the names (`of`) instead of the indices (`in`); None when
    the script has no such lookup (a later plugin, fixed or rewritten: its own script is served unchanged)."""
    found = ICON_LOOKUP.findall(script)
    if len(found) != 1:
        return None
    return ICON_LOOKUP.sub(lambda m: m.group(0).replace(f" {m.group(3)} in {m.group(2)})", f" {m.group(3)} of "
                                                                                          f"{m.group(2)})", 1), script)


def give_scripts(parent: Any) -> None:
    """The plugin's own `scripts.js` with its icon lookup fixed (fixed_scripts), in place of the file, when it has that
    lookup: the menu's "Farm" entry then shows the icon the configuration names (app.dashboards) and no page of the UI
    logs that it could not find it."""
    from twisted.web.static import Data

    static_dir = getattr(parent, "path", None)
    try:
        script = (Path(static_dir) / "scripts.js").read_text(encoding="utf-8") if static_dir else None
    except OSError:
        return
    fixed = fixed_scripts(script) if script is not None else None
    if fixed is not None:
        parent.putChild(b"scripts.js", Data(fixed.encode(), "text/javascript"))
