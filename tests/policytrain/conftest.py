"""Fixtures of the trainer's tests: the policy side's (tests/policyhost/conftest.py), which the trainer stands on."""

from __future__ import annotations

from tests.policyhost.conftest import ir2vec_vocab, packages  # noqa: F401  (fixtures the trainer's tests use)
