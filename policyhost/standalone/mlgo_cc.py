#!/usr/bin/env python3
"""mlgo-cc: compile with an MLGO inlining policy (an ONNX model) and Debian's or Ubuntu's clang, nothing else.

    python3 mlgo-cc.py --model model.onnx [--vocab vocab.json] -- clang-22 -Oz -c a.c -o a.o
    make CC="python3 mlgo-cc.py --model model.onnx -- clang-22" CFLAGS=-Oz
    cmake -DCMAKE_C_COMPILER_LAUNCHER="python3;mlgo-cc.py;--model;model.onnx;--" -DCMAKE_C_FLAGS=-Oz ...

Distribution clang has no built-in model: with `-enable-ml-inliner=release` and an interactive channel
it asks an outside process for every inlining decision. This file is that process for one compile: it
makes a private FIFO pair, adds LLVM's flags, starts the compiler and answers its channel with the model
until the compiler exits. It needs Python 3.10 or newer, numpy and onnxruntime, and nothing of the
mlgo-farm that published the model (the farm serves this file beside its policies; its tests check that
the flags and wire format here are the farm's own).

The channel (LLVM's InteractiveModelRunner): the compiler writes to BASE.out one JSON header line
{"features": [spec...], "advice": spec}, then per decision an optional {"context": NAME} line, an
{"observation": N} line, the raw feature tensors in header order (little-endian) and a newline; the
host answers each observation on BASE.in with the raw advice tensor.

The model: each input is named after a feature the compiler sends (any subset; `inlining_default`, LLVM's
own decision, is sent; `callee_embedding`/`caller_embedding` only with --vocab) and takes it with a leading
batch dimension of 1, as float32 or int64. Output 0 is the advice itself (integer), one logit (float:
positive means inline) or two scores (no, yes: the higher wins). NaN or infinite advice fails the compile.

It never waits forever: a compiler that neither talks nor uses CPU for --timeout seconds, or sends nothing
for --max-silence seconds after opening the channel, is killed with everything it started (it runs in a
session of its own, whose process group is killed, also when this host gets SIGTERM, SIGINT or SIGHUP); a
model run that takes longer than --timeout is stopped. The vocabulary is checked before the compiler
starts (LLVM's sections, one dimension, finite numbers). Every failure is one line on stderr and a
non-zero exit; a compiler's own failure keeps its message and exit code; commands that compile nothing
(linking) run unchanged.

Faster: with `mlgo-policy-host` built beside this file from `mlgo-policy-host.c` and the policy's `model.weights`
beside the model, this file hands every compile to that native host (the same decisions, bit for bit); a build
that names the native host as its launcher directly also skips this interpreter's start-up.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

VERSION = "1"
PROG = "mlgo-cc"
USAGE = (f"usage: {PROG} --model MODEL.onnx [--vocab VOCAB.json] [--timeout S] [--max-silence S] "
         "-- COMPILER ARGS...")

# -- LLVM's inliner in interactive mode (the mlgo-farm's policyhost/advisors.py; its tests compare) --------
ENABLE_FLAG = "-enable-ml-inliner=release"
CHANNEL_FLAG = "-inliner-interactive-channel-base"
#: LLVM's own decision travels with every observation (as the feature DEFAULT_FEATURE)
EXTRA_FLAGS = ("-inliner-interactive-include-default",)
#: LLVM 22 turns the embedding features on with the first and reads the vocabulary from the second
VOCAB_FLAGS = ("-ml-inliner-ir2vec-vocab-file={vocab}", "-ir2vec-vocab-path={vocab}")
ADVICE = "inlining_decision"
DEFAULT_FEATURE = "inlining_default"
VOCAB_SECTIONS = ("Opcodes", "Types", "Arguments")
#: the largest float32: LLVM hands the embeddings to the policy as `float`, so a larger value arrives as inf
FLOAT32_MAX = 3.4028234663852886e38

#: LLVM's element type names as numpy dtypes (the compiler writes native little-endian)
ELEMENT_TYPES = {"float": "<f4", "double": "<f8", "int8_t": "i1", "uint8_t": "u1", "int16_t": "<i2",
                 "uint16_t": "<u2", "int32_t": "<i4", "uint32_t": "<u4", "int64_t": "<i8", "uint64_t": "<u8"}
#: model input and output types this host feeds and reads
ONNX_TYPES = {"tensor(float)": "float32", "tensor(int64)": "int64", "tensor(double)": "float64",
              "tensor(int32)": "int32"}
#: arguments that make clang compile (so the inliner, and the channel, run)
SOURCE_SUFFIXES = {".c", ".cc", ".cpp", ".cxx", ".c++", ".C", ".m", ".mm", ".i", ".ii", ".bc", ".ll"}

TIMEOUT = 60.0
SILENCE_FACTOR = 10  # default --max-silence: this many times --timeout
#: the native host a user may build beside this file (`clang -O2 -o mlgo-policy-host mlgo-policy-host.c -lm`); with
#: it and the model's weights file beside the model (`model.weights`), every compile runs through it: the same
#: decisions, without onnxruntime's start-up per compile
NATIVE_HOST = "mlgo-policy-host"
WEIGHTS_SUFFIX = ".weights"
_TICK_MS = 50
#: the longest line and the largest observation the host buffers (policyhost/protocol.py's bounds): a stream past
#: either is refused in one line, not buffered until memory runs out
MAX_LINE, MAX_OBSERVATION = 1 << 20, 1 << 26


class Failure(Exception):
    """A one-line error; `code` is the exit status (2: bad input or model, 1: the session failed)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def flags(base: str, vocab: str | None = None) -> list[str]:
    """The `-mllvm` options for one compile whose channel pair is `base`.{in,out}."""
    opts = [ENABLE_FLAG, f"{CHANNEL_FLAG}={base}", *EXTRA_FLAGS]
    if vocab is not None:
        opts += [f.format(vocab=vocab) for f in VOCAB_FLAGS]
    return [x for o in opts for x in ("-mllvm", o)]


def compiles_source(args: list[str]) -> bool:
    """Whether the compiler arguments compile a source or IR file (linking alone runs unchanged)."""
    prev = ""
    for a in args:
        if prev in ("-o", "-MF", "-MT", "-MQ"):
            prev = ""
            continue
        if not a.startswith("-") and os.path.splitext(a)[1] in SOURCE_SUFFIXES:
            return True
        if a == "-" and "-x" in args:
            return True
        prev = a
    return False


def output_sizes(dtype: str) -> tuple[int, ...]:
    """How many values per decision output 0 may give: one integer; one logit or two scores (no, yes)."""
    return (1, 2) if dtype.startswith("float") else (1,)


# -- the wire format ---------------------------------------------------------------------------------------
class Spec:
    """One tensor as LLVM declares it."""

    def __init__(self, d: object) -> None:
        if not isinstance(d, dict) or not isinstance(d.get("name"), str):
            raise Failure(f"protocol: bad tensor spec {d!r}")
        self.name, shape = d["name"], d.get("shape")
        if d.get("type") not in ELEMENT_TYPES:
            raise Failure(f"protocol: tensor {self.name}: unsupported element type {d.get('type')!r}")
        if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
            raise Failure(f"protocol: tensor {self.name}: bad shape {shape!r}")
        self.dtype, self.count = ELEMENT_TYPES[d["type"]], math.prod(shape)
        self.nbytes = self.count * int(self.dtype[-1])


class Header:
    """The session header: the features (with their byte offsets in an observation) and the advice."""

    def __init__(self, line: bytes) -> None:
        try:
            d = json.loads(line)
        except ValueError as e:
            raise Failure(f"protocol: header is not JSON: {e}") from None
        if not isinstance(d, dict) or not isinstance(d.get("features"), list) or "advice" not in d:
            raise Failure("protocol: the header lacks its 'features' list or 'advice' spec")
        self.features, self.advice = [Spec(f) for f in d["features"]], Spec(d["advice"])
        self.offsets: dict[str, tuple[int, Spec]] = {}
        pos = 0
        for f in self.features:
            self.offsets[f.name] = (pos, f)
            pos += f.nbytes
        self.size, self.key = pos, line
        if pos > MAX_OBSERVATION:
            raise Failure(f"protocol: observations of {pos} bytes, more than this host takes")


class Decoder:
    """Splits the compiler's byte stream into (header, observation index, raw feature bytes)."""

    def __init__(self) -> None:
        self.buf, self.header, self.context = bytearray(), None, None

    def feed(self, data: bytes):
        self.buf += data
        while True:
            nl = self.buf.find(b"\n")
            if nl < 0:
                if len(self.buf) > MAX_LINE:  # refused before it grows without bound
                    raise Failure(f"protocol: a line of more than {MAX_LINE} bytes without a newline")
                return
            line = bytes(self.buf[:nl])
            if self.header is None or line.startswith(b'{"features"'):  # a session opens (one per source file)
                self.header, self.context = Header(line), None
                del self.buf[:nl + 1]
                continue
            try:
                event = json.loads(line)
            except ValueError:
                raise Failure(f"protocol: expected an event line, got {line[:60]!r}") from None
            if isinstance(event, dict) and "context" in event:
                self.context = str(event["context"])
                del self.buf[:nl + 1]
                continue
            index = event.get("observation") if isinstance(event, dict) else None
            if type(index) is not int:
                raise Failure(f"protocol: expected an observation, got {line[:60]!r}")
            end = nl + 1 + self.header.size
            if len(self.buf) < end + 1:
                return
            if self.buf[end:end + 1] != b"\n":
                raise Failure(f"protocol: observation {index} is not followed by a newline")
            raw = bytes(self.buf[nl + 1:end])
            del self.buf[:end + 1]
            yield self.header, index, raw


# -- the model ---------------------------------------------------------------------------------------------
class Watchdog(threading.Thread):
    """Stops a model run that outlives its limit (an ONNX `Loop` that never ends) through RunOptions.terminate."""

    def __init__(self, options, limit: float) -> None:
        super().__init__(daemon=True)
        self.options, self.limit = options, limit
        self.cond, self.started_at, self.fired = threading.Condition(), None, False

    def run(self) -> None:
        with self.cond:
            while True:
                if self.started_at is None:
                    self.cond.wait()
                    continue
                left = self.started_at + self.limit - time.monotonic()
                if left > 0:
                    self.cond.wait(left)
                    continue
                self.options.terminate, self.fired, self.started_at = True, True, None

    def arm(self) -> None:
        with self.cond:
            self.started_at, self.fired = time.monotonic(), False
            self.options.terminate = False
            self.cond.notify()

    def disarm(self) -> bool:
        """Whether the run was stopped."""
        with self.cond:
            self.started_at = None
            return self.fired


class Model:
    """An ONNX policy run by onnxruntime (see the module docstring for what it must look like)."""

    def __init__(self, path: str, limit: float) -> None:
        import numpy as np
        import onnxruntime as ort

        self.np, self.path, self.name = np, path, os.path.basename(path)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1  # one host per compile, many compiles
        opts.log_severity_level = 3
        try:
            self.session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        except Exception as e:
            raise Failure(f"policy model {path} is not a valid ONNX model: {_first_line(e)}", 2) from None
        self.inputs = {}
        for i in self.session.get_inputs():
            if i.type not in ONNX_TYPES:
                raise Failure(f"policy model {self.name}: input {i.name!r} has unsupported type {i.type}", 2)
            self.inputs[i.name] = (ONNX_TYPES[i.type], list(i.shape))
        if not self.inputs:
            raise Failure(f"policy model {self.name} has no inputs", 2)
        out = self.session.get_outputs()[0]
        if out.type not in ONNX_TYPES:
            raise Failure(f"policy model {self.name}: output {out.name!r} has unsupported type {out.type}", 2)
        self.output, self.out_type = out.name, ONNX_TYPES[out.type]
        dims = out.shape[1:] if len(out.shape) > 1 else []
        if all(isinstance(d, int) and d > 0 for d in dims):
            self._check_size(math.prod(dims), out.shape)
        self.options = ort.RunOptions()
        self.options.log_severity_level = 4  # a stopped run is reported here, not logged by onnxruntime
        self.watchdog = Watchdog(self.options, limit)
        self.watchdog.start()
        self.feeds: list = []
        self.bound: bytes | None = None

    def _check_size(self, per_obs: int, shape: object) -> None:
        if per_obs not in output_sizes(self.out_type):
            what = "one integer advice" if not self.out_type.startswith("float") else \
                "one logit or two scores (no, yes) per inlining decision"
            raise Failure(f"policy model {self.name}: output {self.output!r} has shape {shape}, {per_obs} values "
                          f"per observation; the inliner takes {what}", 2)

    def bind(self, header: Header) -> None:
        """Check that the compiler sends every input, in a shape the model takes; plan the feeds."""
        if header.key == self.bound:
            return
        if header.advice.name != ADVICE:
            raise Failure(f"policy model {self.name} answers inlining decisions, not {header.advice.name!r}", 2)
        self.feeds = []
        for name, (dtype, shape) in self.inputs.items():
            if name not in header.offsets:
                hint = " (pass the IR2Vec vocabulary with --vocab)" if name.endswith("_embedding") else ""
                raise Failure(f"policy model {self.name} needs feature {name!r}, which the compiler does not "
                              f"send{hint}", 2)
            pos, spec = header.offsets[name]
            self.feeds.append((name, pos, spec, dtype, _feed_shape(self.name, name, shape, spec.count)))
        self.bound = header.key

    def decide(self, raw: bytes, index: int) -> int:
        np = self.np
        feed = {name: np.frombuffer(raw, dtype=spec.dtype, count=spec.count, offset=pos).astype(dtype).reshape(shape)
                for name, pos, spec, dtype, shape in self.feeds}
        self.watchdog.arm()
        try:
            values = self.session.run([self.output], feed, self.options)[0]
        except Exception as e:
            if self.watchdog.disarm():
                raise Failure(f"policy model {self.name} gave no advice within {self.watchdog.limit:g}s "
                              f"(observation {index}); its run was stopped", 2) from None
            raise Failure(f"policy model {self.name} failed on observation {index}: {_first_line(e)}", 2) from None
        self.watchdog.disarm()
        values = np.asarray(values).reshape(-1)
        self._check_size(values.size, list(np.shape(values)))
        if not self.out_type.startswith("float"):
            return int(values[0])
        if not np.isfinite(values).all():  # NaN > 0 is False: it would pass silently as "do not inline"
            fed = [n for n, v in feed.items() if v.dtype.kind == "f" and not np.isfinite(v).all()]
            why = (f": the compiler sent non-finite {fed[0]!r} (an IR2Vec vocabulary whose sums overflow a float?)"
                   if fed else "; refusing to guess a decision")  # the model is not to blame for inf features
            raise Failure(f"policy model {self.path} gave non-finite advice {values.tolist()[:4]} on "
                          f"observation {index}{why}", 2)
        return int(values[0] > 0) if values.size == 1 else int(np.argmax(values))


def _feed_shape(model: str, name: str, shape: list, count: int) -> tuple[int, ...]:
    """The shape to feed a feature of `count` elements into an input declared as `shape` (batch of 1)."""
    dims = [d if isinstance(d, int) and d > 0 else None for d in shape]
    if dims and dims[0] is None:
        dims[0] = 1
    known = math.prod(d for d in dims if d)
    if dims.count(None) > 1 or (None not in dims and known != count) or (None in dims and count % known):
        raise Failure(f"policy model {model}: input {name!r} has shape {shape}, the compiler sends {count} values", 2)
    return tuple(count // known if d is None else d for d in dims)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:300]


# -- the host ----------------------------------------------------------------------------------------------
def _cpu(pid: int) -> float:
    """CPU seconds used so far by `pid` and its live descendants (0 when unknown)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children", "rb") as f:
                    stack += [int(c) for c in f.read().split()]
        except (OSError, IndexError, ValueError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def _read(fd: int, limit: int = 1 << 20) -> bytes:
    """What the compiler wrote, at most about `limit` bytes (a compiler that never stops writing)."""
    chunks: list[bytes] = []
    while sum(map(len, chunks)) < limit:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def serve(proc: subprocess.Popen, rfd: int, wfd: int, model_path: str, timeout: float, max_silence: float) -> int:
    """Answer the compiler's channel until it exits; the number of decisions. Failure (compiler killed) if
    it stalls, breaks the format or the model cannot answer. The model is loaded when the compiler first
    asks, so a compile that never opens the channel costs no onnxruntime start-up."""
    decoder, model, decisions = Decoder(), None, 0
    poller = select.poll()
    poller.register(rfd, select.POLLIN)
    try:
        exit_fd = os.pidfd_open(proc.pid)  # wakes the poll the moment the compiler exits
        poller.register(exit_fd, select.POLLIN)
    except (AttributeError, OSError):
        exit_fd = None
    window, cpu_at, talked_at = time.monotonic(), _cpu(proc.pid), None
    try:
        while True:
            poller.poll(_TICK_MS)
            exited = proc.poll() is not None  # before reading: all it wrote before exiting is then read
            data = _read(rfd)
            if data:
                window = talked_at = time.monotonic()
                for header, index, raw in decoder.feed(data):
                    if model is None:
                        model = Model(model_path, timeout)
                    model.bind(header)
                    value = model.decide(raw, index)
                    advice = model.np.array([value]).astype(header.advice.dtype).tobytes()
                    if len(advice) != header.advice.nbytes:
                        raise Failure(f"protocol: the advice {header.advice.name} is not one value")
                    _write(wfd, advice, timeout, proc.pid, decisions)
                    decisions += 1
                if not exited:
                    continue
            if exited:
                if decoder.buf and proc.returncode == 0:
                    raise Failure(f"the compiler exited leaving a truncated message ({len(decoder.buf)} bytes) "
                                  "on the channel")
                return decisions
            now = time.monotonic()
            if talked_at is not None and now - talked_at > max_silence:
                raise Failure(f"the compiler (pid {proc.pid}) sent nothing on its channel for {max_silence:g}s "
                              f"(--max-silence) after {decisions} decisions; killed it")
            if now - window > timeout:
                cpu = _cpu(proc.pid)
                if cpu <= cpu_at:
                    raise Failure(f"the compiler (pid {proc.pid}) stopped: no data and no CPU progress for "
                                  f"{timeout:g}s after {decisions} decisions; killed it")
                window, cpu_at = now, cpu
    finally:
        if exit_fd is not None:
            os.close(exit_fd)


def _write(fd: int, data: bytes, timeout: float, pid: int, decisions: int) -> None:
    """Write to the compiler's non-blocking FIFO within `timeout` seconds: a compiler that reads no advice filled
    it, and a blocking write waited for ever, deaf to --timeout."""
    deadline, poller = time.monotonic() + timeout, select.poll()
    poller.register(fd, select.POLLOUT)
    while data:
        with contextlib.suppress(BlockingIOError):
            data = data[os.write(fd, data):]
            continue
        if time.monotonic() >= deadline:
            raise Failure(f"the compiler (pid {pid}) read no advice for {timeout:g}s after {decisions} decisions; "
                          "killed it")
        poller.poll((deadline - time.monotonic()) * 1000)


def _kill(proc: subprocess.Popen) -> None:
    """Kill the compiler and all it started, then reap it. It leads a session of its own (start_new_session),
    so its pid is its process group's: killing the pid alone would leave its children (a driver's jobs, a
    wrapper's real compiler) running with nobody to stop them. Not yet reaped, the group is surely still ours."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):  # the compiler may have made a group of its own
            os.killpg(proc.pid, signal.SIGKILL)
        proc.kill()
        proc.wait()


def run(model: str, vocab: str | None, command: list[str], timeout: float, max_silence: float) -> int:
    """One compile with its own channel pair and host; the exit status."""
    if not compiles_source(command[1:]):  # linking and the like: the compiler alone, as if not launched
        try:
            os.execvp(command[0], command)
        except OSError as e:
            raise Failure(f"cannot run {command[0]}: {e.strerror}", 127) from None
    with tempfile.TemporaryDirectory(prefix="mlgo-cc-") as tmp:  # mode 0700: the channel is private
        base = os.path.join(tmp, "channel")
        os.mkfifo(base + ".in", 0o600)
        os.mkfifo(base + ".out", 0o600)
        # read-write ends never block on open and keep the pipes alive between sessions
        wfd, rfd = os.open(base + ".in", os.O_RDWR | os.O_NONBLOCK), os.open(base + ".out", os.O_RDWR | os.O_NONBLOCK)
        try:
            try:
                # its own session: its children are killed with it, and the terminal's signals reach the host,
                # which kills the whole group (Ctrl-C, SIGHUP)
                proc = subprocess.Popen([*command, *flags(base, vocab)], start_new_session=True)
            except OSError as e:
                raise Failure(f"cannot run {command[0]}: {e.strerror}", 127) from None
            try:
                serve(proc, rfd, wfd, model, timeout, max_silence)
                rc = proc.wait()
            except BaseException:  # a failure, Ctrl-C, SIGTERM, SIGHUP: no compiler or child of it is left behind
                _kill(proc)
                raise
        finally:
            os.close(rfd)
            os.close(wfd)
    if rc < 0:
        raise Failure(f"{os.path.basename(command[0])} crashed with signal {-rc}")
    return rc


def _seconds(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < math.inf:
        raise Failure(f"{what} must be a positive number of seconds, not {text!r}", 2)
    return value


def parse(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """`--name VALUE` / `--name=VALUE` options, then `--` (optional) and the compiler command."""
    values, i = {}, 0
    while i < len(argv) and argv[i].startswith("--"):
        if argv[i] == "--":
            i += 1
            break
        name, eq, value = argv[i][2:].partition("=")
        if name not in ("model", "vocab", "timeout", "max-silence"):
            raise Failure(f"unknown option {argv[i]!r} ({USAGE})", 2)
        if not eq:
            i += 1
            if i >= len(argv):
                raise Failure(f"option --{name} needs a value", 2)
            value = argv[i]
        values[name] = value
        i += 1
    if not argv[i:]:
        raise Failure(f"no compiler command given ({USAGE})", 2)
    if "model" not in values:
        raise Failure(f"--model MODEL.onnx is required ({USAGE})", 2)
    return values, argv[i:]


def check_vocab(path: str) -> str:
    """An absolute path to an IR2Vec vocabulary LLVM takes and the policy can use, or a one-line Failure.

    LLVM refuses NaN and a bad section in several lines of its own, and takes 1e400 (inf) and a value no float
    holds, which then reach the model as inf features: both are said here, in one line, before the compile."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # /dev/zero never ends, a FIFO blocks: neither is read
            raise Failure(f"IR2Vec vocabulary {path} is not a regular file", 2)
        with open(path, "rb") as f:
            data = json.load(f)
    except OSError as e:
        raise Failure(f"IR2Vec vocabulary {path}: {e.strerror}", 2) from None
    except RecursionError:  # a deep array: json's own recursion, not this check's (which recurses nowhere)
        raise Failure(f"IR2Vec vocabulary {path} is not readable JSON: nested too deeply", 2) from None
    except ValueError as e:  # syntax, not UTF-8, an integer of more than 4,300 digits
        raise Failure(f"IR2Vec vocabulary {path} is not readable JSON: {_first_line(e)}", 2) from None
    if not isinstance(data, dict) or not set(VOCAB_SECTIONS) <= set(data):
        raise Failure(f"IR2Vec vocabulary {path} lacks the {'/'.join(VOCAB_SECTIONS)} sections", 2)
    problem = vocab_problem(data)
    if problem:
        raise Failure(f"IR2Vec vocabulary {path}: {problem}", 2)
    return os.path.abspath(path)


_JSON_NAMES = {list: "an array", dict: "an object", str: "a string", bool: "a boolean", type(None): "null"}


def vocab_problem(data: dict) -> str | None:
    """What LLVM (IR2Vec.cpp) or the policy would make of the sections: each a non-empty object of vectors,
    every vector the same non-zero dimension, numbers (not booleans) that a float holds; None when all hold.
    Loops, no recursion: a nested array is a non-number, whatever its depth. Other sections LLVM ignores."""
    dim = None
    for section in VOCAB_SECTIONS:
        entries = data[section]
        if not isinstance(entries, dict) or not entries:
            return f"section {section} is not a non-empty object of vectors"
        for key, vec in entries.items():
            where = f"{section}[{json.dumps(key[:60])}]"  # quoted: a key may hold a newline
            if not isinstance(vec, list) or not vec:
                return f"{where} is not a non-empty array of numbers"
            dim = dim or len(vec)
            if len(vec) != dim:
                return f"{where} has dimension {len(vec)}, not {dim} like the first vector (LLVM needs one)"
            for x in vec:
                if type(x) not in (int, float):
                    return f"{where} holds {_JSON_NAMES.get(type(x), type(x).__name__)}, not a number"
                if not (-FLOAT32_MAX <= x <= FLOAT32_MAX):  # NaN fails too; an integer of any size compares
                    shown = f"{x:g}" if isinstance(x, float) else f"an integer of {len(str(x))} digits"
                    return f"{where} holds {shown}; the vectors must be finite numbers a float holds (LLVM " \
                           f"sends the embeddings to the policy as float)"
    return None


def native_host(model: str) -> tuple[str, str] | None:
    """(the built native host beside this file, the weights file beside `model`), or None when either is missing."""
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), NATIVE_HOST)
    weights = os.path.splitext(model)[0] + WEIGHTS_SUFFIX
    return (exe, weights) if os.access(exe, os.X_OK) and os.path.isfile(weights) else None


class Terminated(BaseException):
    """SIGTERM (make or CMake stopping a build) or SIGHUP (the terminal closed): unwinds like Ctrl-C, so the
    compiler's process group is killed; the compiler's own session does not get the terminal's signals.

    A copy of the farm's `Terminated` (farm/errors.py) on purpose: this file is downloaded alone and run with
    no farm installed, so it imports nothing of the farm (tests/policyhost/test_standalone.py)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(signum)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in ("-h", "--help"):
        print(USAGE)
        print(__doc__.split("\n\n", 2)[2])
        return 0
    if args and args[0] == "--version":
        print(f"{PROG} {VERSION}")
        return 0
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _terminate)
    try:
        values, command = parse(args)
        timeout = _seconds(values["timeout"], "--timeout") if "timeout" in values else TIMEOUT
        silence = (_seconds(values["max-silence"], "--max-silence") if "max-silence" in values
                   else SILENCE_FACTOR * timeout)
        model = os.path.abspath(values["model"])
        if not os.path.isfile(model):
            raise Failure(f"policy model {values['model']} not found", 2)
        vocab = check_vocab(values["vocab"]) if "vocab" in values else None
        native = native_host(model)
        if native is not None:  # exec: its exit, its signals and its one-line errors are the compile's
            os.execv(native[0], [native[0], "--weights", native[1], *(["--vocab", vocab] if vocab else []),
                                 "--timeout", repr(timeout), "--max-silence", repr(silence), "--", *command])
        return run(model, vocab, command, timeout, silence)
    except Failure as e:
        sys.stderr.write(f"{PROG}: error: {e}\n")
        return e.code
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    except Terminated as e:
        sys.stderr.write(f"{PROG}: {'hung up' if e.signum == signal.SIGHUP else 'terminated'}\n")
        return 128 + e.signum


if __name__ == "__main__":
    sys.exit(main())
