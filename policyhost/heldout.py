"""The held-out table: what an inliner policy does, package by package, on code it never saw.

It judges the modules a package ships (workers/shipped.py: the libraries and programs its binary packages install,
what a user's `-Oz` build compiles) and shows every module, tests and examples included, beside them: a corpus is
often mostly test code (cjson: 2 library files, 27 test and fuzzing files), and a table over all of it judges a
policy on code nobody installs. Its two bars are the size check's (regression/policygate.py): the geomean, and the
worst package against the gate's cap, so that one package's growth is never hidden by another's gain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from policyhost.improve import geomean

if TYPE_CHECKING:
    from policyhost.mlp import Mlp
    from policyhost.trainer import Trainer


def judged(row: dict) -> dict:
    """What a held-out table judges of a package row: its shipped modules, or all of them when it declares none."""
    return row["shipped"] if row.get("shipped") is not None else row


def heldout_table(trainer: Trainer, policy: Mlp | None, model: str | None = None) -> dict:
    """The evaluation packages' ratios and their geomean: what a policy does on code it never saw. `geomean` and
    `worst` judge the shipped modules (workers/shipped.py: what a user's build of the package compiles); `all`
    the same over every module, tests and examples included."""
    rows = trainer.package_ratios(trainer.splits.evaluation, policy, model)
    shipped, every = [judged(r)["ratio"] for r in rows], [r["ratio"] for r in rows]
    return {"packages": rows, "geomean": geomean(shipped), "worst": max(shipped, default=float("nan")),
            "all": {"geomean": geomean(every), "worst": max(every, default=float("nan"))}}


def format_table(table: dict, cap: float | None = None) -> str:
    """The held-out table, ending with both of the size check's bars: the geomean, and the worst package (with
    how many are above `cap`, the gate's `1 + policy_size_tolerance`), so one package's growth is never hidden.
    The bars judge the shipped modules; all modules, tests and examples included, are the columns beside them."""
    rows = table["packages"]
    lines = [f"{'package':<16} {'shipped':>7} {'heuristic':>10} {'policy':>10} {'ratio':>8}   {'all':>7} {'ratio':>8}"]
    for r in rows:
        j = judged(r)
        lines.append(f"{r['package']:<16} {j['modules']:>7} {j['heuristic']:>10,} {j['policy']:>10,} "
                     f"{j['ratio']:>8.4f}   {r['modules']:>7} {r['ratio']:>8.4f}"
                     + (f"  ({len(r['failed'])} failed)" if r["failed"] else "")
                     + ("  (no shipped list: all modules)" if r.get("shipped") is None else ""))
    every = table.get("all") or {}
    lines.append(f"{'geomean':<16} {'':>7} {'':>10} {'':>10} {table['geomean']:>8.4f}   {'':>7} "
                 f"{every.get('geomean', float('nan')):>8.4f}")
    if rows:
        worst = max(rows, key=lambda r: judged(r)["ratio"])
        n = sum(judged(r)["ratio"] > cap for r in rows) if cap is not None else 0
        above = "" if cap is None else f"  ({n} of {len(rows)} above {cap:.4f}x)"
        lines.append(f"{'worst':<16} {worst['package']:>29} {judged(worst)['ratio']:>8.4f}{above}")
    return "\n".join(lines)
