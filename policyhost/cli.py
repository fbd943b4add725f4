"""CLI verbs of the policy side: `policy-cc` (compiler launcher) and `policy train-bc|inspect`."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from farm.cli import fraction, positive_float, positive_int
from farm.errors import InputError
from policyhost import advisors


def _policy_cc(args: argparse.Namespace) -> int:
    from policyhost import cc

    timeout = None if args.timeout is None else cc.seconds(args.timeout, "--timeout")
    max_silence = None if args.max_silence is None else cc.seconds(args.max_silence, "--max-silence")
    if args.print_launcher:
        import shlex

        prefix = cc.launcher_command(args.policy, server=args.server, vocab=args.vocab, timeout=timeout,
                                     advisor=args.advisor, stats=args.stats, max_silence=max_silence)
        if args.print_launcher == "cmake":  # a CMake list, for CMAKE_<LANG>_COMPILER_LAUNCHER
            if any(";" in a for a in prefix):
                raise InputError("a launcher argument contains ';', which a CMake list cannot hold")
            print(";".join(prefix))
        else:
            print(shlex.join(prefix))
        return 0
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise InputError("policy-cc: no compiler command given (usage: policy-cc [options] -- clang ARGS...)")
    return cc.run(cc.Options(command, policy=args.policy, server=args.server, vocab=args.vocab, timeout=timeout,
                             advisor=args.advisor, stats=args.stats, max_silence=max_silence))


def _serve(args: argparse.Namespace) -> int:
    import signal
    import threading

    from policyhost.policies import load_policy
    from policyhost.policy_server import PolicyServer

    server = PolicyServer(args.socket, load_policy(args.policy))
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    server.start()
    print(f"policy {args.policy} served on {server.path} (pid {os.getpid()})", flush=True)
    try:
        while not done.wait(1.0):
            if args.idle_exit is not None and server.idle_for() > args.idle_exit:
                # unlink first: later clients start a new server; the ones already queued are still answered
                server.retire()
                done.wait(1.0)  # clients that connected just before the unlink are accepted and answered
                while server.idle_for() == 0 and not done.wait(0.2):
                    pass
                _remove_launcher_files(server.path)
                break
    finally:
        server.stop()
    return 0


def _remove_launcher_files(sock: Path) -> None:
    """After an idle exit: the start lock and the log the launcher kept beside a shared server's socket."""
    import contextlib
    import fcntl

    log = Path(f"{sock}.log")
    with contextlib.suppress(OSError):
        if os.fstat(1).st_ino == log.stat().st_ino:  # still this server's log, not a successor's
            log.unlink()
    with contextlib.suppress(OSError):
        fd = os.open(f"{sock}.lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody is starting a server right now
            os.unlink(f"{sock}.lock")
        finally:
            os.close(fd)


def _train_bc(args: argparse.Namespace) -> int:
    from farm.toolchain import Toolchain
    from policyhost import warmstart

    tc = Toolchain.from_settings()
    result = warmstart.train_from(
        Path(args.source), Path(args.output), tc,
        seed=args.seed, epochs=args.epochs, holdout=args.holdout, jobs=args.jobs,
        vocab=args.vocab, save_log=Path(args.save_log) if args.save_log else None,
    )
    print(json.dumps(result, indent=2))
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from policyhost.policies import OnnxPolicy

    pol = OnnxPolicy(Path(args.model), strict=True)
    info = {
        "model": str(pol.path),
        "inputs": {name: {"type": t, "shape": s} for name, (t, s) in pol.inputs.items()},
        "output": {"name": pol.output[0], "type": pol.output[1], "shape": pol.output[2]},
        "metadata": pol.metadata,
    }
    print(json.dumps(info, indent=2))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the policy side's verbs to `mlgo-farm`."""
    cc = sub.add_parser(
        "policy-cc",
        help="compiler launcher: run one compile in LLVM's interactive MLGO mode with a policy host",
        description="Use as CMAKE_C_COMPILER_LAUNCHER or in make's CC=: "
        "mlgo-farm policy-cc --policy heuristic -- clang -Oz -c a.c -o a.o",
    )
    builtins = ", ".join(p for a in advisors.ADVISORS.values() for p in a.builtin_policies)
    cc.add_argument("--policy", help=f"{builtins}, or a path to an .onnx model "
                    "(default: [policy] default, heuristic)")
    cc.add_argument("--vocab", help="IR2Vec vocabulary JSON, or store:VERSION (store:latest) for one the farm "
                    "published: adds the callee/caller embedding features")
    cc.add_argument("--timeout", help="seconds of compiler silence without CPU use before giving up")
    cc.add_argument("--max-silence", help="seconds of silence on an opened channel before giving up, even while the "
                    "compiler uses CPU (default: 10 x the timeout)")
    cc.add_argument("--advisor", choices=advisors.NAMES, default=advisors.DEFAULT,
                    help=f"which MLGO advisor the policy drives (default: {advisors.DEFAULT})")
    cc.add_argument("--server", help="Unix socket of a running `mlgo-farm policy serve` to ask when no --policy "
                    "is given (default: [policy] server); an .onnx --policy starts a shared server by itself")
    cc.add_argument("--stats", help="append one JSON line per compile (decisions, response times) to this file")
    cc.add_argument("--print-launcher", nargs="?", const="shell", choices=("shell", "cmake"),
                    help="print the fastest launcher prefix for these options "
                    "(python -I -S .../policyhost/cc_script.py ... --) instead of compiling, shell-quoted "
                    "(CC=\"$(mlgo-farm policy-cc --print-launcher) clang\") or as a CMake list "
                    "(-DCMAKE_C_COMPILER_LAUNCHER=\"$(mlgo-farm policy-cc --print-launcher cmake)\")")
    cc.add_argument("command", nargs=argparse.REMAINDER, help="-- COMPILER ARGS...")
    cc.set_defaults(func=_policy_cc)

    pol = sub.add_parser("policy", help="policy models: warm-start training, inspection")
    psub = pol.add_subparsers(dest="policy_verb", metavar="VERB", required=True)
    bc = psub.add_parser(
        "train-bc",
        help="behavioural cloning of LLVM's inlining heuristic on a corpus, exported to ONNX",
    )
    bc.add_argument("source", help="a corpus directory (corpus_description.json), a directory of C files, "
                    "or a decision log (.npz) saved by --save-log")
    bc.add_argument("-o", "--output", required=True, help="the .onnx model to write (plus MODEL.json metadata)")
    bc.add_argument("--seed", type=int, default=0)
    bc.add_argument("--epochs", type=positive_int, default=60)
    bc.add_argument("--holdout", type=fraction, default=0.2, help="fraction of modules held out for agreement")
    bc.add_argument("--jobs", type=positive_int, default=None, help="parallel compiles while logging (default: CPUs)")
    bc.add_argument("--vocab", help="IR2Vec vocabulary JSON: also log and learn from the embedding features")
    bc.add_argument("--save-log", help="also save the logged (features, inlining_default) pairs as .npz")
    bc.set_defaults(func=_train_bc)
    srv = psub.add_parser("serve", help="load a policy once and answer every policy-cc --server of a build")
    srv.add_argument("--policy", required=True, help="built-in name or .onnx model")
    srv.add_argument("--socket", required=True, help="Unix socket path to listen on")
    srv.add_argument("--idle-exit", type=positive_float,
                     help="exit after this many seconds without any client connected")
    srv.set_defaults(func=_serve)
    ins = psub.add_parser("inspect", help="validate an ONNX policy and show its inputs and output")
    ins.add_argument("model")
    ins.set_defaults(func=_inspect)
