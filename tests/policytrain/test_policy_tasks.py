"""The policy task's training corpus: rebuilt from where the vocabulary's dataset came from, only the sample
training uses (real CMake, Ninja and clang-22 on tests/data/cmake_project)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from farm.errors import InputError
from farm.toolchain import Toolchain
from policytrain.tasks import training_corpus
from policytrain.warmstart import sample_units, training_units
from tests.conftest import DATA
from workers import corpus


def _vocab(source: str) -> dict:
    return {"lineage": {"dataset_id": "ir-0123"},
            "dataset": {"corpus": {"source": source, "digest": "abc", "lineage": None}}}


def test_a_cmake_corpus_is_rebuilt_as_the_sample_training_takes(tmp_path: Path, toolchain: Toolchain) -> None:
    src = tmp_path / "src"
    shutil.copytree(DATA / "cmake_project", src)
    path, record = training_corpus(_vocab(f"cmake:{src}"), None, tmp_path / "var", toolchain, sample=3)
    rebuilt = corpus.load(path)
    assert record == {"dataset_id": "ir-0123", "corpus_digest": "abc", "corpus_lineage": None,
                      "corpus_source": f"cmake:{src}", "corpus_sample": 3}
    assert len(rebuilt.modules) + len(rebuilt.skipped) == 3 and rebuilt.lineage == {"sample": 3}
    # training samples the same modules again, so nothing it compiled is wasted
    units = training_units(path, tmp_path / "o")
    assert sample_units(units, 3) == units
    stamp = (path / corpus.DESCRIPTION).stat().st_mtime_ns
    again, _ = training_corpus(_vocab(f"cmake:{src}"), None, tmp_path / "var", toolchain, sample=3)
    assert again == path and (path / corpus.DESCRIPTION).stat().st_mtime_ns == stamp, "reused, not rebuilt"


def test_a_corpus_this_host_cannot_rebuild_is_one_line(tmp_path: Path, toolchain: Toolchain) -> None:
    for source in (f"cmake:{tmp_path / 'gone'}", "git:someone-else@abc", "ftp://x"):
        with pytest.raises(InputError, match=r"name one with --corpus$"):
            training_corpus(_vocab(source), None, tmp_path / "var", toolchain, sample=3)
    corpora = tmp_path / "var" / "policy" / "corpus"  # no corpus, not even half made (farm.locks' lock files may stay)
    assert not corpora.exists() or [p.name for p in corpora.iterdir() if not p.name.endswith(".lock")] == []
