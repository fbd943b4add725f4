"""Fixtures for the worker tests: corpora compiled with the real clang-22."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from tests.conftest import DATA
from workers import corpus, debsrc


@pytest.fixture(scope="session")
def csrc_corpus(tmp_path_factory: pytest.TempPathFactory, toolchain: Toolchain) -> Path:
    """The C files of tests/data/csrc as a corpus (read-only for tests: copy before changing)."""
    out = tmp_path_factory.mktemp("corpus") / "csrc"
    corpus.from_sources(DATA / "csrc", out, toolchain)
    return out


@pytest.fixture
def corpus_copy(csrc_corpus: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "corpus"
    shutil.copytree(csrc_corpus, dst)
    return dst


@pytest.fixture
def wrapped_toolchain(toolchain: Toolchain, tmp_path: Path) -> Toolchain:
    """The real tools, except that llvm-ir2vec hangs on inputs whose path contains 'HANGME' and prints
    a line that is not a triplet for 'GARBLED'.

    A hung tool cannot be produced on demand otherwise; everything else runs the real binary.
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in toolchain.bin_dir.iterdir():
        (bin_dir / tool.name).symlink_to(tool)
    wrapper = bin_dir / "llvm-ir2vec"
    wrapper.unlink()
    wrapper.write_text(
        "#!/bin/sh\n"
        'case "$*" in *HANGME*) exec sleep 3600 ;; esac\n'
        'case "$*" in *GARBLED*) printf "MAX_RELATION=3\\n1\\t2\\t0\\nWarning: not a triplet\\n"; exit 0 ;; esac\n'
        f'exec {toolchain.path("llvm-ir2vec")} "$@"\n'
    )
    wrapper.chmod(0o755)
    return Toolchain(bin_dir)


def read_table(path: Path) -> tuple[int, list[list[str]]]:
    """(declared count, rows split on TAB) of an OpenKE-style file."""
    lines = path.read_text().split("\n")
    assert lines[-1] == "", f"{path.name} must end with a newline"
    return int(lines[0]), [ln.split("\t") for ln in lines[1:-1]]


def lists_and_compiles(package: str, sample: int | None, expected: set[str], left_out: set[str],
                       sizes: tuple[int, int], tmp_path: Path, toolchain: Toolchain) -> None:
    """The package lists `expected` and none of `left_out` among between `sizes` C modules, and its corpus (or the
    `sample` of it) compiles with nothing skipped."""
    tree = debsrc.fetch_source(package, tmp_path / "src")
    listed = {j.name for j in debsrc.jobs(package, tree)}
    assert expected <= listed and not listed & left_out
    assert sizes[0] <= len(listed) <= sizes[1] and all(n.endswith(".c") for n in listed)
    c = corpus.from_debian(package, tmp_path / "corpus", toolchain, tmp_path / "src", sample=sample)
    assert c.skipped == [], c.skipped
    assert {m.name for m in c.modules} == (listed if sample is None else corpus.sample_names(listed, sample))
    assert c.lineage["package"] == package

