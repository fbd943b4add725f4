"""Data that is data: a TOML file of one table per name, each checked against its keys by one loader.

The farm keeps facts that are not code (which modules a package ships, how often a package's numbers were looked
at) in TOML files beside the code that reads them. Like LNT's `schemas/*.yaml`, a file is checked when it is read,
and a wrong entry is one line naming the file, the table and the key, never a traceback deep in whoever used it.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from farm.errors import InputError

#: key -> (what it must be, as isinstance's second argument; whether a table must have it; what it is, for the error)
Schema = Mapping[str, tuple[type | tuple[type, ...], bool, str]]


def read(path: Path) -> dict[str, Any]:
    """The parsed TOML file; one line if it cannot be read or parsed."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{path}: {e}") from None


def tables(data: Mapping[str, Any], schema: Schema, where: str) -> dict[str, dict[str, Any]]:
    """Every top-level table of `data`, checked against `schema`: InputError naming the first bad table and key."""
    out: dict[str, dict[str, Any]] = {}
    for name, entry in data.items():
        if not isinstance(entry, dict):
            raise InputError(f"{where}: [{name}] must be a table")
        unknown = sorted(set(entry) - set(schema))
        if unknown:
            raise InputError(f"{where}: [{name}] unknown key {unknown[0]!r} (keys: {', '.join(schema)})")
        for key, (kind, required, what) in schema.items():
            if key not in entry:
                if required:
                    raise InputError(f"{where}: [{name}] needs {key!r} ({what})")
                continue
            value = entry[key]
            if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
                raise InputError(f"{where}: [{name}] {key} must be {what}, not {value!r}")
        out[name] = entry
    return out
