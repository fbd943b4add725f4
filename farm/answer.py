"""What a verb found, said twice from one object: sentences for people, `--json` fields for machines.

A verb that a builder step runs returns an `Answer` instead of printing: its `fields` are the facts
(ids, counts, paths, the verdict), and `say` turns those same fields into the lines people have
always read. `farm/cli.py` emits it (`emit`): the lines without `--json`; with `--json`, one JSON
object on stdout and nothing else. The master reads the fields (master/outputs.py declares which),
never the sentences, so rewording a sentence cannot break a build's properties.

Under `--json` everything else a verb or its child processes would print on stdout (ninja's
progress, apt-get's) goes to stderr for the run of the verb (`json_stdout`), so stdout holds the one
object whatever the verb runs; a failure is one object too (`failure`), with the same exit code as
without `--json` and its kind.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

#: The option, and the namespace attribute it sets (not `json`: `vocab list --json` prints a list, its own way).
OPTION, DEST = "--json", "answer_json"


@dataclass(frozen=True)
class Answer:
    """A verb's result: `fields` (JSON-able facts), `say(fields)` the lines people read, the exit code."""

    fields: Mapping[str, Any]
    say: Callable[[Mapping[str, Any]], str]
    exit_code: int = 0

    def text(self) -> str:
        return self.say(self.fields)

    def as_json(self) -> dict[str, Any]:
        return {**self.fields, "exit_code": self.exit_code}


def json_option() -> argparse.ArgumentParser:
    """The parent parser of every verb that answers: `--json` (declared here once)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument(OPTION, dest=DEST, action="store_true",
                   help="print the result as one JSON object on stdout (what the master reads); other output "
                        "goes to stderr")
    return p


def wants_json(argv: Sequence[str]) -> bool:
    """Whether a command line asks for JSON, read before (or without) parsing it, so that a usage error
    answers in JSON too; arguments after `--` belong to another program."""
    args = list(argv)
    return OPTION in (args[:args.index("--")] if "--" in args else args)


def write(obj: Mapping[str, Any], out: TextIO) -> None:
    """One object, one line (a Buildbot log observer reads stdout line by line)."""
    out.write(json.dumps(obj, sort_keys=True, default=str) + "\n")
    out.flush()


def emit(answer: Answer, as_json: bool, out: TextIO | None = None) -> int:
    """Print the answer the way it was asked for; returns its exit code. Under --json the sentences still go to
    stderr, so a builder's log reads as it always did, with the object on stdout beside it."""
    out = sys.stdout if out is None else out
    text = answer.text()
    if text and not text.endswith("\n"):
        text += "\n"
    if as_json:
        sys.stderr.write(text)
        write(answer.as_json(), out)
    else:
        out.write(text)
    return answer.exit_code


#: What each exit code means, for the `error_kind` of a failure's object (farm/errors.py and the verbs' verdicts).
KINDS = {1: "failed", 2: "input", 3: "tool", 4: "store", 5: "validation", 6: "nothing_published", 10: "regression",
         11: "not_identical", 12: "size_check", 130: "interrupted", 143: "terminated", 141: "broken_pipe"}


def failure(message: str, code: int) -> dict[str, Any]:
    """The object a failed verb prints under --json: the one-line message, its exit code and what kind it is."""
    return {"error": message, "exit_code": code, "error_kind": KINDS.get(code, "failed")}


def _fd(stream: TextIO) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError, AttributeError):  # an in-process caller's StringIO or pytest's capture
        return None


@contextlib.contextmanager
def json_stdout() -> Iterator[TextIO]:
    """For the run of a verb under --json: its stdout, Python's and its children's (fd 1), goes to stderr;
    yields the real stdout, where the one object goes."""
    sys.stdout.flush()
    out, err = _fd(sys.stdout), _fd(sys.stderr)
    if out is None or err is None:
        real = sys.stdout
        with contextlib.redirect_stdout(sys.stderr):
            yield real
        return
    saved = os.dup(out)
    os.dup2(err, out)
    try:
        with open(os.dup(saved), "w", closefd=True) as real, contextlib.redirect_stdout(sys.stderr):
            yield real
    finally:
        sys.stdout.flush()
        os.dup2(saved, out)
        os.close(saved)
