"""JSON from files and objects the farm did not write itself, as one-line errors.

`json.loads` fails in three ways on hostile or damaged input: a syntax error, bytes that are not
UTF-8, and nesting deep enough to exhaust the interpreter's recursion limit (a 100,000-deep array
is a few hundred kilobytes). All three become an InputError naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from farm.errors import InputError


def loads(data: bytes | str, where: str) -> Any:
    """Parse `data`; `where` names its origin in the error."""
    try:
        return json.loads(data)
    except json.JSONDecodeError as e:
        raise InputError(f"{where}: invalid JSON: {e}") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{where}: not UTF-8 text: {e.reason} at byte {e.start}") from None
    except RecursionError:
        raise InputError(f"{where}: JSON nested too deeply to read") from None


def load_file(path: Path, what: str = "") -> Any:
    """Read and parse a JSON file; a missing or unreadable file is an InputError too."""
    path = Path(path)
    where = f"{what} {path}".strip()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{where} does not exist") from None
    except OSError as e:
        raise InputError(f"cannot read {where}: {e.strerror}") from None
    return loads(data, str(path))
