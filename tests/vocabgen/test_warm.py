"""Warm start (vocabgen/warm.py): a retrain starts from the previous `latest` vectors where the entity sets agree."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from farm.errors import InputError
from farm.objectstore import FileStore
from tests.vocabgen.conftest import TINY
from vocabgen import layout
from vocabgen.build import train_vocabulary
from vocabgen.compare import compare
from vocabgen.dataset import load_dataset
from vocabgen.params import TrainParams
from vocabgen.training import _model, factory, train_all
from vocabgen.warm import WarmStart, from_latest, from_vocab


def _matrix(kind: str, entities: list[str], data: bytes) -> np.ndarray:
    vocab = json.loads(data)
    return np.array([vocab[s][k] for s, k in layout.placement(kind, entities)])


@pytest.fixture(scope="module")
def previous(ir_dataset: Path) -> tuple[bytes, dict]:
    """The previous `latest`: trained cold with another seed, so its space is not the one seed 0 starts in."""
    return train_vocabulary(load_dataset(ir_dataset), dataclasses.replace(TINY, seed=5, epochs=20))


def test_the_model_starts_from_the_previous_vectors_and_relations_where_transe_puts_them(ir_dataset, previous):
    ds = load_dataset(ir_dataset)
    data, manifest = previous
    warm = from_vocab("ir", ds.entities, data, manifest, 8, "V1")
    assert isinstance(warm, WarmStart) and warm.record["from"] == "V1" and warm.record["sha256"] == manifest["sha256"]
    trained = set(ds.trained_entities.tolist())
    assert set(np.flatnonzero(warm.known).tolist()) == trained  # filler entries are no start
    tf = factory(ds.triples, ds.entities, ds.relations)
    model = _model(tf, TINY.resolved("ir"), warm)
    model.reset_parameters_()  # what pykeen's training loop does first
    ent = model.entity_representations[0]._embeddings.weight.detach().numpy()
    rel = model.relation_representations[0]._embeddings.weight.detach().numpy()
    assert np.allclose(ent[warm.known], _matrix("ir", ds.entities, data)[warm.known], atol=1e-6)
    h, r, t = ds.triples[:, 0], ds.triples[:, 2], ds.triples[:, 1]
    first = r[0]
    assert np.allclose(rel[first], (ent[t[r == first]] - ent[h[r == first]]).mean(axis=0), atol=1e-5)


def test_a_warm_retrain_stays_in_the_previous_space_and_says_so(ir_dataset, previous):
    """One epoch at a small rate: warm, the vectors are still the previous ones; cold (same seed), unrelated."""
    ds = load_dataset(ir_dataset)
    data, manifest = previous
    p = dataclasses.replace(TINY, epochs=1, warm_epochs=1, lr=0.001)
    warm = from_vocab("ir", ds.entities, data, manifest, 8, "V1")
    warm_data, warm_manifest = train_vocabulary(ds, p, warm=warm)
    cold_data, cold_manifest = train_vocabulary(ds, dataclasses.replace(p, warm_start=False), warm=warm)
    assert warm_manifest["warm_start"] == {"from": "V1", "sha256": manifest["sha256"], "entities": len(
        ds.trained_entities), "of": len(ds.entities)}
    assert warm_manifest["parameters"]["warm_start"] is True and cold_manifest["parameters"]["warm_start"] is False
    assert cold_manifest["warm_start"] == {"from": None, "reason": "warm_start is off"}
    before = _matrix("ir", ds.entities, data)
    known = warm.known
    near = compare(before, _matrix("ir", ds.entities, warm_data), known)
    far = compare(before, _matrix("ir", ds.entities, cold_data), known)
    assert near.raw[known].max() < 0.05 and far.raw[known].mean() > 0.3, (near.raw, far.raw)
    assert near.overlap[known].mean() > far.overlap[known].mean()
    assert cold_data == train_vocabulary(ds, dataclasses.replace(p, warm_start=False))[0]  # cold is as before


def test_the_start_is_the_stores_latest_and_a_mismatch_is_a_cold_start_with_its_reason(ir_dataset, previous,
                                                                                        tmp_path: Path):
    ds = load_dataset(ir_dataset)
    store = FileStore(tmp_path / "store")
    assert from_latest(store, "ir", ds.entities, 8) == {"from": None, "reason": "no ir vocabulary is published yet"}
    data, manifest = previous
    version = "20260101-llvm22.1.8-ir-d8-aaaaaaaaaaaa"
    store.put(f"vocab/ir/{version}/vocab.json", data)
    store.put(f"vocab/ir/{version}/manifest.json", json.dumps(manifest).encode())
    store.put("vocab/ir/latest.json", json.dumps({"kind": "ir", "version": version}).encode())
    warm = from_latest(store, "ir", ds.entities, 8)
    assert isinstance(warm, WarmStart) and warm.record["from"] == version and warm.digest() == manifest["sha256"][:12]
    other = from_latest(store, "ir", ds.entities, 16)
    assert other == {"from": None, "reason": f"{version} has dimension 8, not 16"}
    _, m = train_vocabulary(ds, dataclasses.replace(TINY, dim=16, epochs=1), warm=other)
    assert m["warm_start"] == other  # a cold start says why


def test_a_warm_start_trains_its_own_epoch_count(ir_dataset, previous):
    ds = load_dataset(ir_dataset)
    warm = from_vocab("ir", ds.entities, *previous, 8, "V1")
    p = dataclasses.replace(TINY, epochs=4, warm_epochs=2)
    assert len(train_all(ds, p.resolved("ir"), warm).losses) == 2 and len(train_all(ds, p.resolved("ir")).losses) == 4


def test_the_parameters():
    assert TrainParams().warm_start is True and TrainParams().warm_epochs == 100
    assert TrainParams.from_dict({"warm_start": False}).warm_start is False
    with pytest.raises(InputError, match="warm_start must be true or false, got 'no'"):
        TrainParams.from_dict({"warm_start": "no"})
    with pytest.raises(InputError, match="warm_epochs must be at least 1, got 0"):
        TrainParams(warm_epochs=0).resolved("ir")
