"""pykeen training on LLVM's ids: determinism, held-out metrics, unseen entities, the LLVM layout."""

from __future__ import annotations

import dataclasses
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
from vocabgen.training import factory
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
    b, mb = train_vocabulary(ds, TINY)
    c, _ = train_vocabulary(ds, dataclasses.replace(TINY, seed=1))
    assert a == b and ma["sha256"] == mb["sha256"]
    assert a != c
    assert ma["parameters"] == {**TINY.to_dict(), "dim": 8}
    assert ma["lineage"]["dataset_id"] == ds.id and ma["lineage"]["llvm_version"]


def test_metrics_and_unseen_entities(ir_dataset: Path) -> None:
    ds = load_dataset(ir_dataset)
    data, m = train_vocabulary(ds, TINY)
    h = m["metrics"]["holdout"]
    assert h["test_triples"] == round(len(ds.triples) * TINY.holdout)
    assert h["train_triples"] + h["test_triples"] == len(ds.triples)
    assert 0 < h["mrr"] <= 1 and 0 <= h["hits_at_1"] <= h["hits_at_10"] <= 1
    assert m["metrics"]["analogy"]["asked"] >= 0
    vocab = json.loads(data)
    trained = set(ds.trained_entities.tolist())
    placement = layout.placement("ir", ds.entities)
    for section in layout.SECTIONS["ir"]:
        seen = [k for i, (s, k) in enumerate(placement) if s == section and i in trained]
        unseen = [k for i, (s, k) in enumerate(placement) if s == section and i not in trained]
        assert m["coverage"]["unseen_by_section"][section] == len(unseen)
        if seen and unseen:
            mean = np.mean([vocab[section][k] for k in seen], axis=0)
            assert np.allclose(vocab[section][unseen[0]], mean, atol=2e-6)
    assert sum(len(v) for v in vocab.values()) == len(ds.entities)


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


def test_bad_parameters_are_rejected() -> None:
    with pytest.raises(InputError, match="batch_size must be at least 1"):
        TrainParams(batch_size=0).resolved("ir")
    with pytest.raises(InputError, match="unknown optimizer"):
        TrainParams(optimizer="Lion").resolved("ir")
    with pytest.raises(InputError, match="unknown training parameter"):
        TrainParams.from_dict({"epoch": 3})
    assert TrainParams().resolved("mir").dim == 100 and TrainParams().resolved("ir").dim == 75
