"""What `mlgo-farm master force` submits, and what its `--wait` follows and reports.

Properties are checked against the master's own description of each force scheduler (read over
REST), so a property the builder does not declare or a value outside its choices or pattern is
one line before anything is submitted; the master checks every value again when it is forced.
`--wait` follows exactly the buildsets this command created and the buildsets their builds
triggered (Buildbot records the triggering build as a buildset's `parent_buildid`), never other
builds that happen to run meanwhile; a request that ended without a build of its own (merged
away as SKIPPED, or cancelled) is reported as such and fails the command.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from farm.errors import FarmError, InputError
from master.rest import RESULTS, BuildResult, MasterAPI


@dataclass(frozen=True)
class Field:
    """One property field of a force form, as Buildbot describes it."""

    name: str
    choices: tuple[str, ...] = ()
    strict: bool = False
    regex: str | None = None

    def problem(self, value: str) -> str | None:
        """Why the master would refuse `value` (None when it accepts it)."""
        if value.startswith("-"):
            return f"{self.name}={value!r}: a value may not start with '-'"
        if self.strict and value not in self.choices:
            return f"{self.name}={value!r} is not one of: {', '.join(self.choices)}"
        if self.regex and not re.match(self.regex, value):
            return f"{self.name}={value!r} does not match {self.regex}"
        return None


def form_fields(description: Mapping[str, Any]) -> dict[str, Field]:
    """The properties a force scheduler accepts: its top-level fields.

    Buildbot's own fields (username, reason, priority, the source stamp) are nested groups, and
    a fixed field takes no value, so neither is a property one can set.
    """
    out: dict[str, Field] = {}
    for f in description.get("all_fields", []):
        if f.get("type") in ("nested", "fixed") or not f.get("fullName"):
            continue
        out[f["fullName"]] = Field(name=f["fullName"], choices=tuple(f.get("choices") or ()),
                                   strict=f.get("type") == "list" and f.get("strict", True),
                                   regex=f.get("regex") if isinstance(f.get("regex"), str) else None)
    return out


def plan(forms: Mapping[str, Mapping[str, Field]], props: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Per builder, the properties it receives; InputError for a property no builder declares or a bad value.

    With several builders a property goes to those that declare it (`-p bench=zlib` reaches the
    regression builder, not the triplet builders) and must be declared by at least one.
    """
    for name, value in props.items():
        declaring = [b for b, fields in forms.items() if name in fields]
        if not declaring:
            known = sorted({n for fields in forms.values() for n in fields})
            raise InputError(f"property {name!r} is not a parameter of {', '.join(forms)} "
                             f"(parameters: {', '.join(known) or 'none'})")
        for b in declaring:
            problem = forms[b][name].problem(value)
            if problem:
                raise InputError(f"{b}: {problem}")
    return {b: {k: v for k, v in props.items() if k in fields} for b, fields in forms.items()}


@dataclass(frozen=True)
class Unbuilt:
    """A build request that completed without a build: merged into another (SKIPPED) or cancelled."""

    builder: str
    buildrequestid: int
    buildsetid: int
    result: str


@dataclass
class Followed:
    builds: list[dict[str, Any]] = field(default_factory=list)
    unbuilt: list[Unbuilt] = field(default_factory=list)
    done: bool = True


def walk(api: MasterAPI, bsids: Iterable[int]) -> Followed:
    """The builds and build-less requests of `bsids` and of every buildset their builds triggered."""
    names = {v: k for k, v in api.builders().items()}
    out = Followed()
    queue, seen = list(bsids), set()
    while queue:
        bsid = queue.pop(0)
        if bsid in seen:
            continue
        seen.add(bsid)
        for br in api.get("buildrequests", buildsetid=bsid)["buildrequests"]:
            builds = api.get("builds", buildrequestid=br["buildrequestid"], order="buildid")["builds"]
            # a build ended RETRY is replaced by a later build of the same request
            builds = [b for i, b in enumerate(builds) if not (b["results"] == 5 and i < len(builds) - 1)]
            if not br["complete"]:  # a build ended RETRY (a lost worker, a master restart): another one comes
                out.done = False
            if not builds:
                if br["complete"]:
                    out.unbuilt.append(Unbuilt(names.get(br["builderid"], str(br["builderid"])),
                                               br["buildrequestid"], bsid, RESULTS.get(br["results"], "unknown")))
                else:
                    out.done = False
            for b in builds:
                out.done &= bool(b["complete"])
                out.builds.append(b)
                queue.extend(c["bsid"] for c in api.get("buildsets", parent_buildid=b["buildid"])["buildsets"])
    return out


class Progress:
    """`--wait`'s running account: one line per step of a followed build as soon as it has finished (build, step,
    result, what the step said), so an hours-long build is not silent until its end."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out
        self.printed: set[int] = set()  # step ids
        self.finished: set[int] = set()  # builds whose steps have all been printed

    def update(self, api: MasterAPI, builds: Iterable[dict[str, Any]]) -> None:
        names: dict[int, str] | None = None
        for b in sorted(builds, key=lambda b: b["buildid"]):
            if b["buildid"] in self.finished:
                continue
            # fetched after `b`: when `b` was complete, so is every step read here
            for st in api.get(f"builds/{b['buildid']}/steps")["steps"]:
                if not st["complete"] or st["stepid"] in self.printed or st.get("hidden"):
                    continue
                self.printed.add(st["stepid"])
                names = names if names is not None else {v: k for k, v in api.builders().items()}
                print(step_line(names.get(b["builderid"], str(b["builderid"])), b["number"], st),
                      file=self.out or sys.stdout, flush=True)
            if b["complete"]:
                self.finished.add(b["buildid"])


def step_line(builder: str, number: int, step: Mapping[str, Any]) -> str:
    """`make-dataset #3 triplets: success (1,234 unique triplets (0 skipped))`: one line whatever the step said."""
    result = RESULTS.get(step["results"], "unknown")
    said = " ".join(str(step.get("state_string") or "").split())
    said = "" if said in ("", step["name"], f"{step['name']} ({result})") else f" ({said[:160]})"
    return f"{builder} #{number} {step['name']}: {result}{said}"


def follow(api: MasterAPI, bsids: Iterable[int], timeout: float, poll: float = 2.0,
           progress: Progress | None = None) -> tuple[list[BuildResult], list[Unbuilt]]:
    """Wait until every followed request has ended (`progress` prints each step as it ends); a FarmError after
    `timeout` seconds."""
    bsids = list(bsids)
    deadline = time.monotonic() + timeout
    while True:
        got = walk(api, bsids)
        if progress is not None:
            progress.update(api, got.builds)
        if got.done:
            names = {v: k for k, v in api.builders().items()}
            builds = sorted(got.builds, key=lambda b: b["buildid"])
            return [api.build_result(b, names) for b in builds], got.unbuilt
        if time.monotonic() > deadline:
            raise FarmError(f"builds still running after {timeout:g}s (see {api.base})")
        time.sleep(poll)


_UNBUILT = {
    "skipped": "SKIPPED: Buildbot merged it into a newer request with the same properties; "
               "that build is not this command's and is not reported here",
    "cancelled": "CANCELLED before it started",
}


def report(api: MasterAPI, builds: list[BuildResult], unbuilt: list[Unbuilt], steps: bool = True) -> int:
    """Print the followed builds (with their steps unless Progress printed them) and build-less requests; 1 if any
    did not succeed or never ran."""
    failed = [r for r in builds if not r.ok]
    for r in builds:
        print(f"{r.builder} #{r.number}: {r.result} ({r.state}) {r.url}")
        for name, res in r.steps if steps else ():
            print(f"    {name}: {res}")
        for key, value in sorted(r.captured.items()):
            print(f"    => {key} = {value}")
    for u in unbuilt:
        print(f"{u.builder}: build request {u.buildrequestid} (buildset {u.buildsetid}) "
              f"{_UNBUILT.get(u.result, u.result.upper() + ' without a build')}")
    for r in failed:
        bad = [n for n, res in r.steps if res not in ("success", "warnings", "skipped")]
        if bad:
            print(f"--- {r.builder} #{r.number}, step {bad[0]} (last lines):", file=sys.stderr)
            print(api.step_log_tail(r.buildid, bad[0]), file=sys.stderr)
    if not builds and not unbuilt:
        raise FarmError("no build ran")
    return 1 if failed or unbuilt else 0
