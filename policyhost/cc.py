"""The lean compiler launcher: what a policy build runs once per compile.

    python -I -S .../policyhost/cc_script.py --bin-dir DIR --timeout S --policy heuristic -- clang ARGS...

`mlgo-farm policy-cc --print-launcher [--policy P ...]` prints that prefix for the current settings
(`make CC="$(mlgo-farm policy-cc --print-launcher) clang"`); `mlgo-farm-cc` (console script) and
`mlgo-farm policy-cc` run the same code after a slower interpreter start-up.

Python starts without `site` (`-S`: the editable install's import hook is costly on a path taken
once per compile); `cc_script.py` puts the package root on `sys.path`. Only C modules of the
standard library and the host modules (`protocol`, `host`, `policies`, `launcher`, `advisors`,
`policy_client`) are imported. Settings are read with `farm.envvalues` (command line, then
`MLGO_FARM_*`) and `farm.config` only for what is still open; the compiler is found with
`farm.toolpath` (the rule `Toolchain.path` uses) and started with `posix_spawn`, because
`farm.config`, `farm.toolchain` and `subprocess` cost more than the whole launcher. An `.onnx`
policy is answered by a shared `policy serve` process started on first use, so no compile
imports onnxruntime or numpy. The measured costs are in bench/README.md#bench_policy_build.
"""

from __future__ import annotations

import os
import sys

from farm.errors import FarmError, InputError, Terminated
from farm.toolpath import tool_path
from policyhost import advisors
from policyhost.launcher import CompileOutcome, compile_with_host, compiler_tool, compiles_source

PROG = "mlgo-farm-cc"
USAGE = (f"usage: {PROG} [--policy P] [--server SOCKET] [--vocab V] [--timeout S] [--max-silence S] "
         f"[--advisor {'|'.join(advisors.NAMES)}] [--stats FILE] [--bin-dir DIR] -- COMPILER ARGS...")
#: The launcher's options, (name, metavar, help): `mlgo-farm-cc --help` prints them and `mlgo-farm policy-cc`
#: registers them with argparse (policyhost/cli.py), so the two never describe them differently.
OPTIONS = (
    ("policy", "P", f"{', '.join(p for a in advisors.ADVISORS.values() for p in a.builtin_policies)}, a path to an "
                    ".onnx model, or store:VERSION (store:latest) for one the farm published "
                    "(default: [policy] default, heuristic)"),
    ("vocab", "V", "IR2Vec vocabulary JSON, or store:VERSION (store:latest) for one the farm published: adds the "
                   "callee/caller embedding features"),
    ("timeout", "S", "seconds of compiler silence without CPU use before giving up (default: [policy] timeout)"),
    ("max-silence", "S", "seconds of silence on an opened channel before giving up, even while the compiler uses "
                         "CPU (default: 10 x the timeout)"),
    ("advisor", "|".join(advisors.NAMES), f"which MLGO advisor the policy drives (default: {advisors.DEFAULT})"),
    ("server", "SOCKET", "Unix socket of a running `mlgo-farm policy serve` to ask when no --policy is given "
                         "(default: [policy] server); an .onnx --policy starts a shared server by itself"),
    ("stats", "FILE", "append one JSON line per compile (decisions, response times) to this file"),
    ("bin-dir", "DIR", "LLVM's bin directory the compiler is taken from (default: [llvm] bin_dir)"),
)
_VALUED = tuple(name.replace("-", "_") for name, _, _ in OPTIONS)


def help_text() -> str:
    """What `mlgo-farm-cc --help` prints: usage, what it does, each option, an example, the exit status."""
    import textwrap

    lines = [USAGE, "",
             "Run one compile in LLVM's interactive MLGO mode, answering the compiler's decisions with a policy",
             "(a compiler launcher: make CC=\"mlgo-farm-cc --policy P -- clang\", or CMAKE_C_COMPILER_LAUNCHER).",
             "A command that compiles nothing (linking) runs unchanged. Builds should take the faster prefix",
             "`mlgo-farm policy-cc --print-launcher` prints.", "", "options:"]
    for name, metavar, text in OPTIONS:
        lines.append(f"  --{name} {metavar}")
        lines += textwrap.wrap(text, 96, initial_indent=" " * 8, subsequent_indent=" " * 8)
    lines += ["  -h, --help", "        show this help and exit",
              "  --version", "        print the farm's version and LLVM's, then exit", "",
              "example:", f"  {PROG} --policy heuristic -- clang -Oz -c a.c -o a.o", "",
              "exit status: the compiler's own when it fails; otherwise the farm's (2 bad arguments, 3 LLVM,",
              "5 a policy that fails its checks; README.md, \"Exit codes\")."]
    return "\n".join(lines)


class Options:
    """The launcher's options; None means "from the farm configuration"."""

    def __init__(self, command: list[str], *, policy: str | None = None, server: str | None = None,
                 vocab: str | None = None, timeout: float | None = None, advisor: str = advisors.DEFAULT,
                 stats: str | None = None, bin_dir: str | None = None, max_silence: float | None = None) -> None:
        self.command, self.policy, self.server, self.vocab = command, policy, server, vocab
        self.timeout, self.advisor, self.stats, self.bin_dir = timeout, advisor, stats, bin_dir
        #: longest silence on an open channel, even while the compiler uses CPU (None: 10x the timeout)
        self.max_silence = max_silence


def seconds(text: str, what: str) -> float:
    """A positive, finite number of seconds, or a one-line InputError naming `what`."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise InputError(f"{what} must be a positive number of seconds, not {text!r}")
    return value


def parse_args(argv: list[str]) -> Options:
    """`--name VALUE`/`--name=VALUE` options, then `--` (optional) and the compiler command."""
    values: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("--"):
            break
        name, eq, value = arg[2:].partition("=")
        key = name.replace("-", "_")
        if key not in _VALUED:
            raise InputError(f"unknown option {arg!r} ({USAGE})")
        if not eq:
            i += 1
            if i >= len(argv):
                raise InputError(f"option --{name} needs a value")
            value = argv[i]
        values[key] = value
        i += 1
    command = argv[i:]
    if not command:
        raise InputError(f"no compiler command given ({USAGE})")
    timeout = seconds(values.pop("timeout"), "--timeout") if "timeout" in values else None
    max_silence = seconds(values.pop("max_silence"), "--max-silence") if "max_silence" in values else None
    advisor = advisors.get(values.pop("advisor", advisors.DEFAULT)).name
    return Options(command, timeout=timeout, max_silence=max_silence, advisor=advisor, **values)


def _complete(opts: Options) -> Options:
    """Fill what the command line left open: MLGO_FARM_* variables, then the farm configuration (farm.config)."""
    if opts.bin_dir is None or opts.timeout is None:  # never for the printed launcher: it passes both
        from farm.envvalues import from_env

        if opts.bin_dir is None:
            opts.bin_dir = from_env(os.environ, "llvm", "bin_dir", "")
        if opts.timeout is None:
            opts.timeout = from_env(os.environ, "policy", "timeout", 0.0)
    if opts.bin_dir is not None and opts.timeout is not None and (opts.policy or opts.server):
        return opts
    from farm.config import load_settings

    s = load_settings()
    if opts.bin_dir is None:
        opts.bin_dir = s.llvm.bin_dir
    if opts.timeout is None:
        opts.timeout = float(s.policy.timeout)
    if not opts.policy and not opts.server:
        if s.policy.server:
            opts.server = s.policy.server
        else:
            opts.policy = s.policy.default
    return opts


def _policy(opts: Options, compiles: bool):
    """The policy object for this compile (None when nothing is compiled and the policy is a model file)."""
    from policyhost.published import load_policy
    from policyhost.runnable import BUILTINS, check_advisor

    if opts.policy:
        if opts.policy in BUILTINS:
            check_advisor(opts.policy, opts.advisor)
            return load_policy(opts.policy)
        if not opts.policy.endswith(".onnx"):
            load_policy(opts.policy)  # raises the one-line "unknown policy" error
        from policyhost.policy_client import shared_server, shared_socket

        if not compiles:
            shared_socket(opts.policy)  # the model must exist even when this step compiles nothing
            return None
        return shared_server(opts.policy, opts.timeout)
    if not compiles:
        return None
    from policyhost.policy_client import RemotePolicy

    return RemotePolicy(opts.server, timeout=opts.timeout)


def run(opts: Options) -> int:
    """Run the compile; the exit status for make/CMake. FarmError for bad arguments (nothing was run)."""
    import time

    from policyhost.host import Process

    opts = _complete(opts)
    if opts.policy and opts.policy.startswith("store:"):  # by hand: a build gets the file from --print-launcher
        from policyhost.published import resolve_published

        opts.policy, _, opts.vocab = resolve_published(opts.policy, opts.advisor, opts.vocab)
    tool = compiler_tool(opts.command[0], opts.bin_dir)
    compiler = tool_path(opts.bin_dir, tool)
    args = opts.command[1:]
    compiles = compiles_source(args)
    if compiles:
        from policyhost.launcher import resolve_vocab

        vocab = resolve_vocab(opts.vocab, opts.advisor)
    policy = _policy(opts, compiles)
    if not compiles:  # linking and the like: run unchanged, output straight through
        t0 = time.monotonic()
        rc = Process([compiler, *args]).wait()
        outcome = CompileOutcome(list(opts.command), rc, "", time.monotonic() - t0)
        if rc:
            outcome.error = f"{tool} exited with code {rc}" if rc > 0 else f"{tool} crashed with signal {-rc}"
    else:
        outcome = compile_with_host(
            # a session of its own: a compiler killed on timeout or on the launcher's SIGTERM, SIGINT or SIGHUP
            # takes its children with it (policyhost.host.kill kills the group)
            opts.command, tool, args, policy,
            lambda full, errfd: Process([compiler, *full], stderr=errfd, setsid=True),
            vocab=vocab, timeout=opts.timeout, advisor=opts.advisor, max_silence=opts.max_silence,
        )
        _write(2, outcome.stderr.encode())
    if opts.stats:
        append_stats(opts.stats, outcome)
    if outcome.ok:
        return 0
    if outcome.host_error is None and outcome.returncode > 0:
        return outcome.returncode  # the compiler's own failure: make/CMake see its exit code and message
    raise FarmError(outcome.error)


def append_stats(path: str, outcome: CompileOutcome) -> None:
    """One JSON line per compile; O_APPEND keeps lines whole when parallel compiles share the file."""
    from policyhost.protocol import dumps

    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        _write(fd, (dumps(outcome.as_json()) + "\n").encode())
    finally:
        os.close(fd)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def launcher_command(policy: str | None = None, *, server: str | None = None, vocab: str | None = None,
                     timeout: float | None = None, advisor: str = advisors.DEFAULT, stats: str | None = None,
                     max_silence: float | None = None, settings=None, native: bool = True) -> list[str]:
    """The fastest launcher prefix (ending in `--`) for these options, with the configuration resolved now.

    Put the compiler after it: `[*launcher_command("heuristic"), "clang", "-Oz", "-c", ...]`. A
    `store:VERSION` (`store:latest`) vocabulary is downloaded and verified here, once, so every compile
    of the build uses that one file even when a newer vocabulary is published meanwhile. An inliner policy the
    farm published with its native weights runs through the native host (policyhost/native.py: the same
    decisions, no interpreter per compile) unless `native` is off or `stats` are asked for.
    """
    from policyhost.launcher import resolve_vocab
    from policyhost.runnable import BUILTINS, check_advisor

    if settings is None:
        from farm.config import load_settings

        settings = load_settings()
    timeout = timeout if timeout is not None else settings.policy.timeout
    opts = ["--bin-dir", os.path.abspath(settings.llvm.bin_dir), "--timeout", f"{timeout:g}"]
    if max_silence is not None:
        opts += ["--max-silence", f"{max_silence:g}"]
    server = server if server is not None else (settings.policy.server if not policy else None)
    chosen = None  # the policy this build asks for (None: a running server's)
    if policy or not server:
        policy = policy or settings.policy.default
        if policy in BUILTINS:
            check_advisor(policy, advisor)
        chosen = os.path.abspath(policy) if policy.endswith(".onnx") else policy
        opts += ["--policy", chosen]
    else:
        opts += ["--server", os.path.abspath(server)]
    vocab_file = resolve_vocab(vocab, advisor) if vocab is not None else None
    if vocab_file is not None:
        opts += ["--vocab", str(vocab_file)]
    if native and stats is None and chosen is not None:
        from policyhost.native import native_command

        prefix = native_command(settings, chosen, vocab_file, timeout, max_silence, advisor)
        if prefix is not None:
            return prefix
    if advisor != advisors.DEFAULT:
        opts += ["--advisor", advisor]
    if stats is not None:
        opts += ["--stats", os.path.abspath(stats)]
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cc_script.py")
    return [sys.executable, "-I", "-S", script, *opts, "--"]


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(signum)


def main(argv: list[str] | None = None) -> int:
    try:
        from _signal import SIGHUP, SIGTERM
        from _signal import signal as set_handler  # `signal` itself would import enum
    except ImportError:  # pragma: no cover
        from signal import SIGHUP, SIGTERM
        from signal import signal as set_handler
    set_handler(SIGTERM, _terminate)
    set_handler(SIGHUP, _terminate)
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in ("-h", "--help"):
        print(help_text())
        return 0
    if args and args[0] == "--version":
        from farm.cli import version_text  # only here: the launcher's start-up never pays for argparse

        print(version_text(PROG))
        return 0
    try:
        return run(parse_args(args))
    except FarmError as e:
        _write(2, f"mlgo-farm: error: {e}\n".encode())
        return e.exit_code
    except Terminated as e:  # a KeyboardInterrupt too: caught first
        _write(2, b"mlgo-farm: hung up\n" if e.signum == SIGHUP else b"mlgo-farm: terminated\n")
        return 128 + e.signum
    except KeyboardInterrupt:
        _write(2, b"mlgo-farm: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
