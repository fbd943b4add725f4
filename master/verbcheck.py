"""Check that every registry step is a command line the real `mlgo-farm` parser accepts."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator, Sequence

from master.registry import REGISTRY, Builder, by_name, placeholders, render_args

#: Value used for properties without a default (ids captured from an upstream builder).
SAMPLE = "0123456789abcdef"


def variants(builder: Builder, registry: Sequence[Builder]) -> Iterator[dict[str, str]]:
    """Property sets a step can see: its defaults, each choice of each parameter, every property set."""
    names = by_name(registry)
    base = builder.defaults()
    yield dict(base)
    for p in builder.params:
        for choice in p.choices:
            if choice != p.default:
                yield {**base, p.name: choice}
    full = {k: v or SAMPLE for k, v in base.items()}
    for up in builder.after:
        if up in names:
            full.update({p: render_args([v], lambda _: SAMPLE)[0] for p, v in names[up].exports.items()})
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
    try:
        validate(registry)
    except FarmError as e:
        return [str(e)]
    problems: list[str] = []
    for b in registry:
        for step, argv in step_argvs(b, registry):
            err = io.StringIO()
            try:
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                    parser.parse_args(argv)
            except SystemExit:
                last = (err.getvalue().strip().splitlines() or ["rejected"])[-1]
                msg = f"{b.name}/{step}: `mlgo-farm {' '.join(argv)}`: {last}"
                if msg not in problems:
                    problems.append(msg)
    return problems
