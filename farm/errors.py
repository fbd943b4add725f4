"""The one error type the CLI turns into a one-line message and a non-zero exit."""


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
