"""What one builder step is: an `mlgo-farm` command line whose arguments may name build properties,
and what Buildbot shows of its result (a summary and links read from the lines the verb prints).

Declared here, below the registry, so that the registry's builders and the fan-out's derived
steps (FanOut in master/registry.py) are built from the same few types; `render_args` is the
one place a property's value enters a command line, and `StepOutput` the one place a verb's
output becomes properties, a summary and links (master/factories.py's FarmStep feeds it).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from farm.config import DASHBOARD_PATH
from farm.errors import InputError

_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
#: Set by the farm while it renders a step's command line: the Buildbot URL of the running build.
BUILD_URL = "build_url"
#: Where the master's web server mounts the farm's dashboard (master/dashboard: the `farm` WSGI dashboard).
DASHBOARD = DASHBOARD_PATH


@dataclass(frozen=True)
class IfSet:
    """Arguments included only when build property `prop` is set and not empty."""

    prop: str
    args: tuple[str, ...]


Arg = str | IfSet


@dataclass(frozen=True)
class Summary:
    """What a finished step says in Buildbot's UI instead of its name ("1,183 unique triplets (3 skipped)").

    `template` (str.format) is filled from the named groups of the last stdout line `pattern`
    matches (a group of digits is a number, so `{n:,}` works) and from `counts`: (name, regex)
    pairs that count the stdout lines the regex matches. Several summaries of one step are
    alternatives (a shard build prints another line than a whole one); the last line matched wins.
    """

    pattern: str
    template: str
    counts: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Link:
    """A page of the farm's dashboard the step links (Buildbot's addURL): `path` under the dashboard,
    filled from the named groups of the last stdout line `pattern` matches (`vocab/{kind}/{version}/`)."""

    name: str
    pattern: str
    path: str


@dataclass(frozen=True)
class Step:
    """One `mlgo-farm` invocation: `args` starts with the verb."""

    name: str
    args: tuple[Arg, ...]
    #: Seconds without output before Buildbot kills the step.
    timeout: int = 3600
    #: Properties set from the step's output: (property, regex with one group); the last match wins.
    capture: tuple[tuple[str, str], ...] = ()
    #: What the finished step says (alternatives; see Summary); none: its name.
    summary: tuple[Summary, ...] = ()
    #: Dashboard pages the step links once it has printed what they need.
    links: tuple[Link, ...] = ()
    #: Exit codes whose failure the verb reports by mail itself (a regression: the farm's alert, sent on
    #: transitions only); Buildbot's own failure mail stays silent for a build that failed with one of them.
    mails_itself: tuple[int, ...] = ()


def _fields(template: str) -> set[str]:
    return {f.split(".")[0].split("[")[0] for _, f, _, _ in string.Formatter().parse(template) if f}


def check_output_spec(step: Step) -> str | None:
    """What is wrong with the step's summary and link declarations (None: nothing), checked at configuration
    time so a master never starts with a summary that cannot be filled."""
    where = f"step {step.name!r}"
    try:
        for s in step.summary:
            groups = set(re.compile(s.pattern).groupindex)
            counts = {name for name, rx in s.counts if re.compile(rx)}
            missing = _fields(s.template) - groups - counts
            if missing:
                return f"{where}: summary {s.template!r} uses {sorted(missing)}, not named groups of its pattern"
        for link in step.links:
            missing = _fields(link.path) - set(re.compile(link.pattern).groupindex)
            if missing:
                return f"{where}: link {link.name!r} uses {sorted(missing)}, not named groups of its pattern"
            if link.path.startswith("/") or ".." in link.path or "://" in link.path:
                return f"{where}: link {link.name!r}: {link.path!r} must be a path under the dashboard"
    except (re.error, ValueError) as e:
        return f"{where}: {e}"
    return None


def _value(text: str) -> str | int:
    return int(text) if text.isascii() and text.isdigit() else text


class StepOutput:
    """A step's stdout, read line by line as it arrives: only the last match of each pattern and the counts
    are kept (an LLVM build prints hundreds of thousands of lines), then properties, summary and links."""

    def __init__(self, step: Step) -> None:
        self.step = step
        self._capture = [(prop, re.compile(rx)) for prop, rx in step.capture]
        self._summary = [(s, re.compile(s.pattern), [(n, re.compile(rx)) for n, rx in s.counts]) for s in step.summary]
        self._links = [(link, re.compile(link.pattern)) for link in step.links]
        self.captured: dict[str, str] = {}
        self._said: tuple[int, dict] | None = None
        self._counts: dict[tuple[int, str], int] = {}
        self._linked: dict[str, str] = {}

    def line(self, line: str) -> None:
        stripped = line.strip()
        for prop, rx in self._capture:
            m = rx.search(stripped)
            if m:
                self.captured[prop] = m.group(1)
        for i, (_, rx, counts) in enumerate(self._summary):
            m = rx.search(line)
            if m:
                self._said = (i, {k: _value(v) for k, v in m.groupdict().items() if v is not None})
            for name, crx in counts:
                if crx.search(line):
                    self._counts[(i, name)] = self._counts.get((i, name), 0) + 1
        for link, rx in self._links:
            m = rx.search(line)
            if m:
                self._linked[link.name] = link.path.format(**m.groupdict(default=""))

    def feed(self, text: str) -> StepOutput:
        for line in text.splitlines():
            self.line(line)
        return self

    def properties(self, rc: int) -> dict[str, str]:
        """What the step captured, only when it succeeded (a failed step's ids name nothing published)."""
        return dict(self.captured) if rc == 0 else {}

    def summary(self) -> str | None:
        if self._said is None:
            return None
        i, values = self._said
        s = self.step.summary[i]
        counts = {name: self._counts.get((i, name), 0) for name, _ in s.counts}
        try:
            return s.template.format(**{**counts, **values})
        except (KeyError, ValueError, IndexError):
            return None  # a group the line left empty: the step's name says more than half a sentence

    def links(self) -> list[tuple[str, str]]:
        """(name, path under the dashboard) of each declared link whose line was printed, in declaration order."""
        return [(link.name, self._linked[link.name]) for link in self.step.links if link.name in self._linked]


@dataclass(frozen=True)
class Param:
    """A build property with a default, settable in the force form, always constrained.

    Exactly one of `choices` (the form offers these and nothing else: a ChoiceStringParameter)
    or `regex` (free text the whole of which must match; a StringParameter with Buildbot's
    `regex=`). Either way a value never starts with `-`, so it cannot turn into an option of
    the verb it is passed to.
    """

    name: str
    default: str
    help: str = ""
    choices: tuple[str, ...] = ()
    regex: str = ""

    @property
    def pattern(self) -> str:
        """The pattern Buildbot checks with `re.match`: anchored at both ends, no leading '-'."""
        return rf"(?!-)(?:{self.regex})\Z"

    def accepts(self, value: str) -> bool:
        if self.choices:
            return value in self.choices
        return re.match(self.pattern, value) is not None


def render_args(args: Iterable[Arg], lookup: Callable[[str], object]) -> list[str]:
    """Substitute `{prop}` placeholders; drop `IfSet` groups whose property is unset or empty.

    An argument that would begin with a property's value may not begin with '-': whatever set
    the property (force form, trigger, nightly default), its value stays a value and never
    becomes an option of the verb (`corpus_source=--help` is refused here, not parsed).
    """
    out: list[str] = []

    def value(m: re.Match) -> str:
        name = m.group(1)
        v = lookup(name)
        if v is None or v == "":
            raise InputError(f"build property {name!r} is not set")
        v = str(v)
        if m.start() == 0 and v.startswith("-"):
            raise InputError(f"build property {name}={v!r}: a value may not start with '-'")
        return v

    for a in args:
        if isinstance(a, IfSet):
            if lookup(a.prop) not in (None, ""):
                out.extend(render_args(a.args, lookup))
        else:
            out.append(_PLACEHOLDER.sub(value, a))
    return out


def placeholders(args: Iterable[Arg]) -> set[str]:
    """Property names the arguments use."""
    names: set[str] = set()
    for a in args:
        if isinstance(a, IfSet):
            names |= {a.prop} | placeholders(a.args)
        else:
            names |= set(_PLACEHOLDER.findall(a))
    return names
