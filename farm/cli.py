"""`mlgo-farm`: the one entry point shared by builder steps, Celery tasks and people.

Each role of the farm contributes its verbs through `register(subparsers)` in its own
`cli.py`; heavy libraries (torch, pykeen, buildbot) are imported only when a verb runs.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import NoReturn

from farm.errors import FarmError

ROLES = ("farm.toolchain_cli", "workers.cli", "vocabgen.cli", "regression.cli", "master.cli")


class FarmParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, like the farm's other errors (verbs' parsers inherit it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = FarmParser(
        prog="mlgo-farm",
        description="Build-farm vocabulary and regression service for LLVM's MLGO.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for role in ROLES:
        importlib.import_module(role).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args) or 0)
    except FarmError as e:
        print(f"mlgo-farm: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("mlgo-farm: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
