"""How the dashboard's pages write numbers and nested records: once, here, for every page.

A float from a manifest (an MRR of 0.41666666666666669, a loss) is shown to four decimals, a
count with thousands separators, a missing value as "-"; nothing is printed to 17 digits. A
nested record (a corpus lineage, a trainer's parameters) is shown as a definition list, never as
a Python or JSON dict: `items` gives its (name, value) pairs, nested ones flattened to dotted names.
"""

from __future__ import annotations

import math
from typing import Any

#: Decimals of a number that is not a whole count.
DECIMALS = 4


def number(value: Any, signed: bool = False) -> str:
    """A count as a count (`412`, `+12`), any other number with four decimals (`0.8750`, `-0.0250`), a missing
    one as `-`; a value that is not a number as its text."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if not math.isfinite(value):
        return str(value)
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):+,}" if signed else f"{int(value):,}"
    return f"{value:+.{DECIMALS}f}" if signed else f"{value:.{DECIMALS}f}"


def ratio(value: Any) -> str:
    """A ratio always with its four decimals (`1.0000`, never `1`: a ratio that happens to be whole is still a
    ratio), a missing one as `-`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "-" if value is None else str(value)
    return f"{value:.{DECIMALS}f}"


def value(v: Any) -> str:
    """One value of a record as text: numbers by `number`, lists joined, booleans as yes/no."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)) or v is None:
        return number(v)
    if isinstance(v, (list, tuple)):
        return ", ".join(value(x) for x in v) or "-"
    return str(v)


def items(record: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A record's (name, text) pairs for a definition list; nested records as dotted names (`trainer.epochs`)."""
    if not isinstance(record, dict):
        return [] if record in (None, "") else [(prefix.rstrip(".") or "value", value(record))]
    out: list[tuple[str, str]] = []
    for k, v in record.items():
        if isinstance(v, dict) and v:
            out += items(v, f"{prefix}{k}.")
        elif v not in (None, "", [], {}):
            out.append((f"{prefix}{k}", value(v)))
    return out
