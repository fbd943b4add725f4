"""Checks of the registry (master/registry.py), run when the master loads its configuration.

Kept apart from the declarations so that the registry reads as data: names, references between
builders, cycles, notify modes, cron fields, parameters (every one constrained: choices or one
pattern, never a reserved name), fan-outs, loops (what a loop passes to the builds it starts is a
parameter of theirs) and the step output declarations. The first inconsistency is one InputError
line naming the builder.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from farm.errors import InputError
from master.registry import (
    _NAME,
    _PROP,
    MAX_SHARDS,
    NOTIFY_MODES,
    RESERVED_PROPS,
    SHARD,
    Builder,
    by_name,
    captured,
    downstream,
    loop_trials,
)
from master.stepspec import BUILD_URL, Param, check_output_spec, placeholders


def parse_cron(spec: str) -> dict[str, int | str]:
    """Cron fields as keyword arguments of Buildbot's Nightly scheduler (which counts Monday as 0)."""
    fields = spec.split()
    if len(fields) != 5:
        raise InputError(f"nightly schedule {spec!r}: need 5 cron fields")
    keys = ("minute", "hour", "dayOfMonth", "month", "dayOfWeek")
    limits = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
    out: dict[str, int | str] = {}
    for key, f, (lo, hi) in zip(keys, fields, limits, strict=True):
        if f == "*":
            out[key] = "*"
            continue
        if not f.isdigit() or not lo <= int(f) <= hi:
            raise InputError(f"nightly schedule {spec!r}: field {key} must be '*' or {lo}..{hi}")
        out[key] = int(f)
    if isinstance(out["dayOfWeek"], int):
        out["dayOfWeek"] = (out["dayOfWeek"] - 1) % 7  # cron Sunday 0/7 -> Buildbot 6
    return out


def validate(registry: Iterable[Builder], verbs: Mapping[str, object] | None = None) -> None:
    """Raise InputError on the first inconsistency: names, references, cycles, modes, properties."""
    builders = list(registry)
    seen: set[str] = set()
    for b in builders:
        if not _NAME.match(b.name):
            raise InputError(f"builder name {b.name!r}: use lower-case letters, digits and '-'")
        if b.name in seen:
            raise InputError(f"builder {b.name!r} is declared twice")
        seen.add(b.name)
        if not b.steps:
            raise InputError(f"builder {b.name!r} has no steps")
        step_names = [s.name for s in b.steps]
        if len(set(step_names)) != len(step_names):
            raise InputError(f"builder {b.name!r}: step names must be unique")
        bad = set(b.notify) - set(NOTIFY_MODES)
        if bad:
            raise InputError(f"builder {b.name!r}: unknown notify mode(s) {', '.join(sorted(bad))}")
        if b.nightly:
            parse_cron(b.nightly)
        if b.fan_out:
            _check_fan_out(b, {x.name for x in builders})
        if len({p.name for p in b.parameters}) != len(b.parameters):
            raise InputError(f"builder {b.name!r}: parameter names must be unique")
        for p in b.parameters:
            _check_param(b.name, p)
        if verbs is not None:
            for s in b.steps:
                if not s.args or not isinstance(s.args[0], str) or s.args[0] not in verbs:
                    raise InputError(f"builder {b.name!r} step {s.name!r}: {s.args[:1]} is not an mlgo-farm verb")
    names = by_name(builders)
    for b in builders:
        if b.loop:
            _check_loop(b, names)
    for b in builders:
        for up in b.after:
            if up not in names:
                raise InputError(f"builder {b.name!r} runs after unknown builder {up!r}")
        known = set(b.defaults()) | {BUILD_URL} | {p for up in b.after for p in names[up].exports}
        known |= {"revision"} if b.follows_llvm else set()  # its nightly source stamp's commit (Buildbot sets it)
        fanned = set(b.fan_out.steps) if b.fan_out else set()
        for s in b.steps:
            missing = placeholders(s.args) - known - ({SHARD} if s.name in fanned else set())
            if missing:
                raise InputError(f"builder {b.name!r} step {s.name!r} uses undeclared properties {sorted(missing)}")
            problem = check_output_spec(s)
            if problem:
                raise InputError(f"builder {b.name!r} {problem}")
        missing = placeholders(b.exports.values()) - set(b.defaults()) - set(captured(b))
        if missing:
            raise InputError(f"builder {b.name!r} exports undeclared properties {sorted(missing)}")
    _check_acyclic(names)


def _check_fan_out(b: Builder, builder_names: set[str]) -> None:
    """The fan-out names leading steps that pass the shard on, and nothing else does; N has a sane range."""
    f, where = b.fan_out, f"builder {b.name!r} fan-out"
    assert f is not None
    if not f.steps or tuple(s.name for s in b.steps[:len(f.steps)]) != f.steps:
        raise InputError(f"{where}: steps {list(f.steps)} must name the builder's first steps, in order")
    for s in b.steps:
        if (SHARD in placeholders(s.args)) != (s.name in f.steps):
            raise InputError(f"{where}: step {s.name!r} " + ("must pass {shard} on (IfSet)" if s.name in f.steps
                                                             else "uses {shard} but runs once, not per shard"))
        if s.name in f.steps and s.capture:
            raise InputError(f"{where}: step {s.name!r} runs in shard builds; what it captures would not reach "
                             f"this build")
    if not 1 <= f.default <= f.most <= MAX_SHARDS:
        raise InputError(f"{where}: need 1 <= default ({f.default}) <= most ({f.most}) <= {MAX_SHARDS}")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", f.output):
        raise InputError(f"{where}: output {f.output!r} must be a plain directory name")
    clash = {f.TRIGGER, *(s.name for s in f.derived())} & {s.name for s in b.steps}
    if clash:
        raise InputError(f"{where}: step name(s) {sorted(clash)} are the fan-out's own")
    if f"{b.name}-shard" in builder_names:
        raise InputError(f"{where}: its shard builder {b.name}-shard clashes with a declared builder")


def _check_loop(b: Builder, names: Mapping[str, Builder]) -> None:
    """The loop's steps are the builder's, its trial builders exist and are started by it alone, and every field it
    passes them is a constrained parameter of theirs (and all their parameters are passed)."""
    f, where = b.loop, f"builder {b.name!r} loop"
    assert f is not None
    steps = {s.name: s for s in b.steps}
    own = [n for n in (f.ask, f.finish, f.alone) if n is not None]
    if len(set(own)) != len(own) or set(own) != set(steps):
        raise InputError(f"{where}: its ask, finish and alone steps must be the builder's steps, each once "
                         f"(has {sorted(steps)})")
    if not steps[f.ask].answers:
        raise InputError(f"{where}: step {f.ask!r} must read its verb's answer (give it a summary or a capture)")
    if not 1 <= f.most <= 64 or (f.log2_of is not None and not _PROP.match(f.log2_of)):
        raise InputError(f"{where}: need 1 <= most ({f.most}) <= 64, and log2_of a field name")
    if not f.trials or len({k for k, _ in f.trials}) != len(f.trials) or not f.passes:
        raise InputError(f"{where}: give each kind of trial (runs_on) one builder, and the fields it passes")
    if b.fan_out or b.after:
        raise InputError(f"{where}: a loop neither fans out nor runs after another builder")
    for kind, name in f.trials:
        t = names.get(name)
        if t is None:
            raise InputError(f"{where}: trial builder {name!r} ({kind}) is not declared")
        if t is b or t.loop or t.fan_out or t.nightly or t.after or t.on_change or downstream(names.values(), name):
            raise InputError(f"{where}: trial builder {name!r} must be started by the loop only (no schedule, no "
                             f"loop or fan-out of its own, nothing after it)")
        if loop_trials(names.values()).get(name) != b.name or \
                sum(name in x.loop.builders for x in names.values() if x.loop) != 1:
            raise InputError(f"{where}: trial builder {name!r} is driven by another loop too")
        params = {p.name for p in t.params}
        if set(f.passes) != params:
            raise InputError(f"{where}: it passes {sorted(f.passes)} but trial builder {name!r} takes "
                             f"{sorted(params)}: each passed field must be one of its (constrained) parameters")


def _check_param(builder: str, p: Param) -> None:
    where = f"builder {builder!r} parameter {p.name!r}"
    if not _PROP.match(p.name) or p.name in RESERVED_PROPS:
        raise InputError(f"{where}: use lower-case letters, digits and '_', and not a name Buildbot reserves")
    if bool(p.choices) == bool(p.regex):
        raise InputError(f"{where}: give exactly one of choices or regex (every parameter is constrained)")
    if p.choices:
        if len(set(p.choices)) != len(p.choices) or any(not c or c.startswith("-") for c in p.choices):
            raise InputError(f"{where}: choices must be unique, not empty and not start with '-'")
    else:
        try:
            re.compile(p.pattern)
        except re.error as e:
            raise InputError(f"{where}: bad regex: {e}") from None
    if not p.accepts(p.default):
        raise InputError(f"{where}: default {p.default!r} is not an accepted value")


def _check_acyclic(names: Mapping[str, Builder]) -> None:
    state: dict[str, int] = {}

    def visit(n: str, path: tuple[str, ...]) -> None:
        if state.get(n) == 2:
            return
        if state.get(n) == 1:
            raise InputError(f"builders trigger each other in a cycle: {' -> '.join((*path, n))}")
        state[n] = 1
        for d in downstream(names.values(), n):
            visit(d, (*path, n))
        state[n] = 2

    for n in names:
        visit(n, ())
