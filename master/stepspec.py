"""What one builder step is: an `mlgo-farm` command line whose arguments may name build properties,
and what Buildbot shows of its result (a summary and links filled from the fields of the verb's answer).

Declared here, below the registry, so that the registry's builders and the fan-out's derived
steps (FanOut in master/registry.py) are built from the same few types; `command_args` is the
one place a property's value enters a command line, and `StepOutput` the one place a verb's
answer becomes properties, a summary and links (master/factories.py's FarmStep feeds it). A step
that reads its verb's result runs the verb with `--json` (farm/answer.py): one JSON object on stdout,
read as fields, never the sentences people read.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from farm import jsonio
from farm.answer import OPTION as JSON_OPTION
from farm.config import DASHBOARD_PATH
from farm.errors import InputError

_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
#: Set by the farm while it renders a step's command line: the Buildbot URL of the running build.
BUILD_URL = "build_url"
#: Set by the force form when a value differs from its default (master/schedulers.py): a what-if build,
#: which mails nobody on the list and keeps its regression runs apart from its builder's history.
WHAT_IF = "what_if"
#: How every `mlgo-farm` verb's one error line starts (farm/cli.py).
ERROR_PREFIX = "mlgo-farm: error: "
#: The longest cause a failed step shows (its summary, the mail's subject and first line); the log has the rest.
CAUSE_CHARS = 300
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

    `template` (str.format) is filled from the fields of the verb's answer: `{unique:,}` a number,
    `{awaiting[0]}` an item, `{created:published|already published}` a word chosen by a boolean field.
    Several summaries of one step are alternatives, tried in order (a shard build answers other fields
    than a whole one): the first whose fields the answer has, none of them null or empty, wins.
    """

    template: str


@dataclass(frozen=True)
class Link:
    """A page of the farm's dashboard the step links (Buildbot's addURL): `path` under the dashboard,
    filled from the fields of the verb's answer (`vocab/{kind}/{version}/`); none when a field is missing."""

    name: str
    path: str


@dataclass(frozen=True)
class Step:
    """One `mlgo-farm` invocation: `args` starts with the verb."""

    name: str
    args: tuple[Arg, ...]
    #: Seconds without output before Buildbot kills the step.
    timeout: int = 3600
    #: Properties set from the verb's answer: (property, field); a field that is missing or null sets nothing.
    capture: tuple[tuple[str, str], ...] = ()
    #: What the finished step says (alternatives; see Summary); none: its name.
    summary: tuple[Summary, ...] = ()
    #: Dashboard pages the step links once it has printed what they need.
    links: tuple[Link, ...] = ()
    #: Exit codes whose failure the verb reports by mail itself (a regression: the farm's alert, sent on
    #: transitions only); Buildbot's own failure mail stays silent for a build that failed with one of them.
    mails_itself: tuple[int, ...] = ()

    @property
    def answers(self) -> bool:
        """Whether the master reads the verb's result (then it runs with --json)."""
        return bool(self.capture or self.summary or self.links)


_FIELD = re.compile(r"[a-z_][a-z0-9_]*")


def _fields(template: str) -> set[str]:
    """The answer's fields a template names (`{a[0]:,}` names `a`)."""
    return {re.split(r"[.\[]", f)[0] for _, f, _, _ in string.Formatter().parse(template) if f is not None}


def check_output_spec(step: Step) -> str | None:
    """What is wrong with the step's capture, summary and link declarations (None: nothing), checked at
    configuration time so a master never starts with a declaration that cannot be filled."""
    where = f"step {step.name!r}"
    try:
        named = [(f"capture of {prop!r}", {field}) for prop, field in step.capture]
        named += [(f"summary {s.template!r}", _fields(s.template)) for s in step.summary]
        named += [(f"link {link.name!r}", _fields(link.path)) for link in step.links]
        for what, fields in named:
            bad = sorted(f for f in fields if not _FIELD.fullmatch(f))
            if bad or (not fields and not what.startswith("link")):
                return f"{where}: {what} names {bad or 'no field'}: fields of the verb's answer are lower-case names"
        for link in step.links:
            if link.path.startswith("/") or ".." in link.path or "://" in link.path:
                return f"{where}: link {link.name!r}: {link.path!r} must be a path under the dashboard"
    except ValueError as e:
        return f"{where}: {e}"
    return None


class _Filler(string.Formatter):
    """str.format over an answer's fields: a missing, null or empty field fails the template (KeyError), and a
    boolean field takes a `yes|no` format spec."""

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        value, key = super().get_field(field_name, args, kwargs)
        if value is None or value == "" or value == [] or value == {}:
            raise KeyError(field_name)
        return value, key

    def format_field(self, value: Any, format_spec: str) -> str:
        if isinstance(value, bool) and "|" in format_spec:
            yes, _, no = format_spec.partition("|")
            return yes if value else no
        return super().format_field(value, format_spec)


def fill(template: str, fields: Mapping[str, Any]) -> str | None:
    """`template` filled from `fields`, None when it names a field they lack (or hold empty)."""
    try:
        return _Filler().vformat(template, (), fields)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return None


def command_args(step: Step, lookup: Callable[[str], object]) -> list[str]:
    """The step's arguments after `mlgo-farm`: rendered (render_args), and --json when the master reads the answer."""
    return [*render_args(step.args, lookup), *((JSON_OPTION,) if step.answers else ())]


class StepOutput:
    """A step's stdout, read line by line as it arrives: only the verb's answer is kept (the last line that is a JSON
    object; under --json the verb prints that and nothing else), then properties, summary and links from its fields."""

    def __init__(self, step: Step) -> None:
        self.step = step
        self.answer: dict[str, Any] = {}
        #: the last line printed, and the last on stderr (under --json the verb's sentence): a failure's cause
        self._last = self._last_err = ""

    def line(self, line: str) -> None:
        stripped = line.strip()
        if stripped:
            self._last = stripped
        if not stripped.startswith("{"):
            return
        try:
            found = jsonio.loads(stripped, "a line of the step's output")
        except InputError:  # not JSON (too deep, too long a number too): a line the verb did not print as its answer
            return
        if isinstance(found, dict):
            self.answer = found

    def feed(self, text: str) -> StepOutput:
        for line in text.splitlines():
            self.line(line)
        return self

    def properties(self, rc: int) -> dict[str, Any]:
        """What the step captured, only when it succeeded (a failed step's ids name nothing published)."""
        result = self.result()
        if rc != 0:
            return {}
        return {prop: result[field] for prop, field in self.step.capture if result.get(field) not in (None, "")}

    def result(self) -> dict[str, Any]:
        """The answer's fields when the verb answered with a result (not its failure: `error`, farm/answer.py)."""
        return {} if "error" in self.answer else self.answer

    def summary(self) -> str | None:
        return next((said for s in self.step.summary if (said := fill(s.template, self.result())) is not None), None)

    def err_line(self, line: str) -> None:
        if line.strip():
            self._last_err = line.strip()

    def cause(self, error: str = "") -> str:
        """Why a failed step failed, in one line: the verb's error line (`error`: it prints exactly one, on
        stderr; under --json its answer says it too), else, for a result that fails the build (a size check that
        held a policy back, exit 12), the sentence that says it (under --json the last line on stderr, before
        the object), else its summary, else the last line it printed."""
        said = self._last_err if self.answer and "error" not in self.answer else ""
        line = (error.removeprefix(ERROR_PREFIX) or str(self.answer.get("error") or "") or said or self.summary()
                or self._last)
        return line if len(line) <= CAUSE_CHARS else line[:CAUSE_CHARS - 3] + "..."

    def links(self) -> list[tuple[str, str]]:
        """(name, path under the dashboard) of each declared link the answer fills, in declaration order."""
        result = self.result()
        return [(link.name, path) for link in self.step.links if result and (path := fill(link.path, result))]


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
    #: Whether a value other than the default makes a forced build a what-if (master/schedulers.py); False for a
    #: parameter that only names what to work on (an alert's number), whose build is as real as the default's.
    what_if: bool = True

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
