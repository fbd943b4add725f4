"""The protocol's own JSON codec and decoder, without a compiler: hand-made values and hand-made bytes.

`protocol.dumps`/`loads` exist so that a compile does not import the Python half of `json`;
they must agree with `json.dumps`/`json.loads` on everything the protocol and the launcher's
stats lines send. The stream is built byte by byte the way LLVM's
`llvm/lib/Analysis/models/log_reader.py` reads one (a JSON header line whose specs carry
`name`, `port`, `shape`, `type`; an optional `{"context": ...}` line; an `{"observation": N}`
line; the raw little-endian tensors in header order, `prod(shape) * sizeof(type)` bytes each; a
newline), so a decoder that drifts from LLVM's format fails here first.
"""

from __future__ import annotations

import json
import math
import random
import struct

import pytest

from policyhost.protocol import ELEMENT_TYPES, Header, ProtocolError, StreamDecoder, TensorSpec, dumps, loads

#: values the protocol and the launcher write: headers, context and observation lines, stats lines
SENT = [
    {"features": [{"name": "callee_basic_block_count", "type": "int64_t", "port": 0, "shape": [1]},
                  {"name": "callee_embedding", "type": "float", "port": 0, "shape": [75]}],
     "advice": {"name": "inlining_decision", "type": "int64_t", "port": 0, "shape": [1]}},
    {"context": "_ZN4llvm12function_refIFvvEE11callback_fnIZ4mainE3$_0EEvl"},
    {"context": "caf\u00e9 \"quoted\" \\ back\nslash \u2603 \U0001f600"},
    {"context": ""},
    {"observation": 0}, {"observation": 2**62},
    {"argv": ["clang", "-Oz", "-c", "a b.c", "-DX=\"1\""], "returncode": -9, "wall": 0.1 + 0.2,
     "decisions": 12, "response_us": [5.8, 1e-7, 123456.0], "error": None, "ok": False, "vocab": True},
]


@pytest.mark.parametrize("value", SENT)
def test_dumps_is_json_and_round_trips_through_both_readers(value: object) -> None:
    text = dumps(value)
    assert json.loads(text) == value and loads(text) == value
    assert loads(json.dumps(value)) == value and loads(json.dumps(value, ensure_ascii=False)) == value


def test_random_values_agree_with_the_standard_library() -> None:
    rng = random.Random(20261123)
    alphabet = "aZ09 _-\"\\/\n\t\u00e9\u2603\U0001f600\x00\x1f"

    def value(depth: int) -> object:
        pick = rng.randrange(8 if depth < 4 else 5)
        if pick == 0:
            return rng.randrange(-2**63, 2**64)
        if pick == 1:
            return rng.choice([0.0, -0.0, 1.5, 1e308, 5e-324, rng.uniform(-1e6, 1e6)])
        if pick == 2:
            return "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        if pick == 3:
            return rng.choice([True, False, None])
        if pick == 4:
            return rng.randrange(10)
        if pick in (5, 6):
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        return {"".join(rng.choice(alphabet) for _ in range(rng.randrange(6))): value(depth + 1)
                for _ in range(rng.randrange(4))}

    for _ in range(2000):
        v = value(0)
        assert json.loads(dumps(v)) == v
        assert loads(json.dumps(v)) == json.loads(json.dumps(v))


@pytest.mark.parametrize("bad", ["", "{", '{"a":1}x', "[1,]", "{'a': 1}", '"\\x"', "nul", "1 2", '{"a" 1}'])
def test_malformed_json_fails_in_both(bad: str) -> None:
    with pytest.raises(ValueError):
        json.loads(bad)
    with pytest.raises(ValueError):
        loads(bad)


def test_non_finite_floats_are_refused_like_strict_json() -> None:
    for v in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError):
            dumps({"x": v})
        with pytest.raises(ValueError):
            json.dumps({"x": v}, allow_nan=False)


def _spec(name: str, type_: str, shape: list[int]) -> dict:
    return {"name": name, "port": 0, "shape": shape, "type": type_}


def _stream(specs: list[dict], advice: dict, observations: list[tuple[str | None, int, list[list]]]) -> bytes:
    """A channel's bytes, written the way log_reader.py reads them (see the module docstring)."""
    out = json.dumps({"features": specs, "advice": advice}).encode() + b"\n"
    for context, index, tensors in observations:
        if context is not None:
            out += json.dumps({"context": context}).encode() + b"\n"
        out += json.dumps({"observation": index}).encode() + b"\n"
        for spec, values in zip(specs, tensors, strict=True):
            out += struct.pack(f"<{math.prod(spec['shape'])}{ELEMENT_TYPES[spec['type']]}", *values)
        out += b"\n"
    return out


def test_decoder_reads_llvm_format_built_by_hand() -> None:
    specs = [_spec(f"t_{t}", t, [2]) for t in ELEMENT_TYPES] + [_spec("matrix", "float", [2, 3]),
                                                                  _spec("empty", "int64_t", [0])]
    vals = {"float": [0.5, -2.25], "double": [1e300, -1e-300], "int8_t": [-128, 127], "uint8_t": [0, 255],
            "int16_t": [-32768, 32767], "uint16_t": [0, 65535], "int32_t": [-2**31, 2**31 - 1],
            "uint32_t": [0, 2**32 - 1], "int64_t": [-2**63, 2**63 - 1], "uint64_t": [0, 2**64 - 1]}
    first = [vals[t] for t in ELEMENT_TYPES] + [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], []]
    second = [list(reversed(vals[t])) for t in ELEMENT_TYPES] + [[0.0] * 6, []]
    # newline bytes inside the tensors: a line-oriented reader would split them, the decoder must not
    first[2] = [10, 10]
    data = _stream(specs, _spec("inlining_decision", "int64_t", [1]),
                   [("caller_one", 0, first), (None, 1, second), ("caller_two", 2, first)])
    for chunk in (1, 7, len(data)):
        dec = StreamDecoder()
        seen = [o for i in range(0, len(data), chunk) for o in dec.feed(data[i:i + chunk])]
        assert [(o.context, o.index) for o in seen] == [("caller_one", 0), ("caller_one", 1), ("caller_two", 2)]
        for obs, tensors in zip(seen, (first, second, first), strict=True):
            assert [list(obs.features[s["name"]]) for s in specs] == tensors
        assert dec.header == Header([TensorSpec.from_json(s) for s in specs],
                                    TensorSpec("inlining_decision", "int64_t", (1,)))
        assert dec.pending == 0


def test_a_training_log_is_not_a_channel() -> None:
    """LLVM's training logs carry `score` and no `advice`: the host refuses them with one line."""
    log = json.dumps({"features": [_spec("x", "int64_t", [1])], "score": _spec("reward", "float", [1])}).encode()
    with pytest.raises(ProtocolError, match="no 'advice' spec"):
        list(StreamDecoder().feed(log + b"\n"))
