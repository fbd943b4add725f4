"""What one builder step is: an `mlgo-farm` command line whose arguments may name build properties.

Declared here, below the registry, so that the registry's builders and the fan-out's derived
steps (FanOut in master/registry.py) are built from the same few types; `render_args` is the
one place a property's value enters a command line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from farm.errors import InputError

_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


@dataclass(frozen=True)
class IfSet:
    """Arguments included only when build property `prop` is set and not empty."""

    prop: str
    args: tuple[str, ...]


Arg = str | IfSet


@dataclass(frozen=True)
class Step:
    """One `mlgo-farm` invocation: `args` starts with the verb."""

    name: str
    args: tuple[Arg, ...]
    #: Seconds without output before Buildbot kills the step.
    timeout: int = 3600
    #: Properties set from the step's output: (property, regex with one group); the last match wins.
    capture: tuple[tuple[str, str], ...] = ()


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
