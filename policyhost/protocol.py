"""LLVM's interactive MLGO wire format (InteractiveModelRunner / TrainingLogger), both directions.

The compiler writes to `BASE.out`: one JSON header line `{"features": [spec...], "advice": spec}`,
then per decision an optional `{"context": NAME}` line, an `{"observation": N}` line, the raw
feature tensors in header order (native little-endian), and a newline. The host answers each
observation on `BASE.in` with the raw advice tensor.

This module is on the path of every compile of a policy build, so it imports only `struct`,
`math` and the C half of the standard `json` (`_json`: the Python half pulls in `re` and `enum`,
a few milliseconds per compile); no dataclasses, no typing.
"""

from __future__ import annotations

import math
import struct

from farm.errors import FarmError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

#: LLVM's element type names and their `struct` codes.
ELEMENT_TYPES = {
    "float": "f",
    "double": "d",
    "int8_t": "b",
    "uint8_t": "B",
    "int16_t": "h",
    "uint16_t": "H",
    "int32_t": "i",
    "uint32_t": "I",
    "int64_t": "q",
    "uint64_t": "Q",
}


#: the longest line (header, context, observation) and the largest observation a host buffers: LLVM's headers are a
#: few kilobytes; a stream past either is refused in one line instead of growing the host without bound
MAX_LINE = 1 << 20
MAX_OBSERVATION = 1 << 26


class ProtocolError(FarmError):
    """The compiler's stream does not follow the interactive format."""


class _JSONContext:
    """What `_json.make_scanner` reads from a decoder: the defaults of `json.loads`."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.__getitem__
    memo: dict = {}  # noqa: RUF012 - read by the scanner, which keeps its own per call


try:
    from _json import encode_basestring_ascii as json_string
    from _json import make_scanner as _make_scanner

    _scan = _make_scanner(_JSONContext)
except ImportError:  # an interpreter without the C accelerator: the whole json module
    import json as _json_module

    _scan = None

    def json_string(s: str) -> str:
        return _json_module.dumps(s)


def loads(data: bytes | str) -> object:
    """`json.loads` for one document, through the standard library's C scanner; ValueError if malformed."""
    text = data.decode() if isinstance(data, (bytes, bytearray)) else data
    if _scan is None:
        return _json_module.loads(text)
    start = len(text) - len(text.lstrip(" \t\r\n"))
    try:
        value, end = _scan(text, start)
    except StopIteration as e:
        raise ValueError(f"expecting a value at character {e.value}") from None
    if text[end:].strip(" \t\r\n"):
        raise ValueError(f"extra data at character {end}")
    return value


def dumps(value: object) -> str:
    """Compact JSON for the plain values the launcher writes (dict, list, str, int, float, bool, None)."""
    if isinstance(value, str):
        return json_string(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not JSON")
        return float.__repr__(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json_string(str(k))}:{dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


class TensorSpec:
    """One tensor as LLVM declares it: name, element type and shape (immutable, compared by value)."""

    __slots__ = ("_fmt", "count", "name", "nbytes", "shape", "type")

    def __init__(self, name: str, type: str, shape: tuple[int, ...]) -> None:
        self.name, self.type, self.shape = name, type, tuple(shape)
        self.count = math.prod(self.shape)
        code = ELEMENT_TYPES[type]
        self._fmt = f"<{self.count}{code}"
        self.nbytes = self.count * struct.calcsize("<" + code)

    @classmethod
    def from_json(cls, d: object) -> TensorSpec:
        if not isinstance(d, dict) or not isinstance(d.get("name"), str):
            raise ProtocolError(f"bad tensor spec {d!r}")
        if d.get("type") not in ELEMENT_TYPES:
            raise ProtocolError(f"tensor {d['name']}: unsupported element type {d.get('type')!r}")
        shape = d.get("shape")
        if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
            raise ProtocolError(f"tensor {d['name']}: bad shape {shape!r}")
        return cls(d["name"], d["type"], tuple(shape))

    def to_json(self) -> dict:
        return {"name": self.name, "type": self.type, "port": 0, "shape": list(self.shape)}

    def _key(self) -> tuple:
        return (self.name, self.type, self.shape)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorSpec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"TensorSpec(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"

    @property
    def is_float(self) -> bool:
        return self.type in ("float", "double")

    def decode(self, raw: bytes | memoryview) -> tuple[float | int, ...]:
        return struct.unpack(self._fmt, raw)

    def encode(self, values: Sequence[float | int] | float | int) -> bytes:
        """Pack a value (a scalar is broadcast to a one-element tensor) into the raw layout."""
        if isinstance(values, int) and self.count == 1 and not self.is_float:
            try:
                return struct.pack(self._fmt, values)
            except struct.error as e:
                raise ProtocolError(f"tensor {self.name}: {e}") from None
        try:
            vals = list(values)  # type: ignore[arg-type]
        except TypeError:
            vals = [values]
        if len(vals) != self.count:
            raise ProtocolError(f"tensor {self.name}: {len(vals)} values for shape {list(self.shape)}")
        if not self.is_float:
            vals = [int(v) for v in vals]
        try:
            return struct.pack(self._fmt, *vals)
        except struct.error as e:
            raise ProtocolError(f"tensor {self.name}: {e}") from None


class Header:
    """The session header: the features the compiler sends and the advice it expects."""

    __slots__ = ("advice", "features", "observation_size", "offsets")

    def __init__(self, features: Sequence[TensorSpec], advice: TensorSpec) -> None:
        self.features, self.advice = tuple(features), advice
        #: feature name -> (byte offset in an observation, spec)
        self.offsets: dict[str, tuple[int, TensorSpec]] = {}
        pos = 0
        for f in self.features:
            self.offsets[f.name] = (pos, f)
            pos += f.nbytes
        self.observation_size = pos

    @classmethod
    def parse(cls, line: bytes) -> Header:
        try:
            d = loads(line)
        except (UnicodeDecodeError, ValueError) as e:
            raise ProtocolError(f"header is not JSON: {e}") from None
        if not isinstance(d, dict) or not isinstance(d.get("features"), list):
            raise ProtocolError("header has no 'features' list")
        if "advice" not in d:
            raise ProtocolError("header has no 'advice' spec (is this a training log, not a channel?)")
        feats = tuple(TensorSpec.from_json(f) for f in d["features"])
        names = [f.name for f in feats]
        if len(set(names)) != len(names):
            raise ProtocolError("header repeats a feature name")
        header = cls(feats, TensorSpec.from_json(d["advice"]))
        if header.observation_size > MAX_OBSERVATION:
            raise ProtocolError(f"observations of {header.observation_size} bytes, more than a host takes")
        return header

    def encode(self) -> bytes:
        d = {"features": [f.to_json() for f in self.features], "advice": self.advice.to_json()}
        return dumps(d).encode() + b"\n"

    def feature(self, name: str) -> TensorSpec | None:
        return next((f for f in self.features if f.name == name), None)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Header) and (self.features, self.advice) == (other.features, other.advice)

    def __hash__(self) -> int:
        return hash((self.features, self.advice))

    def __repr__(self) -> str:
        return f"Header(features={self.features!r}, advice={self.advice!r})"


class Observation:
    """One decision request: its index in the session, the context, the features and their raw bytes.

    Built by the decoder, the features are decoded from the raw bytes on first use only: a policy
    that forwards the raw bytes (`RemotePolicy`) or slices them itself (`OnnxPolicy`) never pays for it.
    """

    __slots__ = ("_features", "context", "header", "index", "raw")

    def __init__(self, index: int, context: str | None, features: dict[str, tuple[float | int, ...]] | None = None,
                 raw: bytes | None = None, header: Header | None = None) -> None:
        self.index, self.context = index, context
        self._features = features
        #: the feature tensors exactly as the compiler sent them, in `header` order (None when built by hand)
        self.raw, self.header = raw, header

    @property
    def features(self) -> dict[str, tuple[float | int, ...]]:
        if self._features is None:
            self._features = decode_features(self.header, self.raw) if self.raw is not None else {}
        return self._features

    def scalar(self, name: str) -> float | int:
        if self._features is None and self.raw is not None:  # decode just this feature
            pos, spec = self.header.offsets[name]
            return spec.decode(self.raw[pos:pos + spec.nbytes])[0]
        return self.features[name][0]

    def __repr__(self) -> str:
        return f"Observation(index={self.index!r}, context={self.context!r}, features={self.features!r})"


def encode_observation(header: Header, obs: Observation, *, with_context: bool = False) -> bytes:
    """The bytes the compiler writes for `obs` (used to test the decoder and to write logs)."""
    out = b""
    if with_context:
        out += dumps({"context": obs.context or ""}).encode() + b"\n"
    out += dumps({"observation": obs.index}).encode() + b"\n"
    out += b"".join(f.encode(obs.features[f.name]) for f in header.features)
    return out + b"\n"


def decode_features(header: Header, raw: bytes | memoryview) -> dict[str, tuple[float | int, ...]]:
    """The named feature tensors of one observation's raw bytes (ProtocolError if the size is wrong)."""
    if len(raw) != header.observation_size:
        raise ProtocolError(f"observation of {len(raw)} bytes, the header says {header.observation_size}")
    out, pos = {}, 0
    for spec in header.features:
        out[spec.name] = spec.decode(raw[pos:pos + spec.nbytes])
        pos += spec.nbytes
    return out


class StreamDecoder:
    """Incremental decoder of one compiler session: feed bytes, take the header and observations."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self.header: Header | None = None
        self.context: str | None = None
        self.observations = 0
        self.sessions = 0

    def feed(self, data: bytes) -> Iterator[Observation]:
        """Add bytes; yield every observation they complete (the header is parsed on the way)."""
        self._buf += data
        while True:
            obs = self._next()
            if obs is None:
                return
            yield obs

    @property
    def pending(self) -> int:
        """Bytes received but not yet forming a complete message (non-zero at EOF = truncated)."""
        return len(self._buf)

    def _line(self, start: int = 0) -> bytes | None:
        nl = self._buf.find(b"\n", start)
        if nl < 0 and len(self._buf) - start > MAX_LINE:
            raise ProtocolError(f"a line of more than {MAX_LINE} bytes without a newline")
        return None if nl < 0 else bytes(self._buf[start:nl])

    def _next(self) -> Observation | None:
        while True:
            line = self._line()
            if line is None:
                return None
            if self.header is None or line.startswith(b'{"features"'):
                # A header opens a session; one compiler process (`clang -c a.c b.c`) may run several.
                self.header = Header.parse(line)
                self.context = None
                self.sessions += 1
                del self._buf[: len(line) + 1]
                continue
            try:
                event = loads(line)
            except (UnicodeDecodeError, ValueError):
                raise ProtocolError(f"expected an event line, got {line[:60]!r}") from None
            if not isinstance(event, dict):
                raise ProtocolError(f"expected an event object, got {line[:60]!r}")
            if "context" in event:
                self.context = str(event["context"])
                del self._buf[: len(line) + 1]
                continue
            if "observation" not in event:
                raise ProtocolError(f"unknown event {line[:60]!r}")
            index = event["observation"]
            if type(index) is not int:  # not bool, float, str or null
                raise ProtocolError(f"observation index must be an integer, got {line[:60]!r}")
            break
        start = len(line) + 1
        size = self.header.observation_size
        if len(self._buf) < start + size + 1:
            return None
        end = start + size
        if self._buf[end:end + 1] != b"\n":
            raise ProtocolError(f"observation {index} is not followed by a newline")
        raw = bytes(self._buf[start:end])
        del self._buf[: end + 1]
        self.observations += 1
        return Observation(index, self.context, None, raw, self.header)
