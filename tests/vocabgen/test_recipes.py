"""The vocabulary training recipes (vocabgen/params.py RECIPES): chosen by `[vocab] recipe`, the nightly's the
defaults of today, `make demo`'s reaching the Celery task that trains."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from farm.config import load_settings
from farm.errors import InputError
from vocabgen.params import RECIPES, TrainParams, configured, recipe

#: What the nightly trained with before recipes existed (TrainParams' defaults of 2026-11-28): the nightly recipe
#: must stay exactly this, so that a nightly vocabulary is the same bytes.
NIGHTLY = {"dim": None, "epochs": 1000, "margin": 1.0, "optimizer": "Adam", "lr": 0.01, "batch_size": 256,
           "negatives": 1, "seed": 0, "holdout": 0.1, "norm": 1, "warm_start": True, "warm_epochs": 100}


def _empty_config(tmp: Path) -> str:
    (tmp / "farm.toml").write_text("")
    return str(tmp / "farm.toml")


def test_the_default_recipe_is_the_nightly_and_the_nightly_is_todays_params() -> None:
    assert load_settings(env={}).vocab.recipe == "nightly"
    assert recipe("nightly").to_dict() == NIGHTLY == TrainParams().to_dict()
    assert TrainParams.from_dict({}, recipe(load_settings(env={}).vocab.recipe)).digest() == TrainParams().digest()


def test_every_recipe_is_valid_for_both_kinds_and_the_demo_trains_less() -> None:
    for params in RECIPES.values():
        for kind in ("ir", "mir"):
            params.resolved(kind)
    demo, nightly = recipe("demo"), recipe("nightly")
    assert demo.epochs < nightly.epochs and demo.warm_epochs < nightly.warm_epochs
    # only how long it trains differs: the demo shows the nightly's stages (held-out, published, warm start)
    assert {k for k, v in demo.to_dict().items() if nightly.to_dict()[k] != v} == {"epochs", "warm_epochs"}


def test_an_unknown_recipe_is_one_line_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        recipe("fastest")
    assert "'fastest'" in str(e.value) and "nightly" in str(e.value) and "\n" not in str(e.value)
    settings = load_settings(env={"MLGO_FARM_VOCAB_RECIPE": "fastest", "MLGO_FARM_CONFIG": _empty_config(tmp_path)})
    with pytest.raises(InputError) as e:  # where a training starts (the settings import no role)
        configured(settings)
    assert "'fastest'" in str(e.value) and "[vocab] recipe" in str(e.value) and "\n" not in str(e.value)


def test_explicit_parameters_override_the_recipe_field_by_field() -> None:
    p = TrainParams.from_dict({"epochs": 7}, recipe("demo"))
    assert p.epochs == 7 and p.warm_epochs == recipe("demo").warm_epochs


def test_the_celery_train_task_trains_with_the_workers_recipe_and_the_manifest_says_which(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ir_dataset: Path) -> None:
    """What the chain's train task runs when the request names no parameter: the worker's `[vocab] recipe`."""
    import vocabgen.build
    from vocabgen import tasks

    monkeypatch.setenv("MLGO_FARM_CONFIG", _empty_config(tmp_path))
    monkeypatch.setenv("MLGO_FARM_PATHS_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("MLGO_FARM_STORE_URL", "")
    monkeypatch.setenv("MLGO_FARM_VOCAB_RECIPE", "demo")
    monkeypatch.setenv("PYSTOW_HOME", str(tmp_path / "pystow"))
    seen = []
    real = vocabgen.build.train_vocabulary

    def small(ds, params, *args, **kwargs):
        seen.append(params)  # what the task asked for; trained small here (dim 8, 2 epochs), the rest as asked
        kwargs.pop("on_epoch")  # told to the client waiting for the chain, through the result backend: none here
        return real(ds, dataclasses.replace(params, dim=8, epochs=2, warm_epochs=2, batch_size=64), *args, **kwargs)

    monkeypatch.setattr(vocabgen.build, "train_vocabulary", small)
    staged = tasks.train.apply(args=("ir", str(ir_dataset), {})).get()
    assert seen == [recipe("demo")]
    trained = sorted((tmp_path / "var" / "vocab" / "trained" / "ir").glob("*/manifest.json"))
    assert len(trained) == 1
    manifest = json.loads(trained[0].read_text())
    assert manifest["recipe"] == "demo" and staged["kind"] == "ir"
