"""JSON from files and objects the farm did not write itself, as one-line errors.

`json.loads` fails in four ways on hostile or damaged input: a syntax error, bytes that are not
UTF-8, nesting deep enough to exhaust the interpreter's recursion limit (a 100,000-deep array
is a few hundred kilobytes), and an integer of more digits than the interpreter converts (4,300:
a plain ValueError, not a JSONDecodeError). All four become one line naming the file, as an
InputError or the caller's own FarmError class (a corrupt object in the store is a StoreError).
Every reader of JSON the farm did not write itself goes through `loads`, so a new way to fail
is handled here once. A fifth way is not the parser's: JSON integers are unbounded, and one of 400
digits parses, then raises OverflowError wherever it is used as a number; `find` and `beyond_float`
let a reader that computes with what it read refuse one, as one line too.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from farm.errors import FarmError, InputError


def loads(data: bytes | str, where: str, error: type[FarmError] = InputError) -> Any:
    """Parse `data`; `where` names its origin in the `error` raised."""
    try:
        return json.loads(data)
    except json.JSONDecodeError as e:
        raise error(f"{where}: invalid JSON: {e}") from None
    except UnicodeDecodeError as e:
        raise error(f"{where}: not UTF-8 text: {e.reason} at byte {e.start}") from None
    except RecursionError:
        raise error(f"{where}: JSON nested too deeply to read") from None
    except ValueError as e:  # "Exceeds the limit (4300 digits) for integer string conversion: ..."
        raise error(f"{where}: invalid JSON: {too_long(e)}") from None


def find(data: Any, bad: Callable[[Any], bool]) -> tuple[str, Any] | None:
    """(where, value) of the first value in `data` that is `bad`, its place written `a.b[2]`; None when none is.
    Walked without recursion: what a parser accepted may nest deeper than a recursive walk can follow."""
    todo: list[tuple[str, Any]] = [("", data)]
    while todo:
        name, value = todo.pop()
        if isinstance(value, dict):
            todo.extend((f"{name}.{k}" if name else str(k), v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            todo.extend((f"{name}[{i}]", v) for i, v in reversed(list(enumerate(value))))
        elif bad(value):
            return name, value
    return None


def beyond_float(value: Any) -> bool:
    """An integer no float holds (`float()`, `math.isfinite` and every comparison with a float raise on it)."""
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    try:
        float(value)
    except OverflowError:
        return True
    return False


def digits(value: int) -> str:
    """An integer too long to print in a message, as how long it is (`an integer of 401 digits`)."""
    return f"an integer of {len(str(abs(value)))} digits"


def dumps(data: Any) -> str:
    """The farm's JSON for files and objects it writes: indented, keys sorted (stable diffs), one final newline."""
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def too_long(e: ValueError) -> str:
    """Python's message about an over-long integer, without its advice to the programmer (set_int_max_str_digits)."""
    return " ".join(str(e).split(";")[0].split())


def read_file(path: Path, where: str) -> bytes:
    """The bytes of the regular file `path` (`where` names it in the one-line InputError for anything else).

    A device, FIFO or directory is refused before it is opened: `/dev/zero` never ends (the read grew until the
    interpreter's MemoryError), a FIFO blocks until someone writes, and neither is a file anyone could check."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"{where} does not exist") from None
    except OSError as e:
        raise InputError(f"cannot read {where}: {e.strerror}") from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
        raise InputError(f"{where} is {kind}, not a regular file")
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise InputError(f"cannot read {where}: {e.strerror}") from None


def load_file(path: Path, what: str = "") -> Any:
    """Read and parse a JSON file; a missing, unreadable or non-regular file is an InputError too."""
    path = Path(path)
    return loads(read_file(path, f"{what} {path}".strip()), str(path))
