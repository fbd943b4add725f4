"""Debian source packages: real code no one here wrote, fetched with apt-get source."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import FarmError, InputError
from farm.toolchain import Toolchain
from workers import corpus, debsrc


def test_zlib_source_becomes_a_corpus(tmp_path: Path, toolchain: Toolchain) -> None:
    tree = debsrc.fetch_source("zlib", tmp_path / "src")
    assert (tree / "deflate.c").is_file() and tree.name.startswith("zlib-")
    assert debsrc.fetch_source("zlib", tmp_path / "src") == tree, "a second fetch reuses the tree"
    c = corpus.from_sources(tree, tmp_path / "corpus", toolchain)
    names = {m.name for m in c.modules}
    assert {"deflate.c", "inflate.c", "trees.c"} <= names
    assert len(c.modules) >= 15


def test_lua_recipe_compiles_the_interpreter(tmp_path: Path, toolchain: Toolchain) -> None:
    c = corpus.from_debian("lua5.4", tmp_path / "corpus", toolchain, tmp_path / "src")
    names = {m.name for m in c.modules}
    assert {"src/lvm.c", "src/lua.c", "src/lparser.c"} <= names
    assert c.skipped == [], c.skipped
    assert all(not n.startswith(".pc/") for n in names), "quilt's patch copies are not sources"


def test_unknown_package_fails_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(FarmError, match=r"^apt-get source no-such-package-mlgo failed: ") as e:
        debsrc.fetch_source("no-such-package-mlgo", tmp_path)
    assert "\n" not in str(e.value)


def test_package_names_are_checked(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        debsrc.fetch_source("../../etc", tmp_path)
