"""`mlgo-farm`: the one entry point shared by builder steps, Celery tasks and people.

Each role of the farm contributes its verbs through `register(subparsers)` in its own
`cli.py`; heavy libraries (torch, pykeen, buildbot) are imported only when a verb runs.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import NoReturn, TextIO

from farm import answer
from farm.errors import FarmError, Terminated

ROLES = ("farm.toolchain_cli", "farm.store_cli", "workers.cli", "vocabgen.cli", "policyhost.cli", "policytrain.cli",
         "regression.cli", "master.cli")


def _no_master() -> set[str]:
    return set()


#: The names of the builders the master registers, for verbs of other roles that take a builder name
#: (`regress history --builder`). master/cli.py sets it when it adds its verbs: no other role imports master/
#: (tests/test_layout.py), and the registry is imported only when a verb asks.
registered_builders: Callable[[], set[str]] = _no_master


class UsageError(SystemExit):
    """argparse's exit 2 for a usage error, carrying its line (a command line with --json answers it as JSON)."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message


class FarmParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, like the farm's other errors (verbs' parsers inherit it)."""

    def error(self, message: str) -> NoReturn:
        line = f"{self.prog}: error: {message} (see {self.prog} --help)"
        self._print_message(line + "\n", sys.stderr)
        raise UsageError(line)


def _number(kind: type, test: Callable[[float], bool], expect: str) -> Callable[[str], int | float]:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {expect}") from None
        if not (math.isfinite(value) and test(value)):
            raise argparse.ArgumentTypeError(f"{text!r} is not {expect}")
        return value

    parse.__name__ = expect  # argparse names the type in its messages
    return parse


#: Argument types for counts, timeouts and fractions: `-j 0`, `--timeout nan` or a negative
#: timeout are usage errors, not a hang or a pool of no workers.
positive_int = _number(int, lambda v: v > 0, "a positive integer")
nonnegative_int = _number(int, lambda v: v >= 0, "an integer >= 0")
positive_float = _number(float, lambda v: v > 0, "a positive number")
fraction = _number(float, lambda v: 0 < v < 1, "a number between 0 and 1 (exclusive)")


def record_id(text: str) -> int:
    """An alert's number as an argument: ASCII digits within a database integer (farm/ids.py), else a usage error."""
    from farm import ids
    from farm.errors import InputError

    try:
        return ids.record_id(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def _on_sigterm_unwind() -> Callable[[], None]:
    """Turn SIGTERM into Terminated while a verb runs (only where no one else handles it); returns the undo."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        return lambda: None
    signal.signal(signal.SIGTERM, _terminate)
    return lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL)


def version_text(prog: str = "mlgo-farm") -> str:
    """`--version`: the farm's version from its installed package metadata (one source: pyproject.toml), then the
    LLVM it drives (the configured bin directory), or why that LLVM cannot be used: two lines, always exit 0."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        farm = version("mlgo-farm")
    except PackageNotFoundError:
        farm = "unknown (the package is not installed)"
    try:
        from farm.toolchain import Toolchain

        tc = Toolchain.from_settings()
        llvm = f"LLVM {tc.version} ({tc.bin_dir})"
    except FarmError as e:
        llvm = f"LLVM unusable: {e}"
    return f"{prog} {farm}\n{llvm}"


class _Version(argparse.Action):
    """argparse's `version` action, but the text (it runs llvm-config) is made only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> NoReturn:
        print(version_text(parser.prog))
        parser.exit(0)


def verb_group(sub: argparse._SubParsersAction, name: str, help: str) -> argparse._SubParsersAction:
    """The verbs of `mlgo-farm NAME`, made by the first role that asks: two roles add verbs to one group (the
    policy host's `policy serve` and `policy publish`, the trainer's `policy train` and `policy retrain`), and
    neither imports the other for it."""
    group = sub.choices.get(name)
    if group is None:
        group = sub.add_parser(name, help=help)
        group.add_subparsers(dest=f"{name}_verb", metavar="VERB", required=True)
    return group._subparsers._group_actions[0]


def build_parser() -> argparse.ArgumentParser:
    parser = FarmParser(
        prog="mlgo-farm",
        description="Build-farm vocabulary and regression service for LLVM's MLGO.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    parser.add_argument("--version", action=_Version, help="print the farm's version and LLVM's, then exit")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for role in ROLES:
        importlib.import_module(role).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    asked_json = answer.wants_json(argv)
    try:
        parser = build_parser()  # a verb's module may read the configuration when it registers
    except FarmError as e:
        return _fail(str(e), e.exit_code, sys.stdout if asked_json else None)
    try:
        args = parser.parse_args(argv)
    except UsageError as e:
        if asked_json:
            answer.write(answer.failure(e.message, 2), sys.stdout)
        raise
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s: %(message)s",
    )
    restore = _on_sigterm_unwind()
    as_json = bool(getattr(args, answer.DEST, False))
    try:
        if not as_json:
            return _run(args, None)
        with answer.json_stdout() as out:
            return _run(args, out)
    finally:
        restore()


def _run(args: argparse.Namespace, json_out: TextIO | None) -> int:
    """Run the verb; an Answer is emitted as asked (`json_out`: the real stdout under --json), a failure is one
    line on stderr (and under --json one object on stdout), each with its exit code."""
    try:
        result = args.func(args)
        if isinstance(result, answer.Answer):
            code = answer.emit(result, json_out is not None, json_out)
        else:
            code = int(result or 0)
        sys.stdout.flush()  # a closed pipe must surface here, inside the handlers, not at exit
        return code
    except FarmError as e:
        return _fail(str(e), e.exit_code, json_out)
    except Terminated:
        return _fail("terminated", 128 + signal.SIGTERM, json_out)
    except KeyboardInterrupt:
        return _fail("interrupted", 130, json_out)
    except BrokenPipeError:
        # `mlgo-farm ... | head`: the reader has what it wanted. Point stdout at /dev/null so the
        # interpreter's final flush cannot raise again, and exit like a process killed by SIGPIPE.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            return _fail(f"{e.filename or 'output'}: {os.strerror(e.errno).lower()}", 1, json_out)
        _crashed(e, json_out)
        raise
    except RecursionError:
        return _fail("input nested too deeply to read", 2, json_out)
    except Exception as e:
        _crashed(e, json_out)
        raise


def _crashed(e: BaseException, json_out: TextIO | None) -> None:
    """A bug (its traceback follows on stderr, exit 1 as ever): under --json, still one object on stdout."""
    if json_out is not None:
        answer.write(answer.failure(f"{type(e).__name__}: {e}", 1), json_out)


def _fail(message: str, code: int, json_out: TextIO | None = None) -> int:
    print(f"mlgo-farm: error: {message}", file=sys.stderr)
    if json_out is not None:
        answer.write(answer.failure(message, code), json_out)
    return code


def console() -> None:
    """The `mlgo-farm` command: main(), then exit with its code.

    SIGTERM and Ctrl-C always end the process. An interrupted verb tells its worker threads to stop and waits for
    them a short grace (policytrain/fanout.py); a thread still in flight after it (a compile or a model run that
    did not stop) would otherwise hold the interpreter at exit, which joins every worker thread, for as long as that
    thread runs. Only here, in the command, never in a `main()` a test calls in-process."""
    code = main()
    if code in (128 + signal.SIGINT, 128 + signal.SIGTERM) and any(
            t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    console()
