"""Policies answering LLVM's interactive channel: built-in ones and ONNX model files.

A policy is bound to a session header (it checks that the compiler sends what it needs), then
asked for one advice per observation. Built-ins: `heuristic` (LLVM's own default decision,
which must reproduce the heuristic build byte for byte), `never` / `always` (inline nothing /
everything the advisor asks about), and for regalloc eviction `spill` (evict nothing when
allowed). A path ending in `.onnx` loads a model through onnxruntime.

ONNX model contract: each model input is named after an LLVM feature (the model may use any
subset) and takes that feature with a leading batch dimension of 1, as float32 or int64. Output 0
is either the advice itself (integer), one logit per observation (float, last dimension 1:
positive means 1), or one score per choice (float: two for the inliner, no and yes; one per
candidate of the `mask` feature for regalloc eviction, where only positions with mask 1 are
eligible; the highest score wins). Any other output is refused when the model is bound.

Below everything that runs a policy (host, launcher, warmstart, release); policyhost/published.py, above
them, adds what a policy the farm published needs (resolved, fetched, checked with a probe compile) and has
`load_policy`, which loads whatever a user names (tests/test_layout.py: no file circles).
"""

from __future__ import annotations

import math
import os

from farm.errors import InputError, first_line
from policyhost import advisors

TYPE_CHECKING = False
if TYPE_CHECKING:  # the built-ins are on every compile's path: no typing or pathlib imports at run time
    from collections.abc import Sequence
    from pathlib import Path

    from policyhost.protocol import Header, Observation
    from policyhost.watchdog import Stop

_INLINER = advisors.serving("heuristic")  # the advisor whose default decision `heuristic` repeats
INLINE_DEFAULT = _INLINER.default_feature
EVICT_MASK = advisors.serving("spill").mask_feature


class Policy:
    """What the host asks of a policy (any object with these members will do)."""

    name: str

    def bind(self, header: Header) -> None:
        """Check that this policy can answer a session with this header (InputError if not)."""

    def decide(self, obs: Observation) -> int | Sequence[int | float]:
        """The advice for one observation."""


class HeuristicPolicy:
    """Answer LLVM's own default decision (needs `-inliner-interactive-include-default`)."""

    name = "heuristic"

    def bind(self, header: Header) -> None:
        if header.feature(INLINE_DEFAULT) is None:
            raise InputError(
                f"policy {self.name} needs the '{INLINE_DEFAULT}' feature: the compiler must run with "
                "-inliner-interactive-include-default (regalloc eviction sends no default decision)"
            )

    def decide(self, obs: Observation) -> int:
        return int(obs.scalar(INLINE_DEFAULT))


class RecordingPolicy(HeuristicPolicy):
    """The heuristic policy that also keeps every observation's features and default decision: what behavioural
    cloning learns from (policytrain/warmstart.py) and what `release.llvm_probe` reads LLVM's feature list with."""

    name = "heuristic+log"

    def __init__(self) -> None:
        self.header: Header | None = None
        self.rows: list[list[float]] = []
        self.labels: list[int] = []

    def bind(self, header: Header) -> None:
        super().bind(header)
        if self.header is not None and header != self.header:
            raise InputError("the compiler changed its feature set within one compile")
        self.header = header

    def decide(self, obs: Observation) -> int:
        default = super().decide(obs)
        self.rows.append([v for f in self.header.features if f.name != INLINE_DEFAULT for v in obs.features[f.name]])
        self.labels.append(default)
        return default


class ConstantPolicy:
    """Always the same inlining decision (`never` = 0, `always` = 1)."""

    def __init__(self, name: str, value: int) -> None:
        self.name, self.value = name, value

    def bind(self, header: Header) -> None:
        if header.advice.name != _INLINER.advice:
            raise InputError(f"policy {self.name} answers inlining decisions, not {header.advice.name!r}")

    def decide(self, obs: Observation) -> int:
        return self.value


class SpillPolicy:
    """Regalloc eviction: evict nothing (pick the candidate itself) when allowed, else the first allowed."""

    name = "spill"

    def bind(self, header: Header) -> None:
        if header.feature(EVICT_MASK) is None:
            raise InputError(f"policy {self.name} answers regalloc eviction, but the compiler sends no 'mask'")

    def decide(self, obs: Observation) -> int:
        return masked_argmax([float(i) for i in range(len(obs.features[EVICT_MASK]))], obs.features[EVICT_MASK])


def masked_argmax(scores: Sequence[float], mask: Sequence[int | float] | None) -> int:
    """Index of the highest score among positions whose mask is non-zero (all positions without a mask)."""
    best, best_i = -math.inf, -1
    for i, s in enumerate(scores):
        if (mask is None or mask[i]) and (best_i < 0 or s > best):
            best, best_i = s, i
    if best_i < 0:
        raise InputError("no eligible position: the mask excludes every candidate")
    return best_i


#: the built-in policies by name (which advisor each answers is declared in policyhost.advisors)
BUILTINS = {
    "heuristic": HeuristicPolicy,
    "never": lambda: ConstantPolicy("never", 0),
    "always": lambda: ConstantPolicy("always", 1),
    "spill": SpillPolicy,
}


def check_advisor(policy: str | Path, advisor: str) -> None:
    """InputError when a built-in policy cannot answer `advisor` (a model is checked against the compiler's header)."""
    wanted = advisors.get(advisor)
    serves = advisors.serving(os.fspath(policy))
    if serves is not None and serves is not wanted:
        raise InputError(f"policy {os.fspath(policy)} answers the {serves.name} advisor, not {advisor} "
                         f"(built-in {advisor} policies: {', '.join(wanted.builtin_policies)}; or an .onnx model)")


def is_published(spec: object) -> bool:
    """Whether `spec` names a policy the farm published (`store:latest`, `store:VERSION`)."""
    return isinstance(spec, str) and spec.startswith("store:")


def local_policy(spec: str | Path) -> Policy:
    """A built-in policy by name, or an ONNX model by path; InputError if neither. A policy the farm published
    (`store:VERSION`) is resolved and checked first: policyhost.published.load_policy does both."""
    text = os.fspath(spec)
    if is_published(text):
        raise InputError(f"policy {text}: a published policy is resolved to its checked model file first "
                         "(policyhost.published.load_policy)")
    if text in BUILTINS:
        return BUILTINS[text]()
    if not text.endswith(".onnx"):
        raise InputError(f"unknown policy {text!r}: use {', '.join(BUILTINS)}, a path to an .onnx model, "
                         "or store:latest / store:VERSION for one the farm published")
    return OnnxPolicy(text)


#: LLVM element types as numpy dtypes (little-endian, as the compiler writes them)
_NUMPY_TYPES = {"float": "<f4", "double": "<f8", "int8_t": "i1", "uint8_t": "u1", "int16_t": "<i2",
                "uint16_t": "<u2", "int32_t": "<i4", "uint32_t": "<u4", "int64_t": "<i8", "uint64_t": "<u8"}
_ONNX_TYPES = {"tensor(float)": "float32", "tensor(int64)": "int64", "tensor(double)": "float64",
               "tensor(int32)": "int32"}


#: why a model's input may be missing from what the compiler sends, for the one line that says so
_MISSING_HINTS = {
    "callee_embedding": " (pass the IR2Vec vocabulary with --vocab)",
    "caller_embedding": " (pass the IR2Vec vocabulary with --vocab)",
    # policytrain/evict_context.py: a MIR2Vec vector the farm computes, never sent by LLVM 22
    "function_embedding": " (a model trained with --mir-vocab reads its function's MIR2Vec embedding, which LLVM "
                          "does not send: bench/evict_policies.py serves it, policy-cc cannot)",
}


class OnnxPolicy:
    """A model file run by onnxruntime; inputs named after LLVM features (see the module docstring)."""

    #: seconds one inference may run before it is stopped (a `Loop` that never ends); None: no limit.
    #: `policy serve` sets the compile's timeout, so a model cannot keep a server busy after its compile gave up.
    time_limit: float | None = None
    #: a watchdog.Stop set when the work this policy serves is interrupted: the run in flight is stopped, and no
    #: other starts (`policy heldout`'s threads; the main thread, where Ctrl-C lands, waits for them to end)
    stopping: Stop | None = None

    def __init__(self, path: str | os.PathLike, *, strict: bool = False) -> None:
        from pathlib import Path

        self.path = Path(path)
        self.name = self.path.name
        self.strict = strict
        self._session, self.inputs, self.output = self._load()

    def _load(self):
        import onnxruntime as ort

        if not self.path.is_file():
            raise InputError(f"policy model {self.path} not found")
        where = f"policy model {self.path}"
        if self.strict:
            import onnx  # the full checker is a heavy import: `policy inspect`, not every compile

            try:
                onnx.checker.check_model(onnx.load(str(self.path)))
            except Exception as e:
                raise InputError(f"{where} is not a valid ONNX model: {first_line(e)}") from None
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1  # one host per compile, many compiles
        opts.log_severity_level = 3
        try:
            session = ort.InferenceSession(str(self.path), opts, providers=["CPUExecutionProvider"])
        except Exception as e:
            raise InputError(f"{where} is not a valid ONNX model: {first_line(e)}") from None
        inputs = {}
        for i in session.get_inputs():
            if i.type not in _ONNX_TYPES:
                raise InputError(f"{where}: input {i.name!r} has unsupported type {i.type}")
            inputs[i.name] = (_ONNX_TYPES[i.type], list(i.shape))
        if not inputs:
            raise InputError(f"{where} has no inputs")
        self.metadata = dict(session.get_modelmeta().custom_metadata_map)
        out = session.get_outputs()[0]
        if out.type not in _ONNX_TYPES:
            raise InputError(f"{where}: output {out.name!r} has unsupported type {out.type}")
        return session, inputs, (out.name, _ONNX_TYPES[out.type], list(out.shape))

    def bind(self, header: Header) -> None:
        import numpy as np
        import onnxruntime as ort

        shapes: dict[str, tuple[int, ...]] = {}
        for name, (_, shape) in self.inputs.items():
            spec = header.feature(name)
            if spec is None:
                hint = _MISSING_HINTS.get(name, "")
                raise InputError(
                    f"policy model {self.name} needs feature {name!r}, which the compiler does not send{hint}"
                )
            shapes[name] = _feed_shape(self.name, name, shape, spec.count)
        mask = header.feature(EVICT_MASK)
        self._mask = mask is not None
        self._choices = mask.count if mask is not None else None
        self._sizes = output_sizes(self.output[1], self._choices)
        check_output(self.name, self.output, self._choices)
        # Inputs live in buffers bound to the session once (IOBinding: a third of `session.run`'s cost per
        # decision). When every feature has one element type and every input one dtype, the buffers are
        # views of one array laid out like the observation, so a decision is one copy of its raw bytes.
        starts, pos = {}, 0
        for spec in header.features:
            starts[spec.name] = pos
            pos += spec.count
        types = {spec.type for spec in header.features}
        dtypes = {dtype for dtype, _ in self.inputs.values()}
        self._raw_dtype = _NUMPY_TYPES[next(iter(types))] if len(types) == 1 and len(dtypes) == 1 else None
        self._back = np.zeros(pos, dtype=next(iter(dtypes))) if self._raw_dtype else None
        self._buffers, self._values = {}, []
        self._binding = self._session.io_binding()
        for name, (dtype, _) in self.inputs.items():
            count = header.feature(name).count
            if self._back is not None:
                buf = self._back[starts[name]:starts[name] + count].reshape(_resolve(shapes[name], count))
            else:
                buf = np.zeros(_resolve(shapes[name], count), dtype=dtype)
            value = ort.OrtValue.ortvalue_from_numpy(buf)  # wraps the buffer: later writes are what the model reads
            self._binding.bind_ortvalue_input(name, value)
            self._buffers[name] = buf
            self._values.append(value)
        self._binding.bind_output(self.output[0])
        self._run_options = ort.RunOptions()  # per bound copy: stopping one connection's run stops no other
        self._run_options.log_severity_level = 4  # a stopped run is reported by decide, not logged by onnxruntime
        # 1.31's run_with_iobinding looks this entry up and pays ~60 us for the exception when it is missing;
        # -1 is its documented "no graph capture", which is what a CPU session does anyway
        self._run_options.add_run_config_entry("gpu_graph_id", "-1")
        self._stop = lambda options=self._run_options: setattr(options, "terminate", True)
        if self.stopping is not None:
            self.stopping.on_set(self._stop)
        from policyhost.watchdog import WATCHDOG

        self._watchdog = WATCHDOG

    def decide(self, obs: Observation) -> int:
        import numpy as np

        if obs.raw is not None and self._back is not None:
            self._back[:] = np.frombuffer(obs.raw, dtype=self._raw_dtype)
        else:
            for name, buf in self._buffers.items():
                buf[...] = np.asarray(obs.features[name], dtype=buf.dtype).reshape(buf.shape)
        self._run(obs)
        values = self._binding.copy_outputs_to_cpu()[0].reshape(-1)
        if values.size not in self._sizes:  # a shape the model left open (checked in bind when declared)
            check_output(self.name, self.output, self._choices, values.size)
        if not self.output[1].startswith("float"):
            return int(values[0])
        if not np.isfinite(values).all():  # NaN > 0 is False: it would pass silently as "do not inline"
            raise InputError(f"policy model {self.path} gave non-finite advice {values.tolist()[:4]} on "
                             f"observation {obs.index}; refusing to guess a decision")
        if values.size == 1:
            return int(values[0] > 0)
        return masked_argmax(values.tolist(), obs.features.get(EVICT_MASK) if self._mask else None)

    def _run(self, obs: Observation) -> None:
        if self.time_limit is None and self.stopping is None:
            self._session.run_with_iobinding(self._binding)
            return
        options, watchdog, stopping = self._run_options, self._watchdog, self.stopping
        if stopping is not None and stopping.is_set():  # (set after the last run ended: `terminate` was reset)
            raise InputError(f"policy model {self.name}: stopped before observation {obs.index} (interrupted)")
        key = None if self.time_limit is None else watchdog.arm(self.time_limit, self._stop)
        try:
            self._session.run_with_iobinding(self._binding, options)
        except Exception:
            if not options.terminate:
                raise
            if stopping is not None and stopping.is_set():
                raise InputError(f"policy model {self.name}: its run on observation {obs.index} was stopped "
                                 "(interrupted)") from None
            raise InputError(f"policy model {self.name} gave no advice within {self.time_limit:g}s "
                             f"(observation {obs.index}); its run was stopped") from None
        finally:
            if key is not None:
                watchdog.disarm(key)
            options.terminate = False  # the next decision runs again


def output_sizes(dtype: str, choices: int | None = None) -> tuple[int, ...]:
    """How many values per observation output 0 may give (see the module docstring).

    `choices` is the number of candidates a masked advisor (regalloc eviction) chooses from, None for
    the inliner, whose decision is one integer, one logit, or two scores (no, yes). A model giving
    five scores per inlining decision would otherwise have its argmax (0..4) sent as the decision.
    """
    if not dtype.startswith("float"):
        return (1,)
    if choices is None:
        return (1, 2)
    return (choices,) if choices > 1 else (1,)


def check_output(model: str, output: tuple[str, str, list], choices: int | None = None,
                 per_obs: int | None = None) -> None:
    """Output 0 gives what the advisor can use, or a one-line InputError.

    `per_obs` is the number of values a run gave; without it, the declared shape is checked when its
    dimensions after the batch are known (a model that leaves them open is checked at its first run).
    """
    name, dtype, shape = output
    if per_obs is None:
        dims = shape[1:] if len(shape) > 1 else []  # the first dimension is the batch
        if not all(isinstance(d, int) and d > 0 for d in dims):
            return
        per_obs = math.prod(dims)
    if per_obs not in output_sizes(dtype, choices):
        what = ("one integer advice" if not dtype.startswith("float") else
                "one logit or two scores (no, yes) per inlining decision" if choices is None else
                f"one score for each of the {choices} candidates")
        raise InputError(f"policy model {model}: output {name!r} has shape {shape}, {per_obs} values per "
                         f"observation; the advisor takes {what}")


def _resolve(shape: tuple[int, ...], count: int) -> tuple[int, ...]:
    """`shape` with its free dimension (-1) worked out for `count` elements."""
    known = math.prod(d for d in shape if d != -1)
    return tuple(count // known if d == -1 else d for d in shape)


def _feed_shape(model: str, name: str, shape: list, count: int) -> tuple[int, ...]:
    """The shape to feed a feature of `count` elements into a model input declared as `shape`."""
    dims = [d if isinstance(d, int) and d > 0 else None for d in shape]
    if dims and dims[0] is None:
        dims[0] = 1  # the batch dimension
    if dims.count(None) > 1 or (None not in dims and math.prod(dims) != count) or (
        None in dims and count % math.prod(d for d in dims if d) != 0
    ):
        raise InputError(f"policy model {model}: input {name!r} has shape {shape}, the compiler sends {count} values")
    return tuple(-1 if d is None else d for d in dims)

