"""Training parameters: sound defaults, every value recorded in the manifest."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

from farm.errors import InputError
from vocabgen.layout import DEFAULT_DIM

OPTIMIZERS = ("Adam", "SGD", "Adagrad")
MAX_SEED = 2**32  # torch and numpy take seeds in [0, 2**32)
_TYPES: dict[str, type] = {
    "dim": int, "epochs": int, "margin": float, "optimizer": str, "lr": float,
    "batch_size": int, "negatives": int, "seed": int, "holdout": float, "norm": int, "warm_start": bool,
    "warm_epochs": int,
}


def _convert(name: str, value: Any) -> Any:
    """`value` as the parameter's type; bools, fractional integers and NaN/Inf are refused."""
    kind = _TYPES[name]
    if kind is bool:
        if not isinstance(value, bool):
            raise InputError(f"training parameter {name} must be true or false, got {value!r}")
        return value
    if isinstance(value, bool) or value is None:
        raise InputError(f"training parameter {name} must be {kind.__name__}, got {value!r}")
    try:
        if kind is int and isinstance(value, float):
            if not value.is_integer():
                raise ValueError(value)
            return int(value)
        converted = kind(value)
    except (TypeError, ValueError):
        raise InputError(f"training parameter {name} must be {kind.__name__}, got {value!r}") from None
    if kind is float and not math.isfinite(converted):
        raise InputError(f"training parameter {name} must be a finite number, got {value!r}")
    return converted


@dataclass(frozen=True)
class TrainParams:
    """TransE with L1 distance and margin ranking loss on unique triples (the IR2Vec recipe).

    `dim` None means the kind's default (75 for IR, 100 for MIR, as LLVM's shipped vocabularies).
    Adam at 0.01 gave a better held-out MRR than SGD on real Debian corpora (bench/README.md#bench_vocab_quality).
    `warm_start`: a retrain starts from the previous `latest` vectors where the entity sets agree
    (vocabgen/warm.py), so consecutive versions stay comparable; false trains from a random start.
    A warm start trains `warm_epochs` instead of `epochs`: 1,000 epochs of Adam walk as far from
    any start as from a random one, and two policies trained with the previous version read the
    new one at 1.42x and 1.01x the heuristic's `.text` (cold: 1.28x and 1.07x); after 100 epochs
    at 0.990x and 0.979x (0.978x and 1.000x with their own), at the same link-prediction quality
    (bench/README.md#bench_vocab_warm).
    """

    dim: int | None = None
    epochs: int = 1000
    margin: float = 1.0
    optimizer: str = "Adam"
    lr: float = 0.01
    batch_size: int = 256
    negatives: int = 1
    seed: int = 0
    holdout: float = 0.1
    norm: int = 1
    warm_start: bool = True
    warm_epochs: int = 100

    def resolved(self, kind: str) -> TrainParams:
        """Defaults filled in for `kind`, every value checked."""
        p = dataclasses.replace(self, dim=DEFAULT_DIM[kind] if self.dim is None else self.dim)
        for name in ("dim", "epochs", "warm_epochs", "batch_size", "negatives"):
            if getattr(p, name) < 1:
                raise InputError(f"training parameter {name} must be at least 1, got {getattr(p, name)}")
        for name in ("margin", "lr"):
            if not (math.isfinite(getattr(p, name)) and getattr(p, name) > 0):
                raise InputError(f"training parameter {name} must be a positive number, got {getattr(p, name)}")
        if not 0 <= p.seed < MAX_SEED:
            raise InputError(f"training parameter seed must be in [0, 2**32), got {p.seed}")
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
    def from_dict(cls, data: dict[str, Any] | None, base: TrainParams | None = None) -> TrainParams:
        """Parameters from JSON or the command line, each over `base` (a recipe; default: these defaults);
        `dim` null is the kind's default."""
        data = dict(data or {})
        unknown = set(data) - set(_TYPES)
        if unknown:
            raise InputError(f"unknown training parameter(s): {', '.join(sorted(unknown))}")
        if data.get("dim", 0) is None:
            del data["dim"]
        return dataclasses.replace(base or cls(), **{k: _convert(k, v) for k, v in data.items()})

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


#: How hard a vocabulary training works, one recipe per use, as the inliner policy's (policytrain/recipes.py):
#: `[vocab] recipe` (MLGO_FARM_VOCAB_RECIPE) picks the one the Celery retrain and `vocab train` start from, and
#: explicit parameters (`--epochs`, ...) override it field by field.
RECIPES: dict[str, TrainParams] = {
    # the nightly's: the defaults above (1,000 epochs cold, 100 warm)
    "nightly": TrainParams(),
    # `make demo`: the same stages (held-out measure, the published training, a warm start when a `latest`
    # exists) at a tenth of the epochs, so that the demo's MIR vocabulary trains in minutes on 2 cores; not a
    # vocabulary to use, one that shows the chain
    "demo": TrainParams(epochs=100, warm_epochs=10),
}
DEFAULT_RECIPE = "nightly"


def recipe(name: str) -> TrainParams:
    """The recipe called `name`, or a one-line InputError naming it and the known ones."""
    try:
        return RECIPES[name]
    except KeyError:
        raise InputError(f"unknown vocabulary training recipe {name!r}: use one of {', '.join(RECIPES)}") from None


def configured(settings) -> TrainParams:
    """The recipe `[vocab] recipe` names (farm/config.py), or one line naming the setting."""
    try:
        return recipe(settings.vocab.recipe)
    except InputError as e:
        raise InputError(f"[vocab] recipe: {e}") from None

