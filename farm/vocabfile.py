"""The vocabulary file: deterministic bytes, its checksum, and the schema check LLVM relies on.

In farm/, beside the sections it checks (farm/embeddings.py), because both sides read the format: the
vocabulary trainer writes and validates it (vocabgen/), the policy hosts check the one a compile is given
(policyhost/launcher.py), the eviction trainer reads MIR vectors from it (policytrain/evict_context.py).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from farm import jsonio
from farm.embeddings import SECTIONS
from farm.errors import InputError


class ValidationError(InputError):
    """A vocabulary that must not be published."""


#: The largest |value| a vocabulary may hold. pykeen's TransE keeps every entity vector at L2 norm
#: 1 (it re-normalises them after each step), so no component of a vector it trains exceeds 1, nor
#: does a section mean (the vector unseen entities get); LLVM's in-tree seedEmbeddingVocab75D.json
#: holds values of order 0.1-0.4. Ten times the largest possible TransE value leaves room for a
#: trainer that does not normalise, and still refuses what only a bug or a hand edit produces:
#: LLVM sums these vectors over every instruction of a function (weighted 1, 0.5 and 0.2), and
#: the inliner hands the sums to the policy as float32, so huge values become huge or infinite
#: features long before the doubles in `llvm-ir2vec` overflow.
MAX_ABS = 10.0


def dumps(vocab: dict[str, dict[str, list[float]]]) -> bytes:
    """Compact, key order kept: same vectors, same bytes."""
    return (json.dumps(vocab, separators=(",", ":"), allow_nan=False) + "\n").encode()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parse(data: bytes, where: str = "vocabulary") -> dict[str, Any]:
    obj = jsonio.loads(data, where, ValidationError)
    if not isinstance(obj, dict):
        raise ValidationError(f"{where}: the top level must be a JSON object of sections")
    return obj


def _fits_a_float(x: int) -> bool:
    try:
        float(x)
    except OverflowError:
        return False
    return True


def check_schema(kind: str, vocab: dict[str, Any], where: str = "vocabulary") -> int:
    """Exactly the kind's sections, each {key: [numbers]}, one dimension, finite values; returns the dimension."""
    want = SECTIONS[kind]
    if set(vocab) != set(want):
        missing = sorted(set(want) - set(vocab))
        extra = sorted(set(vocab) - set(want))
        raise ValidationError(
            f"{where}: {kind} sections must be {', '.join(want)}"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unexpected {', '.join(extra)}" if extra else "")
        )
    dim = None
    for section in want:
        entries = vocab[section]
        if not isinstance(entries, dict) or not entries:
            raise ValidationError(f"{where}: section {section} must be a non-empty object")
        for key, vec in entries.items():
            if not isinstance(vec, list) or not vec:
                raise ValidationError(f"{where}: {section}.{key} is not a non-empty list of numbers")
            if dim is None:
                dim = len(vec)
            elif len(vec) != dim:
                raise ValidationError(f"{where}: {section}.{key} has dimension {len(vec)}, expected {dim}")
            for x in vec:
                if isinstance(x, bool) or not isinstance(x, int | float):
                    raise ValidationError(f"{where}: {section}.{key} holds a non-number {x!r}")
                if isinstance(x, int) and not _fits_a_float(x):  # JSON integers are unbounded; `isfinite` raises
                    raise ValidationError(f"{where}: {section}.{key} holds an integer too large for a float")
                if not math.isfinite(x):
                    raise ValidationError(f"{where}: {section}.{key} holds {x} (NaN/Inf)")
    assert dim is not None
    return dim


def check_magnitude(vocab: dict[str, Any], where: str = "vocabulary", bound: float = MAX_ABS) -> None:
    """No value beyond ±`bound` (see MAX_ABS for why); the schema has been checked."""
    worst = max(((abs(x), section, key) for section, entries in vocab.items()
                 for key, vec in entries.items() for x in vec), default=(0.0, "", ""))
    if worst[0] > bound:
        raise ValidationError(f"{where}: {worst[1]}.{worst[2]} holds a value of magnitude {worst[0]:g}, beyond "
                              f"{bound:g}: no trainer gives such values (TransE's are at most 1)")


def check_coverage(vocab: dict[str, Any], required: dict[str, set[str]], where: str = "vocabulary") -> None:
    """Every entity LLVM knows has a vector (LLVM itself would silently use zeros)."""
    for section, keys in required.items():
        missing = sorted(keys - set(vocab.get(section, {})))
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            raise ValidationError(f"{where}: {len(missing)} LLVM entities of {section} have no vector: {shown}")
