"""The kinds of embedding the farm builds, declared once: IR2Vec (LLVM IR) and MIR2Vec (machine IR).

A kind names a triplet dataset, a vocabulary and everything keyed by them (store prefixes,
builders, Celery schedules); a new kind is a line here and the code that makes its triplets.
"""

from __future__ import annotations

from farm.errors import InputError

KINDS = ("ir", "mir")


def check_kind(kind: str, what: str = "kind") -> str:
    """`kind` if the farm knows it, else a one-line InputError."""
    if kind not in KINDS:
        raise InputError(f"unknown {what} {kind!r}: use one of {', '.join(KINDS)}")
    return kind
