"""TransE with pykeen on LLVM's numeric ids: held-out link prediction, then the published vectors.

pykeen wants (head, relation, tail); train2id.txt is (head, tail, relation). The factory is
built from the numeric arrays, so entity i of LLVM is row i of the embedding. On CPU with one
thread and a fixed seed, two runs give byte-identical vectors.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from farm import hold
from vocabgen.dataset import Dataset
from vocabgen.params import TrainParams

if TYPE_CHECKING:
    from vocabgen.warm import WarmStart


#: Told after each epoch of a training: (stage, epochs done, epochs in all). The held-out measurement and the
#: published training are two stages of one `vocab train`: a reader of a long retrain sees both.
OnEpoch = Callable[[str, int, int], None]
HOLDOUT_STAGE, TRAINING_STAGE = "held-out training", "training"


@dataclass
class TrainResult:
    vectors: np.ndarray  # (entities, dim) float32, row = LLVM entity id
    losses: list[float]
    seconds: float
    relations: np.ndarray | None = None  # (relations, dim) float32, row = relation id


def ensure_pystow_home(var_dir: Path) -> None:
    """pykeen (through pystow) writes under ~/.data unless told otherwise."""
    os.environ.setdefault("PYSTOW_HOME", str(Path(var_dir) / "pystow"))


@contextlib.contextmanager
def _quiet_gc() -> Iterator[Any]:
    """pykeen runs gc.collect() after every epoch; freezing the long-lived heap makes that cheap.

    The heap is frozen as it is, without a collection first: a full collection of a worker's heap
    (torch and pykeen imported, some 400k objects) costs 0.2-0.3 s, as much as 200 epochs of
    training on a small dataset. Garbage frozen with it is only kept until the end of training.
    The heap is frozen again after each epoch, right after pykeen's own collection (the first
    epoch imports and caches lazily), and unfrozen at the end so a long-running worker does not
    keep garbage forever.
    """
    from pykeen.training.callbacks import TrainingCallback

    class RefreezeAfterEachEpoch(TrainingCallback):
        def post_epoch(self, epoch: int, epoch_loss: float, **kwargs: Any) -> None:
            gc.freeze()  # pykeen has just collected: only live objects are frozen
            hold.checkpoint("training")  # tests only (farm/hold.py); returns at once otherwise

    gc.freeze()
    try:
        yield RefreezeAfterEachEpoch()
    finally:
        gc.unfreeze()


def _quiet_logs() -> None:
    """pykeen logs its progress at INFO and torch_max_mem warns about CPU tensors: follow the farm's level."""
    level = logging.getLogger().getEffectiveLevel()
    logging.getLogger("pykeen").setLevel(level)
    logging.getLogger("torch_max_mem").setLevel(max(level, logging.ERROR))


def factory(triples: np.ndarray, entities: list[str], relations: list[str]):
    """A pykeen TriplesFactory that keeps LLVM's ids; `triples` in (head, tail, relation) order."""
    import torch
    from pykeen.triples import TriplesFactory

    _quiet_logs()
    hrt = torch.as_tensor(np.ascontiguousarray(triples[:, [0, 2, 1]]), dtype=torch.long)
    return TriplesFactory(
        mapped_triples=hrt,
        entity_to_id={n: i for i, n in enumerate(entities)},
        relation_to_id={n: i for i, n in enumerate(relations)},
    )


@functools.cache
def _pykeen_parts() -> SimpleNamespace:
    """Four small subclasses of public pykeen classes that remove per-batch overhead, nothing else.

    pykeen 1.11 asks for a device eight times per batch (`model.device` twice, each embedding's
    `device` six times), and each answer walks every submodule's parameters and buffers;
    `Embedding.device` here reads its one weight and the
    model's `device` asks its embeddings, which hold the only parameters of TransE as built here
    (no buffers): same answer, and pykeen's own ambiguity error if they disagree. pykeen's sLCWA
    instances draw each batch as a Python list of ints from torch's RandomSampler and index the
    triples with it; `TensorBatches` draws the very same permutation
    (same seed drawn from the global generator, same private generator) and splits it into index
    tensors, so training sees the same batches in the same order and gives the same bytes.
    (What each costs is measured in bench/README.md#bench_training.)
    They lean on two internals of the pinned pykeen 1.11: the loop's protected
    `_create_training_data_loader` hook and `Embedding._embeddings`; tests/vocabgen/test_training.py
    compares them with pykeen's own classes (batches, device answers, trained bytes).
    """
    import torch
    from pykeen.models import TransE
    from pykeen.nn import Embedding
    from pykeen.training import SLCWATrainingLoop
    from pykeen.triples.instances import BatchedSLCWAInstances
    from torch.utils.data import DataLoader

    class DirectDeviceEmbedding(Embedding):
        @property
        def device(self) -> torch.device:
            return self._embeddings.weight.device

    class DirectDeviceTransE(TransE):
        @property
        def device(self) -> torch.device:
            reps = (*self.entity_representations, *self.relation_representations)
            devices = {r.device for r in reps}
            if len(devices) == 1 and all(isinstance(r, DirectDeviceEmbedding) for r in reps):
                return devices.pop()
            return super().device

    class TensorBatches(BatchedSLCWAInstances):
        def iter_triple_ids(self) -> Iterator[torch.Tensor]:
            n = len(self.mapped_triples)
            # exactly what torch.utils.data.RandomSampler does for pykeen's batches
            seed = int(torch.empty((), dtype=torch.int64).random_().item())
            perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
            for ids in perm.split(self.batch_size):
                if len(ids) == self.batch_size or not self.drop_last:
                    yield ids

    class TensorBatchLoop(SLCWATrainingLoop):
        """sLCWA training fed by `TensorBatches` (pykeen's own batches otherwise, e.g. for `sampler=`)."""

        def _create_training_data_loader(self, triples_factory, *, sampler, batch_size, drop_last, **kwargs):
            if sampler is not None or kwargs.get("num_workers"):
                return super()._create_training_data_loader(
                    triples_factory, sampler=sampler, batch_size=batch_size, drop_last=drop_last, **kwargs
                )
            kwargs.pop("shuffle", None)  # always shuffled
            instances = TensorBatches.from_triples_factory(
                triples_factory,
                batch_size=batch_size,
                drop_last=drop_last,
                negative_sampler=self.negative_sampler,
                negative_sampler_kwargs=self.negative_sampler_kwargs,
                loss_weighter=self.loss_weighter,
                loss_weighter_kwargs=self.loss_weighter_kwargs,
            )
            return DataLoader(dataset=instances, batch_size=None, batch_sampler=None, **kwargs)

    return SimpleNamespace(
        Embedding=DirectDeviceEmbedding, TransE=DirectDeviceTransE, Instances=TensorBatches, Loop=TensorBatchLoop
    )


def _warm_initializers(tf, warm: WarmStart) -> dict[str, Any]:
    """pykeen initializers that start from `warm` (vocabgen/warm.py): TransE's own random start, then overwritten.

    pykeen (re-)initialises the weights when training starts, so the start goes in as initializers,
    not as weights set beforehand. The random start is drawn in full first, so the generator is in
    the same state as for a cold training and unknown entities start where they would have. A
    relation whose triples join known entities starts at the mean of t - h over those triples:
    where TransE (h + r = t) puts it given those entities.
    """
    import torch
    from pykeen.nn.init import xavier_uniform_, xavier_uniform_norm_

    known = torch.as_tensor(warm.known)
    start = torch.as_tensor(warm.vectors)
    h, r, t = tf.mapped_triples.T
    both = known[h] & known[t]

    def entities(x: torch.Tensor) -> torch.Tensor:
        x = xavier_uniform_(x)
        x[known] = start[known].to(x.dtype)
        return x

    def relations(x: torch.Tensor) -> torch.Tensor:
        x = xavier_uniform_norm_(x)
        diff = (start[t[both]] - start[h[both]]).to(x.dtype)
        sums = torch.zeros_like(x).index_add_(0, r[both], diff)
        counts = torch.bincount(r[both], minlength=x.shape[0])
        seen = counts > 0
        x[seen] = sums[seen] / counts[seen].unsqueeze(1).to(x.dtype)
        return x

    return {"entity_initializer": entities, "relation_initializer": relations}


def _model(tf, p: TrainParams, warm: WarmStart | None = None):
    from pykeen.losses import MarginRankingLoss

    parts = _pykeen_parts()
    return parts.TransE(
        triples_factory=tf,
        embedding_dim=p.dim,
        scoring_fct_norm=p.norm,
        loss=MarginRankingLoss(margin=p.margin),
        random_seed=p.seed,
        entity_representations=parts.Embedding,
        relation_representations=parts.Embedding,
        **(_warm_initializers(tf, warm) if warm is not None else {}),
    )


def _epochs_told(on_epoch: OnEpoch, stage: str, total: int):
    """A pykeen callback telling `on_epoch` of every finished epoch (pykeen's own hook for it)."""
    from pykeen.training.callbacks import TrainingCallback

    class TellEpoch(TrainingCallback):
        def post_epoch(self, epoch: int, epoch_loss: float, **kwargs: Any) -> None:
            on_epoch(stage, epoch, total)

    return TellEpoch()


def fit(tf, p: TrainParams, warm: WarmStart | None = None, on_epoch: OnEpoch | None = None,
        stage: str = TRAINING_STAGE):
    """Train TransE on `tf`, from `warm`'s vectors for `warm_epochs` if given; returns (model, losses, seconds).
    `on_epoch` is told of each epoch done, as `stage`."""
    import torch
    from pykeen.utils import set_random_seed

    _quiet_logs()
    torch.set_num_threads(1)
    set_random_seed(p.seed)
    model = _model(tf, p, warm)
    optimizer = getattr(torch.optim, p.optimizer)(model.parameters(), lr=p.lr)
    loop = _pykeen_parts().Loop(
        model=model,
        triples_factory=tf,
        optimizer=optimizer,
        negative_sampler="basic",
        negative_sampler_kwargs={"num_negs_per_pos": p.negatives},
        automatic_memory_optimization=False,
    )
    epochs = p.epochs if warm is None else p.warm_epochs
    start = time.perf_counter()
    with _quiet_gc() as refreeze:
        losses = loop.train(
            triples_factory=tf,
            num_epochs=epochs,
            batch_size=p.batch_size,
            use_tqdm=False,
            use_tqdm_batch=False,
            pin_memory=False,
            # told first: a test's hold after the epoch (farm/hold.py) finds the epoch already told
            callbacks=([_epochs_told(on_epoch, stage, epochs)] if on_epoch else []) + [refreeze],
        )
    return model, [float(x) for x in losses], time.perf_counter() - start


def entity_vectors(model) -> np.ndarray:
    import torch

    with torch.no_grad():
        return model.entity_representations[0]().detach().cpu().numpy().astype(np.float32)


def relation_vectors(model) -> np.ndarray:
    import torch

    with torch.no_grad():
        return model.relation_representations[0]().detach().cpu().numpy().astype(np.float32)


def holdout_metrics(ds: Dataset, p: TrainParams, warm: WarmStart | None = None,
                    on_epoch: OnEpoch | None = None) -> dict[str, Any]:
    """Filtered link prediction (MRR, Hits@1/10) of a model trained without a held-out split.

    The model starts as the published one does (`warm`); the previous version may have trained on
    some held-out triples, which flatters a warm start slightly (bench/README.md#bench_vocab_warm measures by
    how much).
    """
    if p.holdout <= 0:
        return {"skipped": "holdout is 0"}
    tf = factory(ds.triples, ds.entities, ds.relations)
    test_size = round(tf.num_triples * p.holdout)
    if test_size < 1 or tf.num_triples - test_size < 1:
        return {"skipped": f"{tf.num_triples} triples are too few to hold out {p.holdout:.0%}"}
    train, test = tf.split([1 - p.holdout, p.holdout], random_state=p.seed)
    model, _, seconds = fit(train, p, warm, on_epoch, HOLDOUT_STAGE)
    from pykeen.evaluation import RankBasedEvaluator

    result = RankBasedEvaluator(filtered=True).evaluate(
        model,
        test.mapped_triples,
        additional_filter_triples=[train.mapped_triples],
        batch_size=256,
        use_tqdm=False,
    )
    return {
        "mrr": float(result.get_metric("both.realistic.inverse_harmonic_mean_rank")),
        "hits_at_1": float(result.get_metric("both.realistic.hits_at_1")),
        "hits_at_10": float(result.get_metric("both.realistic.hits_at_10")),
        "train_triples": int(train.num_triples),
        "test_triples": int(test.num_triples),
        "seconds": round(seconds, 3),
    }


def train_all(ds: Dataset, p: TrainParams, warm: WarmStart | None = None,
              on_epoch: OnEpoch | None = None) -> TrainResult:
    """The published vectors: trained on every triple."""
    model, losses, seconds = fit(factory(ds.triples, ds.entities, ds.relations), p, warm, on_epoch)
    return TrainResult(entity_vectors(model), losses, seconds, relation_vectors(model))
