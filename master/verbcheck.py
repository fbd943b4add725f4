"""Check that every registry step is a command line the real `mlgo-farm` parser accepts."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator, Sequence

from master.registry import REGISTRY, Builder, by_name, captured, placeholders, render_args

#: Value used for properties without a default (ids captured from an upstream builder).
SAMPLE = "0123456789abcdef"


def variants(builder: Builder, registry: Sequence[Builder]) -> Iterator[dict[str, str]]:
    """Property sets a step can see: its defaults only, and every property set."""
    names = by_name(registry)
    base = builder.defaults()
    yield dict(base)
    full = {k: v or SAMPLE for k, v in base.items()}
    for up in builder.after:
        if up in names:
            full.update({p: SAMPLE for p in captured(names[up])})
    for s in builder.steps:
        full.update({p: full.get(p) or SAMPLE for p in placeholders(s.args)})
    yield full


def step_argvs(builder: Builder, registry: Sequence[Builder] = REGISTRY) -> Iterator[tuple[str, list[str]]]:
    for props in variants(builder, registry):
        for s in builder.steps:
            yield s.name, render_args(s.args, props.get)


def check_registry(registry: Sequence[Builder] = REGISTRY) -> list[str]:
    """Problems found (empty when every step parses); also runs the registry's own validation."""
    from farm.cli import build_parser
    from farm.errors import FarmError
    from master.registry import validate

    parser = build_parser()
    verbs = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    try:
        validate(registry, verbs)
    except FarmError as e:
        return [str(e)]
    problems = []
    for b in registry:
        for step, argv in step_argvs(b, registry):
            err = io.StringIO()
            try:
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                    parser.parse_args(argv)
            except SystemExit:
                last = (err.getvalue().strip().splitlines() or ["rejected"])[-1]
                problems.append(f"{b.name}/{step}: `mlgo-farm {' '.join(argv)}`: {last}")
    return problems
