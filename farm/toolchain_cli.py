"""`mlgo-farm toolchain`: show which LLVM the farm uses."""

from __future__ import annotations

import argparse
import json

from farm.toolchain import Toolchain


def _info(args: argparse.Namespace) -> int:
    tc = Toolchain.from_settings()
    tc.check("clang", "opt", "llc", "llvm-ir2vec", "llvm-size")
    print(json.dumps(tc.describe(), indent=2))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("toolchain", help="show the LLVM toolchain in use (version, commit)")
    p.set_defaults(func=_info)
