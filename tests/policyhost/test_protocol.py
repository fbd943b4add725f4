"""LLVM's interactive wire format: decoding what the real clang-22 sends, in any chunking."""

from __future__ import annotations

import random
import struct

import pytest

from farm.toolchain import Toolchain
from policyhost.launcher import run_compile
from policyhost.protocol import Header, Observation, ProtocolError, StreamDecoder, TensorSpec, encode_observation
from policyhost.runnable import HeuristicPolicy
from tests.policyhost.conftest import CSRC


class Capture(HeuristicPolicy):
    """The heuristic, keeping the header and observations it saw."""

    def __init__(self) -> None:
        self.headers: list[Header] = []
        self.seen: list[Observation] = []

    def bind(self, header: Header) -> None:
        super().bind(header)
        self.headers.append(header)

    def decide(self, obs: Observation) -> int:
        self.seen.append(obs)
        return super().decide(obs)


@pytest.fixture(scope="module")
def real_session(toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> Capture:
    cap = Capture()
    out = tmp_path_factory.mktemp("proto") / "sort.o"
    outcome = run_compile(["clang", "-Oz", "-c", str(CSRC / "sort.c"), "-o", str(out)], cap, toolchain=toolchain)
    assert outcome.ok, outcome.error
    assert cap.seen, "sort.c has call sites the inliner must ask about"
    return cap


def test_real_header_is_the_inliner_feature_set(real_session: Capture) -> None:
    header = real_session.headers[0]
    names = [f.name for f in header.features]
    assert names[-1] == "inlining_default"
    assert {"callee_basic_block_count", "callsite_height", "cost_estimate", "threshold"} <= set(names)
    assert len(names) == 39  # 38 features plus the default decision (ARCHITECTURE.md section 5)
    assert all(f.type == "int64_t" and f.shape == (1,) for f in header.features)
    assert header.advice == TensorSpec("inlining_decision", "int64_t", (1,))
    assert header.observation_size == 39 * 8


def test_round_trip_in_any_chunking(real_session: Capture) -> None:
    header = real_session.headers[0]
    stream = header.encode() + b"".join(
        encode_observation(header, o, with_context=(i == 0)) for i, o in enumerate(real_session.seen)
    )
    rng = random.Random(1)
    for chunking in ("bytes", "random", "whole"):
        dec, got, pos = StreamDecoder(), [], 0
        while pos < len(stream):
            n = 1 if chunking == "bytes" else rng.randint(1, 97) if chunking == "random" else len(stream)
            got += dec.feed(stream[pos:pos + n])
            pos += n
        assert dec.header == header
        assert [(o.index, o.features) for o in got] == [(o.index, o.features) for o in real_session.seen]
        assert got[0].context == ""  # the inliner names no context
        assert dec.pending == 0


def test_second_header_starts_a_new_session(real_session: Capture) -> None:
    header = real_session.headers[0]
    one = header.encode() + encode_observation(header, real_session.seen[0], with_context=True)
    dec = StreamDecoder()
    got = list(dec.feed(one + one))
    assert dec.sessions == 2 and len(got) == 2 and got[1].index == got[0].index


def test_truncated_observation_stays_pending(real_session: Capture) -> None:
    header = real_session.headers[0]
    full = header.encode() + encode_observation(header, real_session.seen[0])
    dec = StreamDecoder()
    assert list(dec.feed(full[:-5])) == []
    assert dec.pending > 0
    assert len(list(dec.feed(full[-5:]))) == 1 and dec.pending == 0


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        (b"not json\n", "header is not JSON"),
        (b'{"features": [], "score": {}}\n', "no 'advice' spec"),
        (b'{"features": [{"name": "x", "type": "int128_t", "shape": [1]}], "advice": {}}\n', "unsupported element"),
        (b'{"features": [{"name": "x", "type": "int64_t", "shape": [1]}], "advice": '
         b'{"name": "a", "type": "int64_t", "shape": [1]}}\n{"what": 1}\n', "unknown event"),
        (b'{"features": [{"name": "x", "type": "int64_t", "shape": [1]}], "advice": '
         b'{"name": "a", "type": "int64_t", "shape": [1]}}\n{"observation": 0}\n12345678X',
         "not followed by a newline"),
        *((b'{"features": [{"name": "x", "type": "int64_t", "shape": [1]}], "advice": '
           b'{"name": "a", "type": "int64_t", "shape": [1]}}\n{"observation": ' + index + b'}\n12345678\n',
           "observation index must be an integer")
          for index in (b'"x"', b"null", b"1.5", b"true")),
    ],
)
def test_malformed_streams_are_protocol_errors(stream: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        list(StreamDecoder().feed(stream))


def test_tensor_encoding_is_llvm_raw_layout() -> None:
    advice = TensorSpec("index_to_evict", "int64_t", (1,))
    assert advice.encode(5) == struct.pack("<q", 5)
    mask = TensorSpec("mask", "int64_t", (1, 33))
    assert mask.nbytes == 33 * 8
    emb = TensorSpec("callee_embedding", "float", (3,))
    assert emb.decode(emb.encode([0.5, -1.0, 2.0])) == (0.5, -1.0, 2.0)
    with pytest.raises(ProtocolError, match="2 values for shape"):
        emb.encode([1.0, 2.0])
