"""A small client of the master's REST data API (`/api/v2`): force builds, wait, read results."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from farm.errors import FarmError

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


class MasterAPI:
    """JSON over HTTP to one master, for example `http://127.0.0.1:8010/`."""

    def __init__(self, base_url: str, timeout: float = 30) -> None:
        self.base = base_url.rstrip("/") + "/"
        self.timeout = timeout

    def _open(self, req: urllib.request.Request) -> Any:
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            body = e.read().decode(errors="replace")[:300]
            raise FarmError(f"buildbot {req.full_url}: HTTP {e.code}: {body}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise FarmError(f"buildbot master at {self.base} is not reachable: {reason}") from None

    def get(self, path: str, **params: Any) -> Any:
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        return self._open(urllib.request.Request(f"{self.base}api/v2/{path}{query}"))

    def raw(self, path: str) -> str:
        try:
            with urllib.request.urlopen(f"{self.base}api/v2/{path}", timeout=self.timeout) as r:
                return r.read().decode(errors="replace")
        except (urllib.error.URLError, OSError):
            return ""

    def rpc(self, path: str, method: str, **params: Any) -> Any:
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

    def force(self, builder: str, properties: dict[str, str] | None = None, reason: str = "forced") -> int:
        """Start `builder` through its force scheduler; returns the buildset id."""
        if builder not in self.builders():
            raise FarmError(f"builder {builder!r} is not configured on {self.base} (no worker with its tags?)")
        bsid, _ = self.rpc(f"forceschedulers/force-{builder}", "force", owner="mlgo-farm", reason=reason,
                           **(properties or {}))
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

    def builds_after(self, buildid: int) -> list[BuildResult]:
        """Finished and running builds with an id above `buildid`, oldest first."""
        names = {v: k for k, v in self.builders().items()}
        out = []
        for b in self.get("builds", buildid__gt=buildid, order="buildid")["builds"]:
            steps = [(s["name"], RESULTS.get(s["results"], "running") if s["complete"] else "running")
                     for s in self.get(f"builds/{b['buildid']}/steps")["steps"]]
            out.append(BuildResult(
                buildid=b["buildid"], builder=names.get(b["builderid"], str(b["builderid"])), number=b["number"],
                result=RESULTS.get(b["results"], "running") if b["complete"] else "running",
                state=b["state_string"], steps=steps,
                url=f"{self.base}#/builders/{b['builderid']}/builds/{b['number']}",
                captured=self.captured(b["buildid"]),
            ))
        return out

    def captured(self, buildid: int) -> dict[str, str]:
        props = self.get(f"builds/{buildid}/properties")["properties"]
        return {k: v[0] for p in props for k, v in p.items() if v[1] == "SetPropertyFromCommand Step"}

    def step_log_tail(self, buildid: int, step: str, lines: int = 15) -> str:
        text = self.raw(f"builds/{buildid}/steps/{urllib.parse.quote(step)}/logs/stdio/raw")
        return "\n".join(text.splitlines()[-lines:])
