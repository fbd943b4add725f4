"""CLI verbs of the policy side: `policy-cc` (compiler launcher) and `policy train-bc|inspect`."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from farm.cli import positive_float, verb_group
from farm.errors import InputError
from policyhost import advisors


def _policy_cc(args: argparse.Namespace) -> int:
    from policyhost import cc

    timeout = None if args.timeout is None else cc.seconds(args.timeout, "--timeout")
    args.policy, args.vocab = _published(args.policy, args.advisor, args.vocab)
    max_silence = None if args.max_silence is None else cc.seconds(args.max_silence, "--max-silence")
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if args.shim:
        from policyhost import shim

        if args.print_launcher:
            raise InputError("policy-cc: --shim and --print-launcher are two ways to say one thing; give one")
        if not command:
            raise InputError("policy-cc --shim: no compiler given (usage: policy-cc --shim DIR/cc [options] -- "
                             "clang-22)")
        _check_policy(args.policy)  # a shim that fails every compile of a build is refused now, in one line
        prefix = cc.launcher_command(args.policy, server=args.server, vocab=args.vocab, timeout=timeout,
                                     advisor=args.advisor, stats=args.stats, max_silence=max_silence)
        print(shim.write(args.shim, prefix, command))
        return 0
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
    if not command:
        raise InputError("policy-cc: no compiler command given (usage: policy-cc [options] -- clang ARGS...)")
    return cc.run(cc.Options(command, policy=args.policy, server=args.server, vocab=args.vocab, timeout=timeout,
                             advisor=args.advisor, stats=args.stats, max_silence=max_silence))


def _check_policy(policy: str | None) -> None:
    """A built-in policy or an .onnx file that exists (not loaded: onnxruntime stays out of the CLI), else the
    launcher's own one-line error."""
    from policyhost.published import load_policy
    from policyhost.runnable import BUILTINS

    if not policy or policy in BUILTINS or (policy.endswith(".onnx") and Path(policy).is_file()):
        return
    load_policy(policy)


def _published(policy: str | None, advisor: str, vocab: str | None) -> tuple[str | None, str | None]:
    """`store:VERSION` as the cached, checked model file and the vocabulary it was trained with."""
    from policyhost.published import resolve_published
    from policyhost.runnable import is_published

    if not is_published(policy):
        return policy, vocab
    path, _, vocab_file = resolve_published(policy, advisor, vocab)
    return path, vocab_file


def _serve(args: argparse.Namespace) -> int:
    import signal
    import threading

    from policyhost.policy_server import PolicyServer
    from policyhost.published import load_policy

    policy = load_policy(args.policy)
    if hasattr(policy, "time_limit"):  # a model run that outlives the compile's deadline is stopped
        if args.timeout is None:
            from farm.config import load_settings

            args.timeout = float(load_settings().policy.timeout)
        policy.time_limit = args.timeout
    server = PolicyServer(args.socket, policy)
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


def _inspect(args: argparse.Namespace) -> int:
    """Exit 0 only for a model a compile can use: loaded, bound to the header this LLVM really sends, and answering
    its first decision within the bound every model run has (`[policy] timeout`, as `policy serve`), finitely."""
    from farm.config import load_settings
    from farm.toolchain import Toolchain
    from policyhost import release
    from policyhost.launcher import resolve_vocab

    settings = load_settings()
    model, vocab = _published(args.model, args.advisor, args.vocab)
    vocab_file = resolve_vocab(vocab, args.advisor) if vocab else None
    pol, header = release.check_model(Path(model), Toolchain.from_settings(settings), args.advisor, vocab_file,
                                      run=float(settings.policy.timeout))
    info = {
        "model": str(pol.path),
        "inputs": {name: {"type": t, "shape": s} for name, (t, s) in pol.inputs.items()},
        "output": {"name": pol.output[0], "type": pol.output[1], "shape": pol.output[2]},
        "metadata": pol.metadata,
        # the probe compile's verdict: every input is a feature this LLVM sends, in a shape it can feed
        "checked_against_llvm": header is not None,
    }
    print(json.dumps(info, indent=2))
    return 0


def _store():
    from farm.objectstore import store_from_settings

    return store_from_settings()


def _publish(args: argparse.Namespace) -> int:
    """Validate a `train-bc` model against this LLVM again (never trust a copied manifest) and publish it."""
    from farm.config import load_settings
    from farm.locks import publish_lock
    from farm.toolchain import Toolchain
    from policyhost import publish as policy
    from policyhost import release
    from policyhost.launcher import resolve_vocab

    model = Path(args.model)
    if model.suffix != ".onnx" or not model.is_file():
        raise InputError(f"policy model {model} not found (an .onnx file `policy train-bc` wrote)")
    result = release.read_result(model)
    vocab = args.vocab or (f"store:{result['vocab_version']}" if result.get("vocab_version") else result.get("vocab"))
    vocab_file = resolve_vocab(vocab, args.advisor) if vocab else None
    vocab_version = vocab_file.stem if vocab_file is not None and str(vocab).startswith("store:") else None
    if vocab_file is not None and not vocab_version:
        raise InputError("publish needs the vocabulary as store:VERSION (a version the farm published), so the "
                         "policy names the vocabulary it reads")
    s = load_settings()
    tc = Toolchain.from_settings(s)
    validation = release.validate(model, result, tc, args.advisor, vocab_file)
    beside = model.with_suffix(".weights")  # the native host's file the trainer wrote beside the model, if any
    weights = beside.read_bytes() if beside.is_file() else None
    manifest = release.manifest_for(model, result, advisor=args.advisor, vocab_version=vocab_version,
                                    validation=validation, weights=weights)
    if weights is not None:
        policy.check_weights(weights, manifest)
    store = _store()
    with publish_lock(store, s.celery.broker_url, settings=s):
        out = policy.publish(store, model.read_bytes(), manifest, weights=weights)
    print(policy.summary(out))
    return 0


def _list(args: argparse.Namespace) -> int:
    import sys

    from farm.artifacts import POLICIES
    from farm.artifacts.verdict import POLICY_SIZE, check_value

    rows = [v for v in POLICIES.read_index(_store()) if args.advisor in (None, v.get("advisor"))]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    head = ("ADVISOR", "VERSION", "STATE", "VOCAB", "PUBLISHED", "HELDOUT_TEXT", "SIZE_CHECK", "AGREE", "MAJORITY")
    fmt = lambda x: "-" if x is None else f"{x:.4f}"  # noqa: E731
    ratio = lambda x: "-" if x is None else f"{x:.4f}x"  # noqa: E731
    table = [head] + [(str(v.get("advisor")), str(v.get("version")), str(v.get("state") or "-"),
                       str(v.get("vocab_version") or "-"), str(v.get("published_at")), ratio(v.get("heldout_geomean")),
                       ratio(check_value(v.get("gate"), POLICY_SIZE)),
                       fmt(v.get("heldout_agreement")), fmt(v.get("heldout_majority_baseline"))) for v in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    print("HELDOUT_TEXT: geomean .text against the heuristic on the packages held out of training (the trainer's "
          "table); SIZE_CHECK: the same on the size check's benchmarks, which decide `latest`; AGREE/MAJORITY: a "
          "warm start's agreement with the heuristic and the majority baseline", file=sys.stderr)
    return 0


def _promote(args: argparse.Namespace) -> int:
    """The operator's override of a policy's gate (a candidate held back by its size check, to try it), under the
    publish lock; the reason, who and when are recorded in the index like `vocab promote`'s."""
    from farm.artifacts import POLICIES

    print(f"policy {POLICIES.promote_as_operator(_store(), args.advisor, args.version, args.reason)}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from farm.artifacts import POLICIES
    from farm.jsonio import dumps

    print(dumps(POLICIES.show(_store(), args.advisor, args.version)), end="")
    return 0


def _download(args: argparse.Namespace) -> int:
    """The model to OUTPUT.onnx and, when the version holds them, the native host's weights to OUTPUT.weights (where
    mlgo-cc.py looks for them), every file checked against the manifest before any is written. A version without
    weights removes a stale OUTPUT.weights, which the launcher would otherwise pair with another model."""
    import sys

    from farm.artifacts import POLICIES
    from farm.atomic import check_file_set
    from policyhost.publish import WEIGHTS

    out = Path(args.output).absolute()
    if out.is_dir():
        raise InputError(f"{out} is a directory: give a file name")
    if out.suffix != ".onnx":
        raise InputError(f"output {out} must end in .onnx (the launcher recognises models by it)")
    weights = out.with_suffix(".weights")
    check_file_set([out, weights])  # the pair, before either is written: a FIFO .weights left the .onnx alone
    store = _store()
    version = POLICIES.resolve(store, args.advisor, args.version)
    outs = {"model.onnx": out}
    if WEIGHTS in POLICIES.kind.held(POLICIES.show(store, args.advisor, version)):
        outs[WEIGHTS] = weights
    manifest = POLICIES.download_files(store, args.advisor, version, outs)
    said = f"policy {args.advisor} {manifest['version']} -> {out} (sha256 {manifest['sha256'][:12]} verified)"
    if WEIGHTS in outs:
        said += f", native weights -> {weights} (sha256 {manifest['weights']['sha256'][:12]} verified)"
    else:
        weights.unlink(missing_ok=True)
        said += "; this version has no native weights (published before versions held them): the Python host only"
    print(said, file=sys.stderr)
    print(out)
    return 0


#: The `policy` group's one line (policytrain/cli.py adds the training verbs to the same group).
POLICY_HELP = "policy models: training, inspection, published versions"


def register(sub: argparse._SubParsersAction) -> None:
    """Add the policy side's verbs to `mlgo-farm`."""
    cc = sub.add_parser(
        "policy-cc",
        help="compiler launcher: run one compile in LLVM's interactive MLGO mode with a policy host",
        description="Use as CMAKE_C_COMPILER_LAUNCHER or in make's CC=: "
        "mlgo-farm policy-cc --policy heuristic -- clang -Oz -c a.c -o a.o; or write a compiler shim that every build "
        "system takes as the compiler (libtool, CMake): mlgo-farm policy-cc --shim DIR/cc --policy store:latest -- "
        "clang-22",
    )
    from policyhost.cc import OPTIONS

    for name, _, text in OPTIONS:  # the lean launcher's own descriptions (mlgo-farm-cc --help prints the same)
        if name == "advisor":
            cc.add_argument("--advisor", choices=advisors.NAMES, default=advisors.DEFAULT, help=text)
        elif name != "bin-dir":  # policy-cc runs the configured LLVM
            cc.add_argument(f"--{name}", help=text)
    cc.add_argument("--print-launcher", nargs="?", const="shell", choices=("shell", "cmake"),
                    help="print the fastest launcher prefix for these options "
                    "(python -I -S .../policyhost/cc_script.py ... --) instead of compiling, shell-quoted "
                    "(CC=\"$(mlgo-farm policy-cc --print-launcher) clang\") or as a CMake list "
                    "(-DCMAKE_C_COMPILER_LAUNCHER=\"$(mlgo-farm policy-cc --print-launcher cmake)\")")
    cc.add_argument("--shim", metavar="DIR/cc",
                    help="write an executable DIR/cc (0755, atomically) that runs the compiler after `--` through "
                    "this launcher, and print its path: a plain compiler to build systems (make CC=DIR/cc, "
                    "./configure CC=DIR/cc with libtool, cmake -DCMAKE_C_COMPILER=DIR/cc); one per compiler "
                    "(--shim DIR/c++ ... -- clang++-22)")
    cc.add_argument("command", nargs=argparse.REMAINDER, help="-- COMPILER ARGS...")
    cc.set_defaults(func=_policy_cc)

    psub = verb_group(sub, "policy", POLICY_HELP)
    srv = psub.add_parser("serve", help="load a policy once and answer every policy-cc --server of a build")
    srv.add_argument("--policy", required=True, help="built-in name or .onnx model")
    srv.add_argument("--socket", required=True, help="Unix socket path to listen on")
    srv.add_argument("--idle-exit", type=positive_float,
                     help="exit after this many seconds without any client connected")
    srv.add_argument("--timeout", type=positive_float,
                     help="stop a model's inference that runs longer than this many seconds and answer the "
                     "compile with an error (default: [policy] timeout, the compile's own)")
    srv.set_defaults(func=_serve)
    ins = psub.add_parser("inspect", help="validate an ONNX policy against this LLVM and show its inputs and output")
    ins.add_argument("model", help="an .onnx file, or store:latest / store:VERSION")
    ins.add_argument("--advisor", choices=advisors.NAMES, default=advisors.DEFAULT,
                     help=f"the advisor the policy drives (default: {advisors.DEFAULT}); an inliner model is "
                     "checked against the features this LLVM sends (a probe compile)")
    ins.add_argument("--vocab", help="IR2Vec vocabulary (file or store:VERSION) for a model reading *_embedding "
                     "features (default: a published policy's own)")
    ins.set_defaults(func=_inspect)

    advisor = argparse.ArgumentParser(add_help=False)
    advisor.add_argument("--advisor", choices=advisors.NAMES, default=advisors.DEFAULT,
                         help=f"the advisor the policy drives (default: {advisors.DEFAULT})")
    pub = psub.add_parser("publish", parents=[advisor],
                          help="validate a train-bc model against this LLVM and publish it as a version")
    pub.add_argument("model", help="MODEL.onnx written by `policy train-bc` (MODEL.json beside it; MODEL.weights, the "
                     "native host's file, is published with it when present)")
    pub.add_argument("--vocab", help="store:VERSION of the vocabulary it was trained with (default: the one "
                     "train-bc recorded)")
    pub.set_defaults(func=_publish)
    ls = psub.add_parser("list", help="list published policy versions")
    ls.add_argument("--advisor", choices=advisors.NAMES)
    ls.add_argument("--json", action="store_true", help="print the index entries as JSON")
    ls.set_defaults(func=_list)
    sh = psub.add_parser("show", parents=[advisor], help="print a published version's manifest")
    sh.add_argument("--version", default="latest")
    sh.set_defaults(func=_show)
    dl = psub.add_parser("download", parents=[advisor], help="download a version: its model and, when it has them, "
                         "its native weights (each checked against the version's manifest)")
    dl.add_argument("--version", default="latest")
    dl.add_argument("-o", "--output", required=True, help="the .onnx file to write (the native host's weights go "
                    "beside it as .weights, where mlgo-cc.py looks for them)")
    dl.set_defaults(func=_download)
    pr = psub.add_parser("promote", parents=[advisor],
                         help="make a listed version latest whatever its gate said (recorded with the reason), as "
                              "`vocab promote` does")
    pr.add_argument("version", help="a version listed by `policy list`")
    pr.add_argument("--reason", required=True, help="why (recorded in the index with who and when)")
    pr.set_defaults(func=_promote)
