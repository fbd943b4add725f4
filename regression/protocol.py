"""LLVM's interactive MLGO wire format (InteractiveModelRunner / TrainingLogger), both directions.

The compiler writes to `BASE.out`: one JSON header line `{"features": [spec...], "advice": spec}`,
then per decision an optional `{"context": NAME}` line, an `{"observation": N}` line, the raw
feature tensors in header order (native little-endian), and a newline. The host answers each
observation on `BASE.in` with the raw advice tensor. Decoding is incremental (bytes arrive in
arbitrary chunks) and uses only the standard library, so the launcher starts fast.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from farm.errors import FarmError

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


class ProtocolError(FarmError):
    """The compiler's stream does not follow the interactive format."""


@dataclass(frozen=True)
class TensorSpec:
    """One tensor as LLVM declares it: name, element type and shape."""

    name: str
    type: str
    shape: tuple[int, ...]

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

    @property
    def count(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.count * struct.calcsize("<" + ELEMENT_TYPES[self.type])

    @property
    def is_float(self) -> bool:
        return self.type in ("float", "double")

    def decode(self, raw: bytes | memoryview) -> tuple[float | int, ...]:
        return struct.unpack(f"<{self.count}{ELEMENT_TYPES[self.type]}", raw)

    def encode(self, values: Sequence[float | int] | float | int) -> bytes:
        """Pack a value (a scalar is broadcast to a one-element tensor) into the raw layout."""
        vals = list(values) if isinstance(values, Sequence) else [values]
        if len(vals) != self.count:
            raise ProtocolError(f"tensor {self.name}: {len(vals)} values for shape {list(self.shape)}")
        if not self.is_float:
            vals = [int(v) for v in vals]
        try:
            return struct.pack(f"<{self.count}{ELEMENT_TYPES[self.type]}", *vals)
        except struct.error as e:
            raise ProtocolError(f"tensor {self.name}: {e}") from None


@dataclass(frozen=True)
class Header:
    """The session header: the features the compiler sends and the advice it expects."""

    features: tuple[TensorSpec, ...]
    advice: TensorSpec

    @classmethod
    def parse(cls, line: bytes) -> Header:
        try:
            d = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ProtocolError(f"header is not JSON: {e}") from None
        if not isinstance(d, dict) or not isinstance(d.get("features"), list):
            raise ProtocolError("header has no 'features' list")
        if "advice" not in d:
            raise ProtocolError("header has no 'advice' spec (is this a training log, not a channel?)")
        feats = tuple(TensorSpec.from_json(f) for f in d["features"])
        names = [f.name for f in feats]
        if len(set(names)) != len(names):
            raise ProtocolError("header repeats a feature name")
        return cls(feats, TensorSpec.from_json(d["advice"]))

    def encode(self) -> bytes:
        d = {"features": [f.to_json() for f in self.features], "advice": self.advice.to_json()}
        return json.dumps(d, separators=(",", ":")).encode() + b"\n"

    def feature(self, name: str) -> TensorSpec | None:
        return next((f for f in self.features if f.name == name), None)

    @property
    def observation_size(self) -> int:
        return sum(f.nbytes for f in self.features)


@dataclass
class Observation:
    """One decision request: its index in the session, the context, and the decoded features."""

    index: int
    context: str | None
    features: dict[str, tuple[float | int, ...]] = field(default_factory=dict)

    def scalar(self, name: str) -> float | int:
        return self.features[name][0]


def encode_observation(header: Header, obs: Observation, *, with_context: bool = False) -> bytes:
    """The bytes the compiler writes for `obs` (used to test the decoder and to write logs)."""
    out = b""
    if with_context:
        out += json.dumps({"context": obs.context or ""}).encode() + b"\n"
    out += json.dumps({"observation": obs.index}).encode() + b"\n"
    out += b"".join(f.encode(obs.features[f.name]) for f in header.features)
    return out + b"\n"


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
                event = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise ProtocolError(f"expected an event line, got {line[:60]!r}") from None
            if not isinstance(event, dict):
                raise ProtocolError(f"expected an event object, got {line[:60]!r}")
            if "context" in event:
                self.context = str(event["context"])
                del self._buf[: len(line) + 1]
                continue
            if "observation" not in event:
                raise ProtocolError(f"unknown event {line[:60]!r}")
            break
        start = len(line) + 1
        size = self.header.observation_size
        if len(self._buf) < start + size + 1:
            return None
        view = memoryview(self._buf)
        features: dict[str, tuple[float | int, ...]] = {}
        pos = start
        for spec in self.header.features:
            features[spec.name] = spec.decode(view[pos : pos + spec.nbytes])
            pos += spec.nbytes
        view.release()
        if self._buf[pos : pos + 1] != b"\n":
            raise ProtocolError(f"observation {event['observation']} is not followed by a newline")
        del self._buf[: pos + 1]
        self.observations += 1
        return Observation(int(event["observation"]), self.context, features)
