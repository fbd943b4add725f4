"""Every host of the channel is bounded (issue 47, items 8 and 9): a compiler that never reads its advice, a stream
without newlines, a header asking for a huge observation, and a weights file or vocabulary that is a device or a
FIFO are each one line and a non-zero exit, and SIGTERM ends a host wherever it waits.

The native host (mlgo-policy-host.c) is built here with AddressSanitizer and UndefinedBehaviorSanitizer, so a read
past a buffer or an unchecked allocation that fails (malloc returns NULL past `max_allocation_size_mb`, where the old
host grew its buffers without bound) is a report on stderr, never a silent pass. The Python hosts (policyhost/host.py
behind the farm's launcher, and the standalone mlgo_cc.py) face the same hostile compiler: a real process on the real
FIFO pair, started by the host with LLVM's interactive flags.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from policyhost import protocol, standalone
from tests.policyhost.conftest import ir2vec_vocab  # noqa: F401 - a fixture
from tests.policyhost.test_native_host import policy, random_rows  # noqa: F401 - a fixture
from tests.servers import wait_until

#: the sanitizers' reports are failures; a failing allocation returns NULL (the host must check it) instead of
#: aborting; leaks at exit are no concern of a process that exits per compile
SANITIZED = {"ASAN_OPTIONS": "detect_leaks=0:allocator_may_return_null=1:max_allocation_size_mb=512",
             "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}

#: A hostile "compiler": opens its channel like clang and either (noline) writes 4 MiB without a newline or (unread)
#: shrinks the advice FIFO to a page, sends the header and one observation more than that page of advice holds, then
#: never reads an advice. It writes `sent` once the host has read everything, and then idles until it is killed.
HOSTILE = """import fcntl, os, sys, time
mode, template = sys.argv[1], sys.argv[2]
base = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("-inliner-interactive-channel-base="))
out = os.open(base + ".out", os.O_WRONLY)
if mode == "noline":
    os.write(out, b"x" * (4 << 20))
else:
    advice = os.open(base + ".in", os.O_RDONLY | os.O_NONBLOCK)  # never read: only to size the pipe
    fcntl.fcntl(advice, fcntl.F_SETPIPE_SZ, 4096)
    n = fcntl.fcntl(advice, fcntl.F_GETPIPE_SZ) // 8 + 1
    header, raw = open(template, "rb").read().split(b"\\0", 1)
    os.write(out, header)
    for i in range(n):
        os.write(out, b'{"observation": %d}\\n' % i + raw + b"\\n")
open(os.path.join(os.path.dirname(template), "sent.tmp"), "w").write(str(os.getpid()))
os.rename(os.path.join(os.path.dirname(template), "sent.tmp"), os.path.join(os.path.dirname(template), "sent"))
time.sleep(3600)
"""


def run(cmd: list, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=kw.pop("timeout", 120), **kw)


def capped(gib: int):
    """A preexec_fn capping the child's address space: a read that never ends fails there, not on this machine."""
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (gib << 30, gib << 30))


@pytest.fixture(scope="session")
def sanitized_host(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> Path:
    exe = tmp_path_factory.mktemp("asan") / standalone.NATIVE_NAME
    p = run([toolchain.path("clang"), "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
             "-Wall", "-Wextra", "-Werror", "-o", exe, standalone.NATIVE_SOURCE, "-lm"])
    assert p.returncode == 0 and not p.stderr, p.stderr
    return exe


def hostile(tmp_path: Path, mode: str, header: protocol.Header | None = None) -> list[str]:
    """The hostile compiler's command (`x.c`: a compile, so every host opens the channel). The hosts run it with a
    3 s --timeout: the deadline on the unread advice, and the window in which the starting interpreter must show CPU
    progress, which a loaded machine gives in 3 s where it might not in one."""
    (tmp_path / "hostile.py").write_text(HOSTILE)
    template = tmp_path / "template"
    if header is not None:
        row = random_rows(header, 1, seed=4)[0]
        raw = protocol.encode_observation(header, protocol.Observation(0, None, row)).split(b"\n", 1)[1][:-1]
        template.write_bytes(header.encode() + b"\0" + raw)
    return [sys.executable, str(tmp_path / "hostile.py"), mode, str(template), "x.c"]


def one_line(p: subprocess.CompletedProcess | subprocess.Popen, err: str, code: int, text: str) -> None:
    assert p.returncode == code and err.count("\n") == 1 and text in err, (p.returncode, err)


# -- item 9: files that are not files -------------------------------------------------------------------------------
def test_weights_and_vocabularies_that_are_no_regular_files_are_one_line(sanitized_host: Path, policy,  # noqa: F811
                                                                         tmp_path: Path) -> None:
    """`--weights /dev/zero` grew an unchecked realloc until memory ran out (SIGSEGV under a limit), a FIFO blocked
    fopen for ever, and `--vocab /dev/zero` went to clang, which read it until it ran out of memory."""
    _, weights, _ = policy
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    env = {**os.environ, **SANITIZED}
    for bad in ("/dev/zero", fifo, tmp_path):
        p = run([sanitized_host, "--weights", bad, "--decide"], input="", env=env, timeout=60)
        one_line(p, p.stderr, 2, f"mlgo-policy-host: error: weights file {bad} is not a regular file")
    # the compiler here would take any flag: only the host's check can refuse the vocabulary
    compiler = [sys.executable, "-c", "pass", "x.c"]
    for bad in ("/dev/zero", fifo):
        p = run([sanitized_host, "--weights", weights, "--vocab", bad, "--", *compiler], env=env, timeout=60)
        one_line(p, p.stderr, 2, f"mlgo-policy-host: error: IR2Vec vocabulary {bad} is not a regular file")


def test_python_readers_refuse_a_vocabulary_that_is_a_device_or_fifo(policy, tmp_path: Path) -> None:  # noqa: F811
    """`mlgo_cc.py --vocab /dev/zero` and `vocab validate /dev/zero` read until MemoryError (a traceback); the farm's
    launcher called /dev/zero "not found". Each runs with its address space capped, so the old reads fail fast."""
    model, _, _ = policy
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    mlgo_farm = Path(sys.executable).with_name("mlgo-farm")
    compile_ = ["clang-22", "-Oz", "-c", "x.c"]
    for bad in ("/dev/zero", str(fifo)):
        p = run([sys.executable, standalone.SOURCE, "--model", model, "--vocab", bad, "--", *compile_],
                preexec_fn=capped(2), timeout=60)
        one_line(p, p.stderr, 2, f"mlgo-cc: error: IR2Vec vocabulary {bad} is not a regular file")
        p = run([mlgo_farm, "vocab", "validate", bad, "--kind", "ir"], preexec_fn=capped(1), timeout=60)
        kind = "a device or socket" if bad == "/dev/zero" else "a FIFO"
        one_line(p, p.stderr, 2, f"mlgo-farm: error: vocabulary file {bad} is {kind}, not a regular file")
        p = run([Path(sys.executable).with_name("mlgo-farm-cc"), "--policy", "heuristic", "--vocab", bad, "--",
                 *compile_], preexec_fn=capped(1), timeout=60)
        one_line(p, p.stderr, 2, f"mlgo-farm: error: IR2Vec vocabulary {bad} is {kind}, not a regular file")


# -- item 8: streams and a compiler that reads no advice --------------------------------------------------------------
def test_native_host_bounds_hostile_streams(sanitized_host: Path, policy, tmp_path: Path) -> None:  # noqa: F811
    """A stream without newlines grew the host by megabytes a second; a header asking for a huge observation had it
    wait (and buffer) for it. Both are refused in one line, under the sanitizers."""
    _, weights, _ = policy
    env = {**os.environ, **SANITIZED}
    p = run([sanitized_host, "--weights", weights, "--decide"], input="x" * (4 << 20), env=env)
    one_line(p, p.stderr, 1, "mlgo-policy-host: error: protocol: a line of more than 1048576 bytes without a newline")
    p = run([sanitized_host, "--weights", weights, "--timeout", "3", "--", *hostile(tmp_path, "noline")], env=env)
    one_line(p, p.stderr, 1, "mlgo-policy-host: error: protocol: a line of more than 1048576 bytes without a newline")
    huge = '{"features": [' + ", ".join(f'{{"name": "f{i}", "type": "int64_t", "shape": [16777216]}}'
                                         for i in range(2)) + '], "advice": {"name": "inlining_decision", ' \
                                                              '"type": "int64_t", "shape": [1]}}\n{"observation": 0}\n'
    p = run([sanitized_host, "--weights", weights, "--decide"], input=huge, env=env)
    one_line(p, p.stderr, 1, "protocol: observations of 268435456 bytes, more than this host takes")


def test_native_host_stops_a_compiler_that_reads_no_advice(sanitized_host: Path, policy,  # noqa: F811
                                                            tmp_path: Path) -> None:
    """The host blocked in write() for ever, deaf to --timeout and to SIGTERM (the write was retried on EINTR)."""
    _, weights, header = policy
    env = {**os.environ, **SANITIZED}
    p = run([sanitized_host, "--weights", weights, "--timeout", "3", "--", *hostile(tmp_path, "unread", header)],
            env=env, timeout=120)
    one_line(p, p.stderr, 1, "read no advice for 3s (--timeout) after ")
    assert not Path(f"/proc/{(tmp_path / 'sent').read_text()}").exists(), "the compiler was killed and reaped"
    (tmp_path / "sent").unlink()
    host = subprocess.Popen([str(sanitized_host), "--weights", str(weights), "--",
                             *hostile(tmp_path, "unread", header)], stderr=subprocess.PIPE, text=True, env=env)
    try:  # `sent`: the host read the last observation, whose advice no longer fits: it waits to write it
        wait_until(lambda: (tmp_path / "sent").exists() or host.poll() is not None, 120, "the stream to be read")
        host.send_signal(signal.SIGTERM)
        _, err = host.communicate(timeout=60)
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    assert host.returncode == 143 and err == "mlgo-policy-host: terminated\n", err
    assert not Path(f"/proc/{(tmp_path / 'sent').read_text()}").exists(), "the compiler was killed and reaped"


def test_the_python_standalone_host_has_the_same_bounds(policy, tmp_path: Path) -> None:  # noqa: F811
    """mlgo_cc.py buffered a stream without newlines until memory ran out and blocked in os.write for ever."""
    model, _, header = policy
    cmd = [sys.executable, standalone.SOURCE, "--model", model, "--timeout", "3", "--"]
    p = run([*cmd, *hostile(tmp_path, "noline")], preexec_fn=capped(2))
    one_line(p, p.stderr, 1, "mlgo-cc: error: protocol: a line of more than 1048576 bytes without a newline")
    p = run([*cmd, *hostile(tmp_path, "unread", header)], preexec_fn=capped(2))
    one_line(p, p.stderr, 1, "mlgo-cc: error: the compiler (pid ")
    assert "read no advice for 3s after " in p.stderr
    assert not Path(f"/proc/{(tmp_path / 'sent').read_text()}").exists(), "the compiler was killed and reaped"


def test_the_farm_host_has_the_same_bounds(policy, tmp_path: Path) -> None:  # noqa: F811
    """policyhost/host.py (every compile of the farm's launcher) reached 887 MB in 10 s on a stream without newlines
    and blocked in os.write for ever on a compiler that reads no advice. A SIGALRM bounds the old code's hang here."""
    from policyhost.host import Channel, HostError, serve
    from policyhost.launcher import interactive_flags
    from policyhost.runnable import HeuristicPolicy

    _, _, header = policy

    def alarm(signum: int, frame: object) -> None:
        raise TimeoutError("the host is still blocked after 120 s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(120)
    try:
        for mode, error, said in (("noline", protocol.ProtocolError, "a line of more than 1048576 bytes without a "
                                   "newline"), ("unread", HostError, "read no advice for 3s after ")):
            with Channel() as ch:
                proc = subprocess.Popen([*hostile(tmp_path, mode, header), *interactive_flags(ch.base)],
                                        start_new_session=True)
                with pytest.raises(error) as e:
                    serve(ch, proc, HeuristicPolicy(), timeout=3)
                assert said in str(e.value) and "\n" not in str(e.value), str(e.value)
                assert proc.returncode is not None, "the compiler was killed and reaped"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
