"""Check that every registry step is a command line the real `mlgo-farm` parser accepts."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator, Sequence

from master.registry import REGISTRY, SHARD, SHARD_RUN, Builder, Step, by_name
from master.stepspec import JSON_OPTION, placeholders, render_args

#: Value used for properties without a default (ids captured from an upstream builder).
SAMPLE = "0123456789abcdef"
#: Values of the properties a fan-out's trigger sets, as it sets them.
SAMPLES = {SHARD: "1/2", SHARD_RUN: "triplets-ir-b1-0123abcd"}


def all_steps(builder: Builder) -> tuple[Step, ...]:
    """Its declared steps and, for a fan-out, the steps derived for shard builds and the merge."""
    return (*builder.steps, *(builder.fan_out.derived() if builder.fan_out else ()))


def variants(builder: Builder, registry: Sequence[Builder]) -> Iterator[dict[str, str]]:
    """Property sets a step can see: its defaults, each choice of each parameter (and, for a fan-out,
    each of those in a shard build), every property set."""
    names = by_name(registry)
    base = builder.defaults()
    chosen = [dict(base)] + [{**base, p.name: c} for p in builder.parameters for c in p.choices if c != p.default]
    for props in chosen:
        yield props
        if builder.fan_out:
            yield {**props, **SAMPLES}
    full = {k: v or SAMPLE for k, v in base.items()}
    for up in builder.after:
        if up in names:
            full.update({p: render_args([v], lambda _: SAMPLE)[0] for p, v in names[up].exports.items()})
    for s in all_steps(builder):
        full.update({p: full.get(p) or SAMPLES.get(p, SAMPLE) for p in placeholders(s.args)})
    yield full


def step_argvs(builder: Builder, registry: Sequence[Builder] = REGISTRY) -> Iterator[tuple[str, list[str]]]:
    for props in variants(builder, registry):
        # a fan-out's derived steps run only once its trigger has set the run id
        for s in all_steps(builder) if SHARD_RUN in props else builder.steps:
            yield s.name, render_args(s.args, props.get)


def check_registry(registry: Sequence[Builder] = REGISTRY) -> list[str]:
    """Problems found (empty when every step parses); also runs the registry's own validation."""
    from farm.cli import build_parser
    from farm.errors import FarmError
    from master.registrycheck import validate

    parser = build_parser()
    try:
        validate(registry)
    except FarmError as e:
        return [str(e)]
    problems: list[str] = []
    for b in registry:
        answers = {s.name for s in all_steps(b) if s.answers}  # they run with --json (master/stepspec.py)
        for step, argv in step_argvs(b, registry):
            argv = [*argv, JSON_OPTION] if step in answers else argv
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
