"""Training parameters: sound defaults, every value recorded in the manifest."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from farm.errors import InputError
from vocabgen.layout import DEFAULT_DIM

OPTIMIZERS = ("Adam", "SGD", "Adagrad")


@dataclass(frozen=True)
class TrainParams:
    """TransE with L1 distance and margin ranking loss on unique triples (the IR2Vec recipe).

    `dim` 0 means the kind's default (75 for IR, 100 for MIR, as LLVM's shipped vocabularies).
    Adam at 0.01 gave a better held-out MRR than SGD on real Debian corpora (bench/README.md).
    """

    dim: int = 0
    epochs: int = 1000
    margin: float = 1.0
    optimizer: str = "Adam"
    lr: float = 0.01
    batch_size: int = 256
    negatives: int = 1
    seed: int = 0
    holdout: float = 0.1
    norm: int = 1

    def resolved(self, kind: str) -> TrainParams:
        """Defaults filled in for `kind`, every value checked."""
        p = dataclasses.replace(self, dim=self.dim or DEFAULT_DIM[kind])
        for name in ("dim", "epochs", "batch_size", "negatives"):
            if getattr(p, name) < 1:
                raise InputError(f"training parameter {name} must be at least 1, got {getattr(p, name)}")
        if not (p.margin > 0 and p.lr > 0):
            raise InputError("training parameters margin and lr must be positive")
        if not 0 <= p.holdout < 0.5:
            raise InputError(f"holdout fraction must be in [0, 0.5), got {p.holdout}")
        if p.optimizer not in OPTIMIZERS:
            raise InputError(f"unknown optimizer {p.optimizer!r}: use one of {', '.join(OPTIMIZERS)}")
        if p.norm not in (1, 2):
            raise InputError(f"norm must be 1 or 2, got {p.norm}")
        return p

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> TrainParams:
        data = dict(data or {})
        names = {f.name: f for f in dataclasses.fields(cls)}
        unknown = set(data) - set(names)
        if unknown:
            raise InputError(f"unknown training parameter(s): {', '.join(sorted(unknown))}")
        try:
            values = {k: type(getattr(cls(), k))(v) for k, v in data.items()}
        except (TypeError, ValueError) as e:
            raise InputError(f"bad training parameter: {e}") from None
        return cls(**values)

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]
