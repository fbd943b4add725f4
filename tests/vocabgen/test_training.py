"""pykeen training on LLVM's ids: determinism, held-out metrics, unseen entities, the LLVM layout."""

from __future__ import annotations

import dataclasses
import gc
import json
from pathlib import Path

import numpy as np
import pytest

from farm.errors import InputError
from farm.toolchain import Toolchain
from tests.vocabgen.conftest import TINY
from vocabgen import layout
from vocabgen.build import train_vocabulary
from vocabgen.dataset import load_dataset
from vocabgen.params import TrainParams
from vocabgen.training import _model, _pykeen_parts, _quiet_gc, factory, fit
from vocabgen.validate import check_llvm_reads_back


def test_factory_keeps_llvm_ids_in_hrt_order(ir_dataset: Path) -> None:
    ds = load_dataset(ir_dataset)
    tf = factory(ds.triples, ds.entities, ds.relations)
    assert tf.num_entities == len(ds.entities) and tf.num_relations == len(ds.relations)
    assert tf.mapped_triples.numpy().tolist() == ds.triples[:, [0, 2, 1]].tolist()
    assert tf.entity_to_id[ds.entities[7]] == 7


def test_same_seed_same_bytes_other_seed_other_bytes(ir_dataset: Path) -> None:
    ds = load_dataset(ir_dataset)
    a, ma = train_vocabulary(ds, TINY)
    told: list[tuple[str, int, int]] = []
    b, mb = train_vocabulary(ds, TINY, on_epoch=lambda *at: told.append(at))  # told of every epoch, same bytes
    n = TINY.epochs
    epochs = range(1, n + 1)
    assert told == [("held-out training", e, n) for e in epochs] + [("training", e, n) for e in epochs]
    c, _ = train_vocabulary(ds, dataclasses.replace(TINY, seed=1))
    assert a == b and ma["sha256"] == mb["sha256"]
    assert a != c
    assert ma["parameters"] == {**TINY.to_dict(), "dim": 8}
    assert ma["lineage"]["dataset_id"] == ds.id and ma["lineage"]["llvm_version"]


def test_metrics_and_unseen_entities(ir_dataset: Path) -> None:
    ds = load_dataset(ir_dataset)
    data, m = train_vocabulary(ds, TINY)
    h = m["metrics"]["holdout"]
    n = len(ds.triples)
    assert h["test_triples"] == n - int(n * (1 - TINY.holdout)), "pykeen's split: the train share rounded down"
    assert h["train_triples"] + h["test_triples"] == len(ds.triples)
    assert 0 < h["mrr"] <= 1 and 0 <= h["hits_at_1"] <= h["hits_at_10"] <= 1
    analogy = m["metrics"]["analogy"]
    assert analogy["asked"] > 0, "the test corpus has integer and float arithmetic: IR analogy questions apply"
    assert 0 <= analogy["correct"] <= analogy["asked"]
    assert isinstance(analogy["score"], float) and analogy["score"] == analogy["correct"] / analogy["asked"]
    vocab = json.loads(data)
    trained = set(ds.trained_entities.tolist())
    placement = layout.placement("ir", ds.entities)
    for section in layout.SECTIONS["ir"]:
        seen = [k for i, (s, k) in enumerate(placement) if s == section and i in trained]
        unseen = [k for i, (s, k) in enumerate(placement) if s == section and i not in trained]
        assert m["coverage"][section] == {"trained": len(seen), "total": len(seen) + len(unseen), "filler": unseen}
        if seen and unseen:
            mean = np.mean([vocab[section][k] for k in seen], axis=0)
            assert np.allclose(vocab[section][unseen[0]], mean, atol=2e-6)
    assert sum(len(v) for v in vocab.values()) == len(ds.entities)
    assert list(m["coverage"]) == list(layout.SECTIONS["ir"]) and m["filler_policy"] == "section-mean"


@pytest.mark.parametrize("kind", ["ir", "mir"])
def test_llvm_reads_every_entity_from_its_section(kind: str, request, toolchain: Toolchain, tmp_path: Path) -> None:
    """Distinct vectors per entity: LLVM's own vocabulary printer must read each one back under its name."""
    ds = load_dataset(request.getfixturevalue(f"{kind}_dataset"))
    rng = np.random.default_rng(0)
    vectors = rng.uniform(-1, 1, size=(len(ds.entities), 4))
    vocab = layout.build_vocab(kind, ds.entities, vectors)
    path = tmp_path / "v.json"
    path.write_text(json.dumps(vocab))
    assert check_llvm_reads_back(kind, vocab, path, toolchain, tmp_path) == len(ds.entities)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"batch_size": 0}, "batch_size must be at least 1, got 0"),
        ({"dim": 0}, "dim must be at least 1, got 0"),
        ({"dim": -3}, "dim must be at least 1, got -3"),
        ({"epochs": 0}, "epochs must be at least 1"),
        ({"negatives": -1}, "negatives must be at least 1"),
        ({"seed": -1}, r"seed must be in \[0, 2\*\*32\), got -1"),
        ({"seed": 2**32}, r"seed must be in \[0, 2\*\*32\), got 4294967296"),
        ({"lr": 0}, "lr must be a positive number, got 0.0"),
        ({"margin": -1.0}, "margin must be a positive number"),
        ({"lr": "nan"}, "lr must be a finite number"),
        ({"dim": 2.5}, "dim must be int, got 2.5"),
        ({"epochs": True}, "epochs must be int, got True"),
        ({"optimizer": "Lion"}, "unknown optimizer"),
        ({"epoch": 3}, "unknown training parameter"),
    ],
)
def test_bad_parameters_are_rejected(params: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        TrainParams.from_dict(params).resolved("ir")


def test_parameter_defaults_and_extremes(ir_dataset: Path) -> None:
    assert TrainParams().resolved("mir").dim == 100 and TrainParams().resolved("ir").dim == 75
    assert TrainParams.from_dict({"dim": None}).resolved("ir").dim == 75
    assert TrainParams.from_dict({"seed": 2**32 - 1, "dim": "8", "lr": 1}).resolved("ir") == TrainParams(
        seed=2**32 - 1, dim=8, lr=1.0)
    assert TrainParams().resolved("ir").digest() == TrainParams(dim=75).resolved("ir").digest()
    _, m = train_vocabulary(load_dataset(ir_dataset), dataclasses.replace(TINY, epochs=1, seed=2**32 - 1))
    assert m["parameters"]["seed"] == 2**32 - 1  # the largest seed torch and numpy take trains


def _stock_pykeen_fit(tf, p: TrainParams):
    """The same training with pykeen's own classes only: the reference the farm's subclasses must match."""
    import torch
    from pykeen.losses import MarginRankingLoss
    from pykeen.models import TransE
    from pykeen.training import SLCWATrainingLoop
    from pykeen.utils import set_random_seed

    torch.set_num_threads(1)
    set_random_seed(p.seed)
    model = TransE(triples_factory=tf, embedding_dim=p.dim, scoring_fct_norm=p.norm,
                   loss=MarginRankingLoss(margin=p.margin), random_seed=p.seed)
    loop = SLCWATrainingLoop(model=model, triples_factory=tf, optimizer=torch.optim.Adam(model.parameters(), lr=p.lr),
                             negative_sampler="basic", negative_sampler_kwargs={"num_negs_per_pos": p.negatives},
                             automatic_memory_optimization=False)
    with pytest.warns(DeprecationWarning, match="always shuffled"):
        losses = loop.train(triples_factory=tf, num_epochs=p.epochs, batch_size=p.batch_size, use_tqdm=False,
                            pin_memory=False)
    return model, losses


@pytest.mark.parametrize("negatives", [1, 3])
def test_fit_gives_stock_pykeens_bytes(ir_dataset: Path, negatives: int) -> None:
    """The farm's loop, batches and device answers change the speed only: same losses, same vectors, bit for bit."""
    ds = load_dataset(ir_dataset)
    tf = factory(ds.triples, ds.entities, ds.relations)
    p = dataclasses.replace(TINY, batch_size=48, negatives=negatives, seed=3).resolved("ir")
    assert tf.num_triples % p.batch_size, "the last, short batch must be exercised"
    ours, our_losses, _ = fit(tf, p)
    stock, stock_losses = _stock_pykeen_fit(tf, p)
    assert isinstance(ours, _pykeen_parts().TransE) and not isinstance(stock, _pykeen_parts().TransE)
    assert our_losses == stock_losses
    for a, b in zip(ours.parameters(), stock.parameters(), strict=True):
        assert a.detach().numpy().tobytes() == b.detach().numpy().tobytes()


@pytest.mark.parametrize("drop_last", [False, True])
def test_tensor_batches_are_pykeens_batches(ir_dataset: Path, drop_last: bool) -> None:
    import torch
    from pykeen.triples.instances import BatchedSLCWAInstances

    ds = load_dataset(ir_dataset)
    tf = factory(ds.triples, ds.entities, ds.relations)
    batches = {}
    for cls in (BatchedSLCWAInstances, _pykeen_parts().Instances):
        inst = cls.from_triples_factory(tf, batch_size=50, drop_last=drop_last)
        torch.manual_seed(11)
        batches[cls] = [[list(map(int, ids)) for ids in inst.iter_triple_ids()] for _epoch in range(3)]
        assert all(len(epoch) == len(inst) for epoch in batches[cls])
    ours, stock = batches[_pykeen_parts().Instances], batches[BatchedSLCWAInstances]
    assert ours == stock
    assert ours[0] != ours[1], "a new permutation every epoch"
    ids = [i for batch in ours[0] for i in batch]
    assert len(set(ids)) == len(ids) and set(ids) <= set(range(tf.num_triples))
    if drop_last:
        assert {len(batch) for batch in ours[0]} == {50}
    else:
        assert len(ids) == tf.num_triples and len(ours[0][-1]) == tf.num_triples % 50


def test_loop_falls_back_to_pykeens_instances_for_workers_and_samplers(ir_dataset: Path) -> None:
    import torch
    from pykeen.triples.instances import BatchedSLCWAInstances

    ds = load_dataset(ir_dataset)
    tf = factory(ds.triples, ds.entities, ds.relations)
    parts = _pykeen_parts()
    model = parts.TransE(triples_factory=tf, embedding_dim=4, entity_representations=parts.Embedding,
                         relation_representations=parts.Embedding)
    loop = parts.Loop(model=model, triples_factory=tf, optimizer=torch.optim.Adam(model.parameters()))
    ours = loop._create_training_data_loader(tf, sampler=None, batch_size=8, drop_last=False, shuffle=True)
    assert type(ours.dataset) is parts.Instances
    with pytest.warns(DeprecationWarning):
        stock = loop._create_training_data_loader(tf, sampler=None, batch_size=8, drop_last=False, shuffle=True,
                                                  num_workers=1)
    assert type(stock.dataset) is BatchedSLCWAInstances


def test_device_answers_are_pykeens(ir_dataset: Path) -> None:
    from pykeen.models import TransE
    from pykeen.utils import AmbiguousDeviceError, get_preferred_device

    ds = load_dataset(ir_dataset)
    tf = factory(ds.triples, ds.entities, ds.relations)
    parts = _pykeen_parts()
    model = _model(tf, TINY.resolved("ir"))  # as fit() builds it
    assert model.device == get_preferred_device(model, allow_ambiguity=False)
    weights = {id(r._embeddings.weight) for r in (*model.entity_representations, *model.relation_representations)}
    assert {id(w) for w in model.parameters()} == weights and not list(model.buffers())
    for rep in (*model.entity_representations, *model.relation_representations):
        assert type(rep) is parts.Embedding and rep.device == get_preferred_device(rep)
    model.relation_representations[0].to("meta")  # weights on two devices: pykeen's own error
    with pytest.raises(AmbiguousDeviceError):
        TransE.device.fget(model)
    with pytest.raises(AmbiguousDeviceError):
        _ = model.device


def test_quiet_gc_freezes_without_a_full_collection_and_unfreezes() -> None:
    import pykeen.training.callbacks  # noqa: F401  (imported first: an import may trigger collections itself)

    full = []

    def watch(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] == 2:
            full.append(info)

    gc.unfreeze()
    gc.callbacks.append(watch)
    try:
        with _quiet_gc() as refreeze:
            assert full == [] and gc.get_freeze_count() > 0
            frozen = gc.get_freeze_count()
            made_in_epoch = [[i] for i in range(100)]  # lists are tracked by the collector
            gc.collect()  # what pykeen does after each epoch
            refreeze.post_epoch(epoch=1, epoch_loss=0.0)
            assert gc.get_freeze_count() >= frozen + len(made_in_epoch)
        assert gc.get_freeze_count() == 0
    finally:
        gc.callbacks.remove(watch)
    assert len(full) == 1, "only pykeen's own collection"
