"""The one error type the CLI turns into a one-line message and a non-zero exit: one exit code per kind.

1 any other failure (FarmError), 2 bad input or usage (InputError; argparse's usage errors too), 3 an LLVM
tool (ToolError), 4 the object store (StoreError), 5 a well-formed artifact that fails the checks that gate
publishing it (ValidationFailed), 6 nothing of that kind published yet (NothingPublished). Verbs add their own
verdicts above these, declared here too so that a caller (a builder's step that mails its own regressions,
master/registry.py) takes them from their home and not through the verb's module: 10 and 11 (`regress run`), 12
(`policy retrain`'s size check). A signal that stops a command (`Terminated`) is 128 + its number, Ctrl-C 130.
README.md, "Exit codes", lists them for users.
"""

#: `regress run --fail-on-regression` when the run regressed
EXIT_REGRESSION = 10
#: `regress run --expect-identical` when the policy build's sizes differ at all
EXIT_NOT_IDENTICAL = 11
#: `policy retrain --wait` when the new policy failed its size check (it stays a candidate)
EXIT_SIZE_CHECK = 12


class FarmError(Exception):
    """A user-facing failure: the message is one line saying what is wrong and where."""

    exit_code = 1


class ToolError(FarmError):
    """An LLVM tool is missing, too old, crashed or timed out."""

    exit_code = 3


class InputError(FarmError):
    """Input (corpus, dataset, vocabulary, model file) is malformed or empty."""

    exit_code = 2


class StoreError(FarmError):
    """The object store is unreachable or holds something inconsistent."""

    exit_code = 4


class HistoryError(FarmError):
    """The regression history's database refused a statement or could not be reached (regression/database.py): a
    run it happens to names itself in the message (regression/unfinished.py), since the database's line does not; the
    dashboard answers it 503, "try again" (master/dashboard/app.py)."""


class ValidationFailed(InputError):
    """A well-formed artifact that fails a check gating its publication (a policy model reading a feature LLVM
    does not send, no better than the baseline): not a usage error, so a builder or script can tell them apart."""

    exit_code = 5


class NothingPublished(InputError):
    """The store holds no version of what was asked for yet (`latest` of a kind nothing was published for): the
    input was fine, so not exit 2; a script waiting for a first publish can tell it apart. An InputError still, so
    code that treats "cannot resolve" alike needs no change."""

    exit_code = 6


class Terminated(KeyboardInterrupt):
    """SIGTERM (a builder's stop, make or CMake stopping a build, a supervisor, `kill`) or SIGHUP (the terminal
    closed), raised like Ctrl-C's KeyboardInterrupt so that every `with` unwinds: atomic writes remove their
    `.NAME.*.tmp`, locks are released, a compiler's process group is killed and reaped. `signum` is the signal
    (the exit is 128 + it); it is not imported from `signal`, which the per-compile launcher does not load."""

    def __init__(self, signum: int = 15) -> None:  # SIGTERM
        super().__init__()
        self.signum = signum


def first_line(e: BaseException, limit: int = 300) -> str:
    """An exception as one line for a message of the farm's own: its first line (a library's may go on for a
    page), at most `limit` characters, or its type's name when it says nothing. (farm.client.one_line keeps the
    whole text and hides secrets, for broker errors that name URLs; the standalone launcher keeps its own copy.)"""
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:limit]
