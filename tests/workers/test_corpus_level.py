"""A corpus records the front-end level its modules were compiled at, against the real clang-22."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from farm.errors import InputError
from farm.toolchain import Toolchain
from tests.conftest import DATA
from workers import corpus

MLGO_FARM = str(Path(sys.executable).with_name("mlgo-farm"))


def _attributes(toolchain: Toolchain, bc: Path) -> str:
    """The function attribute groups of a module, as llvm-dis prints them."""
    ir = toolchain.run("llvm-dis", [bc, "-o", "-"]).stdout.decode()
    return "\n".join(line for line in ir.splitlines() if line.startswith("attributes #"))


@pytest.mark.parametrize(("args", "level"), [
    ((), "O0"), (("-O2",), "O2"), (("-O2", "-Oz"), "Oz"), (("-Oz", "-O3"), "O3"), (("-O",), "O1"),
    (("-Ofast",), "O3"), (("-Og",), "O1"), (("-Os", "-DOz=1", "-I/O2"), "Os"),
])
def test_the_last_o_flag_decides_the_level_as_in_clang(args: tuple[str, ...], level: str) -> None:
    assert corpus.level_of(args) == level


def test_at_level_replaces_every_o_flag() -> None:
    assert corpus.at_level(("-O2", "-DX", "-O3", "-g0"), "Oz") == ("-Oz", "-DX", "-g0")
    with pytest.raises(InputError, match="unknown optimization level 'O4'"):
        corpus.at_level((), "O4")


def test_an_oz_corpus_carries_minsize_and_records_its_level(tmp_path: Path, toolchain: Toolchain) -> None:
    """The point of the level: only an -Oz front end writes `minsize optsize`; the default (-O2, the vocabularies')
    writes neither, and the description says which one each corpus is."""
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(DATA / "csrc" / "sort.c", src)
    oz = corpus.from_sources(src, tmp_path / "oz", toolchain, level="Oz")
    o2 = corpus.from_sources(src, tmp_path / "o2", toolchain)
    assert (oz.level, o2.level) == ("Oz", "O2")
    assert json.loads((tmp_path / "oz" / corpus.DESCRIPTION).read_text())["level"] == "Oz"
    assert "minsize" in _attributes(toolchain, oz.modules[0].bitcode)
    assert "optsize" in _attributes(toolchain, oz.modules[0].bitcode)
    assert "minsize" not in _attributes(toolchain, o2.modules[0].bitcode)
    cmd = (tmp_path / "oz" / "sort.c.cmd").read_bytes().split(b"\0")
    assert b"-Oz" in cmd and b"-O2" not in cmd
    corpus.check_level(oz, "Oz", "a test")
    with pytest.raises(InputError) as e:
        corpus.check_level(o2, "Oz", "the inliner for size")
    assert "compiled by an -O2 front end" in str(e.value) and "--level Oz" in str(e.value)
    assert "\n" not in str(e.value)


def test_a_database_is_replayed_at_the_level_asked(tmp_path: Path, toolchain: Toolchain) -> None:
    """ml-compiler-opt's way: each module's own command line, at the level the policy is trained for."""
    shutil.copy(DATA / "csrc" / "sort.c", tmp_path)
    db = [{"directory": str(tmp_path), "file": "sort.c", "arguments": ["clang", "-O3", "-DN=4", "-c", "sort.c"]}]
    (tmp_path / "compile_commands.json").write_text(json.dumps(db))
    own = corpus.from_sources(tmp_path / "compile_commands.json", tmp_path / "own", toolchain)
    oz = corpus.from_sources(tmp_path / "compile_commands.json", tmp_path / "oz", toolchain, level="Oz")
    assert (own.level, oz.level) == ("O3", "Oz")
    assert b"-DN=4" in (tmp_path / "oz" / "sort.c.cmd").read_bytes()


def test_an_older_corpus_without_a_level_is_read_from_its_commands(tmp_path: Path, toolchain: Toolchain) -> None:
    """Corpora made before levels were recorded, and extract_ir's, still say what they are; mixed ones say nothing."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("sort.c", "hash.c"):
        shutil.copy(DATA / "csrc" / name, src)
    out = tmp_path / "c"
    corpus.from_sources(src, out, toolchain)
    desc = json.loads((out / corpus.DESCRIPTION).read_text())
    del desc["level"]
    (out / corpus.DESCRIPTION).write_text(json.dumps(desc))
    assert corpus.load(out).level == "O2"
    cmd = out / "hash.c.cmd"
    cmd.write_bytes(cmd.read_bytes().replace(b"-O2", b"-Oz"))
    assert corpus.load(out).level is None
    (out / "hash.c.cmd").unlink()
    assert corpus.load(out).level is None
    desc["level"] = "O7"
    (out / corpus.DESCRIPTION).write_text(json.dumps(desc))
    with pytest.raises(InputError, match="'level' must be one of"):
        corpus.load(out)


def test_the_cli_builds_a_corpus_at_a_level_and_says_so(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(DATA / "csrc" / "sort.c", src)
    p = subprocess.run([MLGO_FARM, "corpus", "sources", str(src), "-o", str(tmp_path / "c"), "--level", "Oz"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "1 modules (-Oz)" in p.stdout
    p = subprocess.run([MLGO_FARM, "corpus", "sources", str(src), "-o", str(tmp_path / "d"), "--level", "O9"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "invalid choice: 'O9'" in p.stderr
