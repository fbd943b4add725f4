"""Build a corpus or a benchmark with one variant: the heuristic (plain clang) or a policy (the launcher).

Both variants go through the same code path: one clang command per object (from the farm's
Toolchain), optionally behind a compiler launcher (`mlgo-farm policy-cc --policy P --`), timed
one by one. A module that fails to compile is recorded with the compiler's one-line message
and skipped; the rest of the build goes on. clang compiles a `.cc`/`.cpp` source as C++ by its
suffix, behind the launcher too; a benchmark with a C++ source links with `clang++` (libstdc++), as
the farm links a package's files (workers/linked.py `driver`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from concurrent.futures import CancelledError, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from farm import jsonio
from farm.atomic import atomic_dir
from farm.errors import FarmError, InputError
from farm.progress import Progress
from farm.toolchain import Toolchain, describe_failure
from policyhost import advisors
from regression.benchmarks import Benchmark
from workers.linked import driver, linker_flags, thin_index_flags

log = logging.getLogger(__name__)

HEURISTIC = "heuristic"
POLICY = "policy"
STOP_GRACE = 5.0  # seconds a timed-out compile gets to unwind after SIGTERM before its group is killed


@dataclass(frozen=True)
class Variant:
    """How to compile: `launcher` goes before clang's argv, `flags` after the build's own flags."""

    name: str
    launcher: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()

    def argv(self, toolchain: Toolchain, args: Sequence[str]) -> list[str]:
        return [*self.launcher, *toolchain.command("clang", [*args, *self.flags])]


def heuristic_variant() -> Variant:
    """LLVM's default heuristic: plain clang."""
    return Variant(HEURISTIC)


def policy_variant(policy: str, vocab: Path | None = None, timeout: float | None = None,
                   advisor: str = advisors.DEFAULT, settings=None) -> Variant:
    """Compiles through the policy launcher (the lean `policyhost.cc`, what `policy-cc --print-launcher` prints);
    `settings` name the LLVM it runs (`[llvm] bin_dir`: the run's toolchain, e.g. a bisect's build of a commit)."""
    from policyhost.cc import launcher_command

    vocab_arg = str(vocab) if vocab is not None else None
    return Variant(POLICY, tuple(launcher_command(str(policy), vocab=vocab_arg, timeout=timeout, advisor=advisor,
                                                  settings=settings)))


@dataclass(frozen=True)
class ObjectResult:
    """One compiled module: its object (None when it failed), compile seconds, or the error line."""

    module: str
    obj: Path | None
    seconds: float
    error: str | None = None


@dataclass
class BuildResult:
    variant: str
    objects: list[ObjectResult] = field(default_factory=list)
    binary: Path | None = None
    error: str | None = None  # why the binary could not be made

    @property
    def ok_objects(self) -> dict[str, ObjectResult]:
        return {o.module: o for o in self.objects if o.obj is not None}

    @property
    def failures(self) -> dict[str, str]:
        return {o.module: o.error or "failed" for o in self.objects if o.obj is None}

    @property
    def compile_seconds(self) -> float:
        return sum(o.seconds for o in self.objects)


class InFlight:
    """The process groups of a build's compiles in flight, so that an interrupt stops every one of them.

    A build's compiles run in pool threads, while SIGTERM and Ctrl-C land in the main thread (farm/cli.py raises
    Terminated there). Left alone, the pool's shutdown waited for every queued compile and each thread's compiler
    ran to its end: a Buildbot stop of a 20,000-file benchmark went on compiling for minutes. `stop` starts no
    compile after it, asks the running groups to stop (SIGTERM: the launcher reaps its compiler and removes its
    channel) and SIGKILLs whatever of them is left after the grace.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()
        self._stopped = False

    def popen(self, argv: Sequence[str], **kwargs) -> subprocess.Popen:
        """Start `argv` leading a process group of its own; CancelledError once the build is stopped. Under the
        lock, so that a compile either starts before `stop` (and is stopped by it) or not at all."""
        with self._lock:
            if self._stopped:
                raise CancelledError()
            p = subprocess.Popen(argv, start_new_session=True, **kwargs)
            self._running.add(p)
            return p

    def done(self, p: subprocess.Popen) -> None:
        with self._lock:
            self._running.discard(p)

    def stop(self, grace: float) -> None:
        """No compile starts from now on; the running ones get SIGTERM, and SIGKILL after `grace` seconds."""
        with self._lock:
            self._stopped = True
            running = list(self._running)
        for p in running:
            _signal_group(p, signal.SIGTERM)
        deadline = time.monotonic() + grace
        try:
            for p in running:
                try:
                    p.wait(max(deadline - time.monotonic(), 0.01))
                except subprocess.TimeoutExpired:
                    _signal_group(p, signal.SIGKILL)
        except BaseException:  # a second SIGTERM or Ctrl-C during the grace: no compiler is left running
            for p in running:
                _signal_group(p, signal.SIGKILL)
            raise


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    """`sig` to the group `p` leads, unless `p` was reaped (its pid, and so its group's id, may be another's now)."""
    if p.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, sig)


def compile_object(toolchain: Toolchain, variant: Variant, module: str, args: Sequence[str], obj: Path,
                   timeout: float = 600, in_flight: InFlight | None = None) -> ObjectResult:
    """Compile one module; failures become an ObjectResult with the compiler's message. `in_flight`: the build's
    compiles, which an interrupt stops (CancelledError for a compile it did not let start)."""
    obj.parent.mkdir(parents=True, exist_ok=True)
    argv = variant.argv(toolchain, [*args, "-o", str(obj)])
    start = time.perf_counter()
    returncode, stderr = run_bounded(argv, timeout, in_flight=in_flight)
    seconds = time.perf_counter() - start
    if returncode is None:
        return ObjectResult(module, None, seconds, f"compile timed out after {timeout:g}s")
    if returncode != 0 or not obj.is_file():
        tool = "policy-cc" if variant.launcher else "clang"
        return ObjectResult(module, None, seconds, describe_failure(tool, returncode, stderr))
    return ObjectResult(module, obj, seconds)


def run_bounded(argv: Sequence[str], timeout: float, grace: float | None = None, *, stdin: Path | None = None,
                cwd: Path | None = None, env: dict[str, str] | None = None,
                in_flight: InFlight | None = None) -> tuple[int | None, bytes]:
    """Run `argv` (reading `stdin`, a file, else nothing; `env` added to the environment) in its own process group:
    (exit status, stderr), or (None, b"") when it timed out. `in_flight` starts it (InFlight: a build's compiles,
    which an interrupt in another thread stops).

    On a timeout (or an interruption) it is stopped the way make stops a compile: SIGTERM, on which
    the launcher kills and reaps its compiler and removes its channel, then SIGKILL to the whole
    group after `grace` seconds (default STOP_GRACE) for whatever is still running.
    """
    grace = STOP_GRACE if grace is None else grace
    with open(stdin, "rb") if stdin is not None else open(os.devnull, "rb") as inp:
        kwargs = {"stdin": inp, "stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "cwd": cwd,
                  "env": {**os.environ, **env} if env else None}
        p = in_flight.popen(argv, **kwargs) if in_flight else subprocess.Popen(argv, start_new_session=True, **kwargs)
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop_group(p, grace)
        return None, b""
    except BaseException:
        _stop_group(p, grace)
        raise
    finally:
        if in_flight:
            in_flight.done(p)
    return p.returncode, err


def _stop_group(p: subprocess.Popen, grace: float) -> None:
    """SIGTERM the group `p` leads, SIGKILL it if `p` has not exited within `grace` seconds; reap `p`."""
    _signal_group(p, signal.SIGTERM)
    try:
        p.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        _signal_group(p, signal.SIGKILL)
        p.communicate()


def _compile_all(toolchain: Toolchain, variant: Variant, jobs: list[tuple[str, list[str], Path]],
                 parallel: int, timeout: float) -> list[ObjectResult]:
    """Every job's compile, `parallel` at a time, with a progress line (farm/progress.py: a 20,000-file benchmark
    runs for long). Interrupted (SIGTERM, Ctrl-C), the queued compiles are dropped and the running ones stopped
    (InFlight), and the interrupt goes on at once: no thread is waited for (farm/cli.py `console` exits past one
    still in flight)."""
    in_flight = InFlight()
    pool = ThreadPoolExecutor(max_workers=max(1, parallel))
    interrupted = False
    with Progress(len(jobs), f"{variant.name}: compiles", is_failure=lambda r: r.obj is None, unit="file") as bar:
        try:
            futures = {pool.submit(compile_object, toolchain, variant, m, a, o, timeout, in_flight): i
                       for i, (m, a, o) in enumerate(jobs)}
            results: list[ObjectResult] = [None] * len(jobs)  # type: ignore[list-item]
            for f in as_completed(futures):
                results[futures[f]] = f.result()
                bar.update(results[futures[f]])
            return results
        except BaseException:
            interrupted = True
            pool.shutdown(wait=False, cancel_futures=True)
            in_flight.stop(STOP_GRACE)
            raise
        finally:
            pool.shutdown(wait=not interrupted)


def _thin_backends(toolchain: Toolchain, bench: Benchmark, variant: Variant, prelinked: BuildResult, out_dir: Path,
                   opt_flags: Sequence[str], parallel: int, timeout: float,
                   profile_flags: Sequence[str] = ()) -> BuildResult:
    """A distributed ThinLTO build's second half (workers/thinlto.py makes a package's the same way): the pre-link
    objects thin-linked with `--thinlto-index-only`, then one backend per module through the variant (the policy's
    launcher decides there as in a per-file compile), each module's result its backend's object and both compiles'
    seconds. A thin link that fails is the build's error, in one line."""
    objs = [o.obj for o in prelinked.objects]
    try:
        toolchain.run(driver(o.module for o in prelinked.objects),
                      [*thin_index_flags(toolchain, opt_flags), *map(str, objs), *bench.libs, "-o",
                       str(out_dir / "thin-link")],
                      subject=f"ThinLTO thin link of {bench.name}")
    except FarmError as e:
        return BuildResult(variant.name, prelinked.objects, error=str(e))
    jobs = [(o.module, ["-c", *opt_flags, *profile_flags, "-x", "ir", str(o.obj),
                        f"-fthinlto-index={o.obj}.thinlto.bc"], out_dir / "native" / o.obj.name)
            for o in prelinked.objects]
    backends = _compile_all(toolchain, variant, jobs, parallel, timeout)
    return BuildResult(variant.name, [dataclasses.replace(b, seconds=b.seconds + p.seconds)
                                      for b, p in zip(backends, prelinked.objects, strict=True)])


def build_configuration(config: dict) -> str:
    """How both variants were built, as the header says it: the optimization flags, `PGO` and `ThinLTO` when on
    ("-O2 + PGO + ThinLTO"); a speed number means little without saying which."""
    flags = " ".join(map(str, config.get("opt_flags") or []))
    return " + ".join([flags or "-", *(name for key, name in (("pgo", "PGO"), ("thinlto", "ThinLTO"))
                                      if config.get(key))])


def corpus_modules(corpus: Path) -> list[str]:
    """Module names listed in the corpus description (LLVM's extract_ir layout)."""
    desc = Path(corpus) / "corpus_description.json"
    if not desc.exists():
        raise InputError(f"{corpus} is not a corpus: no corpus_description.json")
    data = jsonio.load_file(desc, "corpus description")  # the farm's one JSON reader: hostile text is one line
    if not isinstance(data, dict) or "modules" not in data:
        raise InputError(f"{desc}: malformed corpus description (no 'modules')")
    modules = data["modules"]
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        raise InputError(f"{desc}: 'modules' must be a list of names")
    if not modules:
        raise InputError(f"{desc}: the corpus lists no modules")
    return modules


def build_corpus(toolchain: Toolchain, corpus: Path, variant: Variant, out_dir: Path, opt_flags: Sequence[str],
                 parallel: int = 2, timeout: float = 600) -> BuildResult:
    """Compile every module's bitcode to an object with `opt_flags` (for example `-Oz`)."""
    corpus = Path(corpus)
    jobs = []
    for m in corpus_modules(corpus):
        bc = corpus / f"{m}.bc"
        jobs.append((m, ["-c", *opt_flags, "-Wno-override-module", str(bc)], Path(out_dir) / f"{m}.o"))
    return BuildResult(variant.name, _compile_all(toolchain, variant, jobs, parallel, timeout))


def build_benchmark(toolchain: Toolchain, bench: Benchmark, root: Path, variant: Variant, out_dir: Path,
                    opt_flags: Sequence[str], parallel: int = 2, timeout: float = 600,
                    thinlto: bool = False, profile_flags: Sequence[str] = ()) -> BuildResult:
    """Compile the benchmark's sources with the variant and link them (plain clang, or clang++ when a source is C++;
    ld.lld as the farm links every package: workers/linked.py) into its binary: the file a size row judges.
    `thinlto`: as a distributed ThinLTO build (`-flto=thin` pre-link, an index-only thin link, one backend per
    module, then the link). `profile_flags` (regression/pgo.py: `-fprofile-generate=`, `-fprofile-use=`) go to
    every compile, the pre-link's and the backends', and to the link, as a user's CFLAGS and LDFLAGS."""
    root = Path(root)
    flags = bench.compile_flags(root)
    jobs = []
    for src in bench.source_files(root):
        rel = src.relative_to(root).as_posix()
        jobs.append((rel, ["-c", *opt_flags, *(["-flto=thin"] if thinlto else []), *profile_flags, *flags, str(src)],
                     Path(out_dir) / "obj" / (rel.replace("/", "__").removesuffix(".c") + ".o")))
    result = BuildResult(variant.name, _compile_all(toolchain, variant, jobs, parallel, timeout))
    if not result.failures and thinlto:
        result = _thin_backends(toolchain, bench, variant, result, Path(out_dir), opt_flags, parallel, timeout,
                                profile_flags)
    if result.failures:
        first = next(iter(result.failures.items()))
        result.error = f"{len(result.failures)} source(s) failed, first {first[0]}: {first[1]}"
        return result
    if result.error:
        return result
    binary = Path(out_dir) / "bin" / bench.binary
    try:
        with atomic_dir(binary.parent, bench.binary) as tmp:
            objs = [str(o.obj) for o in result.objects]
            toolchain.run(driver(o.module for o in result.objects),
                          [*opt_flags, *profile_flags, *linker_flags(toolchain), *objs, *bench.libs, "-o",
                           str(tmp / bench.binary)],
                          subject=f"link of {bench.name}")
    except FarmError as e:
        result.error = str(e)
        return result
    result.binary = binary
    return result
