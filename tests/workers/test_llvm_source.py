"""LLVM's own code as a corpus, and its lineage down to the dataset manifest.

The real llvm-project is hours of work away on two cores (and GitHub is unreachable here), so
the tests give `corpus llvm` what it would get from either source: a local git repository
shaped like llvm-project, and an unpacked Debian `llvm-toolchain-NN` tree, each holding
tests/data/cmake_project as its `llvm/`. bench/bench_llvm_corpus.py runs the real LLVM.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from farm.errors import InputError
from farm.toolchain import Toolchain
from tests.conftest import DATA
from workers import corpus, debsrc, llvm_source, triplets

PROJECT = DATA / "cmake_project"
LLVM_DEFINES = ["CMAKE_BUILD_TYPE=Release", "LLVM_TARGETS_TO_BUILD=X86"]
CHANGELOG = "llvm-toolchain-99 (1:99.1.0-1~test1) unstable; urgency=medium\n\n  * Test.\n"


def llvm_project(root: Path) -> Path:
    """The project as llvm-project's llvm/, with a TU beside it (as llvm/ compiles ../third-party/benchmark)."""
    shutil.copytree(PROJECT, root / "llvm")
    (root / "third-party").mkdir()
    (root / "third-party" / "vendored.c").write_text("int vendored(int x) { return x * 3; }\n")
    return root


def _git(*args: str | Path, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *map(str, args)], cwd=cwd, check=True, capture_output=True, text=True,
                          env=env).stdout


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(URL, commit of tag farm-rev) of a local llvm-project-shaped repository."""
    repo = llvm_project(tmp_path_factory.mktemp("upstream"))
    _git("init", "-q", "-b", "main", cwd=repo)
    _git("add", ".", cwd=repo)
    _git("commit", "-qm", "llvm", cwd=repo)
    _git("tag", "farm-rev", cwd=repo)
    return repo.as_uri(), _git("rev-parse", "HEAD", cwd=repo).strip()


def debian_tree(debsrc_dir: Path) -> Path:
    """What `apt-get source llvm-toolchain-99` would leave: `<package>-<upstream version>/` with debian/."""
    tree = llvm_project(debsrc_dir / "llvm-toolchain-99-99.1.0")
    (tree / "debian").mkdir()
    (tree / "debian" / "changelog").write_text(CHANGELOG)
    return tree


def test_git_revision_is_the_lineage_of_the_corpus_and_of_every_dataset(upstream, tmp_path: Path,
                                                                        toolchain: Toolchain) -> None:
    url, commit = upstream
    c = llvm_source.corpus("llvm-project", tmp_path / "corpus", toolchain, rev="farm-rev", repo=url,
                           checkout=tmp_path / "checkout", debsrc_dir=tmp_path / "deb", build=tmp_path / "build",
                           include=["lib/core"])
    expected = {"kind": "git", "project": "llvm-project", "repository": url, "revision": "farm-rev",
                "commit": commit, "include": ["lib/core"], "defines": LLVM_DEFINES}
    assert c.lineage == expected and [m.name for m in c.modules] == ["lib/core/lookup.cpp", "lib/core/table.c"]
    assert json.loads((tmp_path / "corpus" / corpus.DESCRIPTION).read_text())["lineage"] == expected
    assert c.origin == f"git:llvm-project@{commit}"
    # LLVM's settings reach the configure (an unused LLVM variable is harmless to other projects).
    assert "LLVM_TARGETS_TO_BUILD:UNINITIALIZED=X86" in (tmp_path / "build" / "CMakeCache.txt").read_text()

    one = triplets.build_dataset(tmp_path / "corpus", tmp_path / "ds1", "ir", toolchain, jobs=1, opt_levels=["O0"])
    two = triplets.build_dataset(tmp_path / "corpus", tmp_path / "ds2", "ir", toolchain, jobs=2, opt_levels=["O0"])
    m = json.loads((one / "manifest.json").read_text())
    assert m["corpus"]["lineage"] == expected and m["corpus"]["source"] == c.origin
    assert (one / "manifest.json").read_bytes() == (two / "manifest.json").read_bytes(), "no timestamps"


def test_a_revision_that_does_not_exist_is_one_line(upstream, tmp_path: Path, toolchain: Toolchain) -> None:
    url, _ = upstream
    with pytest.raises(InputError) as e:
        llvm_source.corpus("llvm-project", tmp_path / "corpus", toolchain, rev="no-such-rev", repo=url,
                           checkout=tmp_path / "checkout", debsrc_dir=tmp_path / "deb", build=tmp_path / "build")
    assert str(e.value) == f"git revision 'no-such-rev' does not exist in {url}"
    assert not (tmp_path / "corpus").exists() and not (tmp_path / "build").exists()
    with pytest.raises(InputError, match="invalid git revision"):
        llvm_source.corpus("llvm-project", tmp_path / "corpus", toolchain, rev="a..b", repo=url,
                           checkout=tmp_path / "checkout", debsrc_dir=tmp_path / "deb")


def test_debian_package_version_is_the_lineage(tmp_path: Path) -> None:
    """Both ways to LLVM's Debian source, as a person and as the nightly builder's default run them."""
    deb = tmp_path / "deb"
    debian_tree(deb)
    cli = [sys.executable, "-m", "farm.cli"]
    p = subprocess.run([*cli, "corpus", "llvm", "llvm-toolchain-99", "--debsrc", str(deb), "--include", "lib/core",
                        "--build", str(tmp_path / "b1"), "-o", str(tmp_path / "c1")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "corpus " in p.stdout and "2 modules (-O3), 0 skipped" in p.stdout
    assert "lineage: llvm-toolchain-99 1:99.1.0-1~test1 (debian), only lib/core" in p.stdout
    lineage = corpus.load(tmp_path / "c1").lineage
    assert lineage == {"kind": "debian", "package": "llvm-toolchain-99", "version": "1:99.1.0-1~test1",
                       "project": "llvm-project", "include": ["lib/core"], "defines": LLVM_DEFINES}

    p = subprocess.run([*cli, "corpus", "debian", "llvm-toolchain-99", "--debsrc", str(deb), "-o",
                        str(tmp_path / "c2")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "7 modules (-O3), 1 skipped" in p.stdout and "skipped lib/broken/broken.c: clang exited" in p.stdout
    c2 = corpus.load(tmp_path / "c2")
    assert "_up1/third-party/vendored.c" in {m.name for m in c2.modules}, "named from the tree, not from /"
    assert c2.lineage == {"kind": "debian", "package": "llvm-toolchain-99", "version": "1:99.1.0-1~test1",
                          "project": "llvm-project", "defines": LLVM_DEFINES}
    assert c2.origin == "debian:llvm-toolchain-99:llvm-toolchain-99-99.1.0/llvm"


def test_what_is_not_an_llvm_source_is_refused_in_one_line(tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "farm.cli", "corpus"]
    for args, text in ((["llvm", "zlib"], "'zlib' is not a source of LLVM: use llvm-project (git) or a Debian "
                                          "llvm-toolchain-NN package"),
                       (["llvm", "llvm-toolchain-99", "--rev", "main", "--debsrc", str(tmp_path)],
                        "--rev main names a git revision; llvm-toolchain-99 is a Debian package (use llvm-project)"),
                       (["debian", "llvm-project"],  # both are force-form choices of the triplet builders
                        "llvm-project is LLVM's git repository, not a Debian source package: use `corpus llvm "
                        "llvm-project` (or the Debian package llvm-toolchain-19)")):
        p = subprocess.run([*cli, *args, "-o", str(tmp_path / "c")], capture_output=True, text=True)
        assert (p.returncode, p.stderr) == (2, f"mlgo-farm: error: {text}\n")
    assert not (tmp_path / "c").exists()


def test_changelog_gives_package_and_version(tmp_path: Path) -> None:
    (tmp_path / "debian").mkdir()
    (tmp_path / "debian" / "changelog").write_text("zlib (1:1.2.13.dfsg-1) unstable; urgency=low\n")
    assert debsrc.lineage(tmp_path) == {"kind": "debian", "package": "zlib", "version": "1:1.2.13.dfsg-1"}
    (tmp_path / "debian" / "changelog").write_text("not a changelog\n")
    assert debsrc.lineage(tmp_path) is None
    assert debsrc.lineage(tmp_path / "missing") is None
    assert debsrc.recipe("llvm-toolchain-19").cmake == "llvm" and debsrc.recipe("zlib").cmake is None
