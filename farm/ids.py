"""Record numbers (an alert's `#N`), read the one way the CLI and the dashboard's URLs both read them.

`int()` takes far more than a record number: '١٢' (Arabic-Indic digits, or any other script's), '+12', ' 12 ',
'1_2', and numbers no database integer holds (SQLite raises OverflowError past 2**63 - 1, which was a 46-line
traceback on the CLI and an anonymous 500 on a page). A record number is ASCII digits only, from 1 to MAX_ID;
anything else is one line (InputError: exit 2 on the CLI, a 404 on the dashboard, master/dashboard/app.py).
"""

from __future__ import annotations

from farm.errors import InputError

#: The largest id a history database holds (SQLite's INTEGER, PostgreSQL's BIGINT).
MAX_ID = 2 ** 63 - 1
#: Its digits: no id is longer.
MAX_DIGITS = len(str(MAX_ID))
#: The most characters of a refused id a message repeats.
_SHOWN = 40


def record_id(text: str, what: str = "alert") -> int:
    """`text` as a record number, or an InputError naming it (cut to a few dozen characters)."""
    if not (0 < len(text) <= MAX_DIGITS and text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_ID):
        shown = text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
        raise InputError(f"{what} {shown!r}: not a number from 1 to {MAX_ID} (ASCII digits 0-9)")
    return int(text)
