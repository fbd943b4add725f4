"""The `mlgo-farm` entry point itself: usage errors are one line and exit 2."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("argv, says", [
    (["vocab", "show", "--kind", "bogus"], "mlgo-farm vocab show: error: argument --kind: invalid choice: 'bogus'"),
    (["triplets", "ir"], "mlgo-farm triplets: error: the following arguments are required"),
    (["no-such-verb"], "mlgo-farm: error: argument VERB: invalid choice: 'no-such-verb'"),
])
def test_usage_errors_are_one_line(argv: list[str], says: str) -> None:
    p = subprocess.run([sys.executable, "-m", "farm.cli", *argv], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith(says) and p.stderr.endswith("--help)\n")
    assert p.stderr.count("\n") == 1, p.stderr


@pytest.mark.parametrize("argv, says", [
    (["triplets", "ir", "corpus", "-o", "out", "-j", "0"], "argument -j/--jobs: '0' is not a positive integer"),
    (["triplets", "ir", "corpus", "-o", "out", "-j", "-3"], "argument -j/--jobs: '-3' is not a positive integer"),
    (["triplets", "ir", "corpus", "-o", "out", "--timeout", "nan"], "argument --timeout: 'nan' is not a positive"),
    (["triplets", "ir", "corpus", "-o", "out", "--timeout", "-1"], "argument --timeout: '-1' is not a positive"),
    (["corpus", "sources", "src", "-o", "out", "-j", "0"], "argument -j/--jobs: '0' is not a positive integer"),
    (["policy", "train-bc", "corpus", "-o", "m.onnx", "--holdout", "1.5"], "argument --holdout: '1.5' is not a number"),
    (["regress", "run", "--corpus", "c", "--repeats", "-1"], "argument --repeats: '-1' is not an integer >= 0"),
])
def test_counts_and_timeouts_are_checked_when_parsed(argv: list[str], says: str) -> None:
    p = subprocess.run([sys.executable, "-m", "farm.cli", *argv], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1, p.stderr
    assert says in p.stderr


def test_a_closed_stdout_is_not_a_traceback(tmp_path: Path) -> None:
    """`mlgo-farm policy inspect MODEL | head`: the reader went away before the farm wrote."""
    from tests.policyhost.conftest import write_onnx_policy

    model = write_onnx_policy(tmp_path / "m.onnx", "callee_basic_block_count", "Less", 3)
    p = subprocess.Popen([sys.executable, "-m", "farm.cli", "policy", "inspect", str(model)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # before the verb prints anything: its first write meets a closed pipe
    _, err = p.communicate(timeout=60)
    assert err == b"" and p.returncode == 141  # 128 + SIGPIPE, as a shell pipeline reports it


def test_deeply_nested_json_input_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "compile_commands.json"
    db.write_text("[" * 100_000 + "]" * 100_000)
    p = subprocess.run([sys.executable, "-m", "farm.cli", "corpus", "sources", str(db), "-o", str(tmp_path / "c")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert p.stderr == f"mlgo-farm: error: {db}: JSON nested too deeply to read\n"
    assert not (tmp_path / "c").exists()


def _holding_clang(bin_dir: Path, gate: Path) -> Path:
    """The real LLVM, except that clang, for a source named HOLDME.c, says so in `gate`.held and waits while
    `gate` exists (at most 120 s): the test decides when that compile ends, not the machine's speed."""
    from farm.toolchain import Toolchain

    real = Toolchain.from_settings().bin_dir
    bin_dir.mkdir()
    for tool in real.iterdir():
        (bin_dir / tool.name).symlink_to(tool)
    (bin_dir / "clang").unlink()
    (bin_dir / "clang").write_text(
        "#!/bin/sh\n"
        f'case "$*" in *HOLDME.c*) touch "{gate}.held"; n=0\n'
        f'  while [ -e "{gate}" ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done ;; esac\n'
        f'exec {real / "clang"} "$@"\n')
    (bin_dir / "clang").chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_a_corpus_leaves_no_temporary_directory(tmp_path: Path, sig: signal.Signals) -> None:
    """What a builder's stop or a supervisor sends (SIGTERM) cleans up as Ctrl-C does: one line, no `.OUT.*.tmp`."""
    from tests.conftest import CSRC
    from tests.servers import wait_until

    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(CSRC / "sort.c", src / "sort.c")
    shutil.copy(CSRC / "hash.c", src / "HOLDME.c")
    gate = tmp_path / "gate"
    gate.touch()
    bin_dir = _holding_clang(tmp_path / "bin", gate)
    out = tmp_path / "out" / "corpus"
    p = subprocess.Popen([sys.executable, "-m", "farm.cli", "corpus", "sources", str(src), "-o", str(out),
                          "--llvm-bin", str(bin_dir), "--no-cache", "-j", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         # as a terminal starts it: a test run in the background (`make test &`) inherits SIGINT
                         # ignored, and Python then installs no Ctrl-C handler at all
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_until(lambda: Path(f"{gate}.held").exists() or p.poll() is not None, 60, "the held compile")
        assert p.poll() is None, p.communicate()
        assert [d.name for d in out.parent.iterdir() if d.name.endswith(".tmp")], "the corpus is being written"
        p.send_signal(sig)
        gate.unlink()  # the compile in flight ends; the farm must then clean up and exit
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    name = {signal.SIGTERM: "terminated", signal.SIGINT: "interrupted"}[sig]
    assert (p.returncode, err) == (128 + sig, f"mlgo-farm: error: {name}\n")
    assert list(out.parent.iterdir()) == [], "no temporary directory and no half corpus"


@pytest.mark.parametrize("prog", ["mlgo-farm", "mlgo-farm-cc"])
def test_version_names_the_farm_from_its_metadata_and_the_llvm_it_drives(prog: str, toolchain) -> None:
    from importlib.metadata import version

    got = subprocess.run([str(Path(sys.executable).with_name(prog)), "--version"], capture_output=True, text=True,
                         timeout=60)
    assert got.returncode == 0 and got.stderr == "", got.stderr
    assert got.stdout.splitlines() == [f"{prog} {version('mlgo-farm')}",
                                       f"LLVM {toolchain.version} ({toolchain.bin_dir})"]


@pytest.mark.parametrize("code", [130, 143])
def test_an_interrupted_command_ends_though_a_worker_thread_never_does(code: int) -> None:
    """SIGTERM always ends a process: a verb that was interrupted (130, 143) but left a worker thread in flight (a
    compile or a model run that did not stop) would hang at exit, where Python joins every worker thread."""
    script = ("import threading; from farm import cli; threading.Thread(target=threading.Event().wait).start(); "
              f"cli.main = lambda: {code}; cli.console()")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert p.returncode == code, p.stderr
