"""The held-out table: what an inliner policy does, package by package, on code it never saw.

It judges what a package ships: the files it links (workers/linked.py: its shared libraries and programs, linked
by ld.lld as its build links them), where workers/data/shipped.toml declares them, since for C++ a sum of objects
counts every template copy the linker keeps once (issue 45); the sum of the shipped objects stays beside, labelled.
Without declared files it judges the modules a package ships (workers/shipped.py: the libraries and programs its
binary packages install, what a user's `-Oz` build compiles). Every module, tests and examples included, is shown
beside: a corpus is
often mostly test code (cjson: 2 library files, 27 test and fuzzing files), and a table over all of it judges a
policy on code nobody installs. Its two bars are the size check's (regression/policygate.py): the geomean, and the
worst package against the gate's cap, so that one package's growth is never hidden by another's gain. A package
with a failed compile has no ratio, and a table with one fails (`check_complete`): the modules that did compile
are not the package.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from farm.errors import FarmError
from farm.numeric import geomean

if TYPE_CHECKING:
    from policytrain.corpora import Package, Splits
    from policytrain.mlp import Mlp


class Measuring(Protocol):
    """What a table needs of a training run (policytrain/trainer.py `Trainer`, which imports this module)."""

    splits: Splits

    def package_ratios(self, packages: Sequence[Package], policy: Mlp | None, model: str | None = None) -> list[dict]:
        ...


def _objects(row: dict) -> dict:
    """The sum of objects beside a judged figure: the shipped modules', else all of them."""
    return row["shipped"] if row.get("shipped") is not None else row


def judged(row: dict) -> dict:
    """What a held-out table judges of a package row: the files it links (what its binary packages install), else
    its shipped modules, else all of them when it declares neither."""
    return row["linked"] if row.get("linked") is not None else _objects(row)


def chosen(row: dict) -> dict:
    """What a checkpoint is chosen on: the files the package links where it declares them, else all its modules (the
    most decisions)."""
    return row["linked"] if row.get("linked") is not None else row


def package_row(p: Package, heuristic: Sequence[int | None], policy: Sequence[int | None],
                why: Sequence[str | None] = (), linked: tuple[dict, dict] | None = None) -> dict:
    """A package's row: `.text` summed over the modules both builds compiled, policy / heuristic, over all its
    modules (`ratio`: what validation chooses on, the most decisions) and over the modules it ships (`shipped`:
    what a held-out table judges; None when the package declares no split, so all of them count).

    A package with a failed compile (`failed`, and `errors` saying why when the job said) has no ratio (None): the
    sums of the modules left are another package's numbers, and a policy whose every compile fails once showed as
    1.0000x over none of them."""
    sizes = list(zip((u.name for u in p.units), heuristic, policy, strict=True))
    both = [(n, a, b) for n, a, b in sizes if a is not None and b is not None]
    failed = [n for n, a, b in sizes if a is None or b is None]
    reasons = dict(zip((u.name for u in p.units), why, strict=False))
    row = {"package": p.name, **_summed(both, failed), "failed": failed, "shipped": None}
    if failed:
        row["errors"] = {n: reasons.get(n) or "the compile failed" for n in failed}
    if p.shipped is not None:
        row["shipped"] = _summed([x for x in both if x[0] in p.shipped], failed)
    if linked is not None:
        row["linked"] = _linked(p, *linked, row)
    return row


def _linked(p: Package, heuristic: dict, policy: dict, row: dict) -> dict:
    """A package's linked files (policytrain/fanout.py `link_job` results of both builds): `.text` summed over them,
    policy / heuristic, and per file; no ratio when a build did not link (the row then fails, naming why)."""
    error = heuristic.get("link_error") or policy.get("link_error")
    modules = len(p.shipped) if p.shipped is not None else len(p.units)
    if error or heuristic.get("linked") is None or policy.get("linked") is None:
        row["failed"] = [*row["failed"], "(link)"]
        row["errors"] = {**row.get("errors", {}), "(link)": error or "the link failed"}
        return {"modules": modules, "heuristic": 0, "policy": 0, "ratio": None, "outputs": {}}
    h, s = heuristic["linked"], policy["linked"]
    ht, pt = sum(h.values()), sum(s.values())
    return {"modules": modules, "heuristic": ht, "policy": pt, "ratio": None if row["failed"] else pt / ht,
            "outputs": {name: [h[name], s.get(name)] for name in h}}


def _summed(sizes: Sequence[tuple[str, int, int]], failed: Sequence[str] = ()) -> dict:
    """Modules, `.text` summed per build, and policy / heuristic (None after a failed compile), of (module,
    heuristic, policy) sizes."""
    ht, pt = sum(a for _, a, _ in sizes), sum(b for _, _, b in sizes)
    return {"modules": len(sizes), "heuristic": ht, "policy": pt,
            "ratio": None if failed else pt / ht if ht else 1.0}


def heldout_table(trainer: Measuring, policy: Mlp | None, model: str | None = None, desc: str = "policy") -> dict:
    """The evaluation packages' ratios and their geomean: what a policy does on code it never saw. `geomean` and
    `worst` judge the shipped modules (workers/shipped.py: what a user's build of the package compiles); `all`
    the same over every module, tests and examples included. Both are None while a package has no ratio. Its progress
    (farm/progress.py) is a line per package under `desc` (the verb)."""
    from farm.progress import steps

    rows: list[dict] = []
    packages = trainer.splits.evaluation
    with steps(len(packages), f"{desc}: held-out packages measured", unit="pkg") as bar:  # a line per package
        for p in packages:
            rows += trainer.package_ratios([p], policy, model)
            bar.update()
    shipped, every = [judged(r)["ratio"] for r in rows], [r["ratio"] for r in rows]
    objects = [_objects(r)["ratio"] for r in rows]
    if any(r is None for r in every + shipped):
        return {"packages": rows, "geomean": None, "worst": None, "all": {"geomean": None, "worst": None},
                "objects": {"geomean": None, "worst": None}}
    return {"packages": rows, "geomean": geomean(shipped), "worst": max(shipped, default=float("nan")),
            "all": {"geomean": geomean(every), "worst": max(every, default=float("nan"))},
            "objects": {"geomean": geomean(objects), "worst": max(objects, default=float("nan"))}}


def check_complete(table: dict) -> None:
    """One line (FarmError) when a package of the table has no ratio, naming the first failure: a table that says
    less than it shows is a failed table, whatever the numbers of the modules that did compile."""
    bad = [r for r in table["packages"] if r["failed"]]
    if not bad:
        return
    first = bad[0]["failed"][0]
    why = (bad[0].get("errors") or {}).get(first) or "the compile failed"
    failed = sum(len(r["failed"]) for r in bad)
    total = sum(len(r["failed"]) + r["modules"] for r in bad)
    raise FarmError(f"the held-out table has no ratio for {', '.join(r['package'] for r in bad)}: {failed} of "
                    f"{total} modules failed to compile (first, {first}: {why})")


def _ratio(x: float | None) -> str:
    return f"{'-':>8}" if x is None else f"{x:>8.4f}"


def format_table(table: dict, cap: float | None = None) -> str:
    """The held-out table, ending with both of the size check's bars: the geomean, and the worst package (with
    how many are above `cap`, the gate's `1 + policy_size_tolerance`), so one package's growth is never hidden.
    The bars judge what the package ships: its linked files' `.text` where it declares them (`heuristic` and
    `policy` are then the linked bytes), else its shipped modules'. Beside them, labelled, the sum of the shipped
    objects (`objects`: what a per-object number would have said) and all modules, tests and examples included.
    A package with failed compiles or links shows no ratio, and then neither do the bars."""
    rows = table["packages"]
    lines = [f"{'package':<16} {'shipped':>7} {'heuristic':>10} {'policy':>10} {'ratio':>8} {'objects':>8}   "
             f"{'all':>7} {'ratio':>8}"]
    for r in rows:
        j = judged(r)
        note = ""
        if r["failed"]:
            links = "(link)" in r["failed"]
            n = len(r["failed"]) - links
            note = (f"  ({n} of {n + r['modules']} failed to compile: no ratio)" if n else
                    f"  (the link failed: {(r.get('errors') or {}).get('(link)', 'no ratio')})")
        elif r.get("linked") is None:
            note = "  (no shipped list: all modules)" if r.get("shipped") is None else "  (not linked: sum of objects)"
        lines.append(f"{r['package']:<16} {j['modules']:>7} {j['heuristic']:>10,} {j['policy']:>10,} "
                     f"{_ratio(j['ratio'])} {_ratio(_objects(r)['ratio'])}   {r['modules']:>7} {_ratio(r['ratio'])}"
                     + note)
    every = table.get("all") or {}
    missing = sum(1 for r in rows if judged(r)["ratio"] is None or r["ratio"] is None)
    if missing:
        lines.append(f"{'geomean':<16} {'':>7} {'':>10} {'':>10} {_ratio(None)} {'':>8}   {'':>7} {_ratio(None)}  "
                     f"({missing} of {len(rows)} packages without a ratio)")
        return "\n".join(lines)
    objects = table.get("objects") or {}
    lines.append(f"{'geomean':<16} {'':>7} {'':>10} {'':>10} {table['geomean']:>8.4f} "
                 f"{_ratio(objects.get('geomean'))}   {'':>7} {every.get('geomean', float('nan')):>8.4f}")
    if rows:
        worst = max(rows, key=lambda r: judged(r)["ratio"])
        n = sum(judged(r)["ratio"] > cap for r in rows) if cap is not None else 0
        above = "" if cap is None else f"  ({n} of {len(rows)} above {cap:.4f}x)"
        lines.append(f"{'worst':<16} {worst['package']:>29} {judged(worst)['ratio']:>8.4f}{above}")
    return "\n".join(lines)
