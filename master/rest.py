"""A small client of the master's REST data API (`/api/v2`): log in, force builds, read results.

Reading needs no login. Every control call (force, stop, cancel, rebuild, pause) does: the client
logs in once at Buildbot's `/auth/login` with HTTP basic authentication and keeps the session
cookie the master answers with (the redirect that comes with it is not followed: it points at
the master's own idea of its URL, which a remote client may not reach).

A client that waits (`master force --wait`) sets `reconnect`: a read that finds the master
unreachable is tried again with growing pauses for up to that many seconds, because the stack's
supervisor restarts a master that died within seconds and Buildbot then retries the builds it
had running; giving up at the first refused connection reported a failure that never happened.
Only reads are repeated: a control call (a force) that may have reached the master is not sent twice.

A read whose answer is cut short (the headers promise a body the connection does not deliver) is
asked again at once, a few times, whatever `reconnect` says: the master answered, so it is up, and
a busy master was seen to drop a `builds/N/steps` body mid-build; failing a wait on it reported a
build that had not failed.
"""

from __future__ import annotations

import base64
import http.client
import http.cookiejar
import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from farm import jsonio
from farm.config import Settings
from farm.errors import FarmError, InputError

log = logging.getLogger(__name__)

#: how many times a read whose answer was cut short is asked again (see the module docstring)
CUT_SHORT_RETRIES = 3
RESULTS = {0: "success", 1: "warnings", 2: "failure", 3: "skipped", 4: "exception", 5: "retry", 6: "cancelled"}


@dataclass(frozen=True)
class BuildResult:
    buildid: int
    builder: str
    number: int
    result: str
    state: str
    url: str
    steps: list[tuple[str, str]]
    #: Properties the build's steps captured from their output (published ids, report paths).
    captured: dict[str, str]

    @property
    def ok(self) -> bool:
        return self.result in ("success", "warnings")


class MasterUnreachable(FarmError):
    """No answer from the master at all (refused, reset, timed out): it may be restarting."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class MasterAPI:
    """JSON over HTTP to one master, for example `http://127.0.0.1:8010/`.

    `user` and `password` are used for control calls only; without them those calls are
    anonymous, which the farm's master refuses with HTTP 403. `password` may be a callable,
    asked only when a control call needs it (reading needs no secret).
    """

    def __init__(self, base_url: str, timeout: float = 30, user: str | None = None,
                 password: str | Callable[[], str] | None = None, reconnect: float = 0) -> None:
        self.base = base_url.rstrip("/") + "/"
        self.timeout = timeout
        #: Seconds a read keeps retrying an unreachable master (0: fail at once); see the module.
        self.reconnect = reconnect
        self.user, self._password = user, password
        self.cookies = http.cookiejar.CookieJar()
        self._opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies), _NoRedirect)
        self.logged_in = False

    @classmethod
    def for_settings(cls, settings: Settings, url: str | None = None, user: str | None = None) -> MasterAPI:
        """A client of the configured master that logs in as `user` (default: master.layout.client_user)."""
        from master.control import url as master_url
        from master.layout import client_password, client_user

        user = client_user(settings, user)
        return cls(url or master_url(settings), user=user, password=lambda: client_password(settings, user))

    def _fetch(self, req: urllib.request.Request) -> bytes:
        """The answer's body; an unreachable master is retried for reads (see `reconnect`)."""
        lost, pause, cut = None, 0.5, 0
        while True:
            try:
                with self._send(req) as r:
                    body = r.read()
            except http.client.IncompleteRead as e:
                cut += 1
                if req.get_method() == "GET" and cut <= CUT_SHORT_RETRIES:
                    continue
                raise MasterUnreachable(f"buildbot master at {self.base} cut its answer short: "
                                        f"{len(e.partial)} of {len(e.partial) + (e.expected or 0)} bytes") from None
            except (MasterUnreachable, http.client.HTTPException, ConnectionError, TimeoutError) as e:
                why = e if isinstance(e, MasterUnreachable) else MasterUnreachable(
                    f"buildbot master at {self.base} is not reachable: {type(e).__name__}: {e}")
                now = time.monotonic()
                if req.get_method() != "GET" or not self.reconnect:
                    raise why from None
                if lost is None:
                    lost = now
                    log.warning("%s; reconnecting for up to %gs", why, self.reconnect)
                if now + pause - lost > self.reconnect:
                    raise MasterUnreachable(f"{why} (still after {now - lost:.0f}s of reconnecting; "
                                            f"[buildbot] client_reconnect = {self.reconnect:g})") from None
                time.sleep(pause)  # back-off between attempts, not synchronisation
                pause = min(2 * pause, 5.0)
                continue
            if lost is not None:
                log.warning("buildbot master at %s answers again after %.0fs", self.base, time.monotonic() - lost)
            return body

    def _send(self, req: urllib.request.Request):
        try:
            return self._opener.open(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            body = e.read().decode(errors="replace")[:300]
            try:
                body = jsonio.loads(body, "")["error"]
                body = body.get("message", body) if isinstance(body, dict) else body
            except (InputError, KeyError, TypeError):
                pass
            hint = ""
            if e.code == 403:
                hint = " (log in: `--user` and MLGO_FARM_BUILDBOT_CLIENT_PASSWORD)" if not self.logged_in else ""
            raise FarmError(f"buildbot {req.full_url}: HTTP {e.code}: {body}{hint}") from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            raise MasterUnreachable(f"buildbot master at {self.base} is not reachable: {reason}") from None

    def _open(self, req: urllib.request.Request) -> Any:
        return jsonio.loads(self._fetch(req) or b"null", f"buildbot {req.full_url}", FarmError)

    def login(self) -> None:
        """Buildbot's /auth/login with HTTP basic authentication; the answer sets the session cookie."""
        if not self.user or self._password is None:
            raise FarmError("no web login configured: pass --user and set MLGO_FARM_BUILDBOT_CLIENT_PASSWORD")
        password = self._password() if callable(self._password) else self._password
        token = base64.b64encode(f"{self.user}:{password}".encode()).decode()
        req = urllib.request.Request(f"{self.base}auth/login", headers={"Authorization": f"Basic {token}"})
        try:
            self._opener.open(req, timeout=self.timeout).close()
        except urllib.error.HTTPError as e:
            e.close()
            if e.code == 401:
                raise FarmError(f"buildbot master at {self.base} refused the login of {self.user!r}") from None
            if e.code not in (301, 302, 303, 307):
                raise FarmError(f"buildbot {req.full_url}: HTTP {e.code} on login") from None
        except (urllib.error.URLError, OSError) as e:
            raise FarmError(f"buildbot master at {self.base} is not reachable: {getattr(e, 'reason', e)}") from None
        if not any(c.name.startswith("TWISTED_") for c in self.cookies):
            raise FarmError(f"buildbot master at {self.base} gave no session on login (is web auth configured?)")
        self.logged_in = True

    def get(self, path: str, **params: Any) -> Any:
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        return self._open(urllib.request.Request(f"{self.base}api/v2/{path}{query}"))

    def raw(self, path: str) -> str:
        try:
            return self._fetch(urllib.request.Request(f"{self.base}api/v2/{path}")).decode(errors="replace")
        except FarmError:
            return ""

    def rpc(self, path: str, method: str, **params: Any) -> Any:
        """A control call (JSON-RPC POST), logged in first when credentials were given."""
        if self.user and not self.logged_in:
            self.login()
        body = json.dumps({"jsonrpc": "2.0", "method": method, "id": 1, "params": params}).encode()
        req = urllib.request.Request(f"{self.base}api/v2/{path}", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        reply = self._open(req)
        if isinstance(reply, dict) and reply.get("error"):
            raise FarmError(f"buildbot {path} {method}: {reply['error'].get('message', reply['error'])}")
        return reply["result"]

    def builders(self) -> dict[str, int]:
        return {b["name"]: b["builderid"] for b in self.get("builders")["builders"]}

    def connected_workers(self) -> list[str]:
        return [w["name"] for w in self.get("workers")["workers"] if w["connected_to"]]

    def last_buildid(self) -> int:
        builds = self.get("builds", order="-buildid", limit=1)["builds"]
        return builds[0]["buildid"] if builds else 0

    def force_form(self, builder: str) -> dict[str, Any]:
        """The master's own description of `builder`'s force scheduler (its fields, choices, patterns)."""
        if builder not in self.builders():
            raise FarmError(f"builder {builder!r} is not configured on {self.base} (no worker with its tags?)")
        found = self.get(f"forceschedulers/force-{builder}")["forceschedulers"]
        if not found:
            raise FarmError(f"builder {builder!r} has no force scheduler on {self.base}")
        return found[0]

    def force(self, builder: str, properties: dict[str, str] | None = None, reason: str = "forced") -> int:
        """Start `builder` through its force scheduler (the master checks every value); returns the buildset id."""
        if builder not in self.builders():
            raise FarmError(f"builder {builder!r} is not configured on {self.base} (no worker with its tags?)")
        bsid, _ = self.rpc(f"forceschedulers/force-{builder}", "force", owner=self.user or "mlgo-farm",
                           reason=reason, **(properties or {}))
        return int(bsid)

    def pending(self) -> int:
        """Buildsets not yet complete (forced, scheduled or triggered)."""
        return len(self.get("buildsets", complete="false")["buildsets"])

    def wait_idle(self, timeout: float, poll: float = 2.0) -> None:
        """Block until no buildset is incomplete; a FarmError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while self.pending():
            if time.monotonic() > deadline:
                raise FarmError(f"builds still running after {timeout:g}s (see {self.base})")
            time.sleep(poll)

    def wait_workers(self, names: list[str], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not set(names) <= set(self.connected_workers()):
            if time.monotonic() > deadline:
                raise FarmError(f"worker(s) {', '.join(names)} did not connect to {self.base} within {timeout:g}s")
            time.sleep(0.25)

    def build_result(self, b: dict[str, Any], names: dict[int, str] | None = None) -> BuildResult:
        """A build as the REST API describes it, with its steps and captured properties."""
        names = names if names is not None else {v: k for k, v in self.builders().items()}
        steps = [(s["name"], RESULTS.get(s["results"], "running") if s["complete"] else "running")
                 for s in self.get(f"builds/{b['buildid']}/steps")["steps"]]
        return BuildResult(
            buildid=b["buildid"], builder=names.get(b["builderid"], str(b["builderid"])), number=b["number"],
            result=RESULTS.get(b["results"], "running") if b["complete"] else "running",
            state=b["state_string"], steps=steps,
            url=f"{self.base}#/builders/{b['builderid']}/builds/{b['number']}",
            captured=self.captured(b["buildid"]),
        )

    def builds_after(self, buildid: int) -> list[BuildResult]:
        """Finished and running builds with an id above `buildid`, oldest first."""
        names = {v: k for k, v in self.builders().items()}
        return [self.build_result(b, names) for b in self.get("builds", buildid__gt=buildid, order="buildid")["builds"]]

    def captured(self, buildid: int) -> dict[str, str]:
        props = self.get(f"builds/{buildid}/properties")["properties"]
        return {k: v[0] for p in props for k, v in p.items() if v[1] == "SetPropertyFromCommand Step"}

    def step_log_tail(self, buildid: int, step: str, lines: int = 15) -> str:
        text = self.raw(f"builds/{buildid}/steps/{urllib.parse.quote(step)}/logs/stdio/raw")
        return "\n".join(text.splitlines()[-lines:])
