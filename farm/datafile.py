"""Data that is data: a TOML file of one table per name, each checked against its keys by one loader.

The farm keeps facts that are not code (which modules a package ships, how often a package's numbers were looked
at) in TOML files beside the code that reads them. Like LNT's `schemas/*.yaml`, a file is checked when it is read,
and a wrong entry is one line naming the file, the table and the key, never a traceback deep in whoever used it.

`loads` and `read` are the farm's one TOML reader (the configuration, the regression rules and these data files go
through them), so every way hostile text fails is handled here once: a syntax error, bytes that are not UTF-8,
arrays nested deep enough to exhaust the interpreter's recursion limit (tomllib recurses), an integer of more
digits than the interpreter converts (a plain ValueError, not a TOMLDecodeError), and an integer TOML itself does
not allow: the format's integers are 64-bit, tomllib returns any size, and `float(10**400)` raises OverflowError
wherever a setting is a number.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from farm.errors import InputError
from farm.jsonio import digits, find, read_file, too_long

#: key -> (what it must be, as isinstance's second argument; whether a table must have it; what it is, for the error)
Schema = Mapping[str, tuple[type | tuple[type, ...], bool, str]]


#: TOML's integers: "arbitrary 64-bit signed integers" (toml.io); a larger one "must" be an error.
_INT_MIN, _INT_MAX = -(2 ** 63), 2 ** 63 - 1


def loads(text: bytes | str, where: str) -> dict[str, Any]:
    """Parse TOML `text`; `where` names its origin in the one-line InputError raised for anything unreadable."""
    try:
        data = tomllib.loads(text.decode("utf-8") if isinstance(text, bytes) else text)
    except UnicodeDecodeError as e:
        raise InputError(f"{where}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{where}: {e}") from None
    except RecursionError:
        raise InputError(f"{where}: TOML nested too deeply to read") from None
    except ValueError as e:  # "Exceeds the limit (4300 digits) for integer string conversion: ..."
        raise InputError(f"{where}: {too_long(e)}") from None
    _integers_in_range(data, where)
    return data


def _integers_in_range(data: dict[str, Any], where: str) -> None:
    """InputError naming the first integer outside TOML's 64 bits."""
    found = find(data, lambda v: isinstance(v, int) and not isinstance(v, bool) and not _INT_MIN <= v <= _INT_MAX)
    if found is not None:
        raise InputError(f"{where}: {found[0]}: {digits(found[1])}, beyond TOML's 64 bits")


def read(path: Path, what: str = "") -> dict[str, Any]:
    """The parsed TOML file (`what` it is leads the message); one line if it cannot be read or parsed, or is not a
    regular file (`--rules /dev/zero` read until MemoryError: farm/jsonio.py `read_file`)."""
    where = f"{what} {path}".strip()
    return loads(read_file(Path(path), where), where)


def tables(data: Mapping[str, Any], schema: Schema, where: str, within: str = "") -> dict[str, dict[str, Any]]:
    """Every top-level table of `data`, checked against `schema`: InputError naming the first bad table and key
    (`within`: the table `data` is, for sub-tables such as `[split.train]`)."""
    out: dict[str, dict[str, Any]] = {}
    for key_name, entry in data.items():
        name = f"{within}.{key_name}" if within else key_name
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
        out[key_name] = entry
    return out
