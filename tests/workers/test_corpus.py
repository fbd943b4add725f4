"""Corpus sources against the real clang-22 and mlgo-utils."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from farm.errors import FarmError, InputError
from farm.toolchain import Toolchain
from tests.conftest import DATA
from workers import corpus


def test_directory_corpus_layout(csrc_corpus: Path, toolchain: Toolchain) -> None:
    desc = json.loads((csrc_corpus / corpus.DESCRIPTION).read_text())
    expected = sorted(p.name for p in (DATA / "csrc").glob("*.c"))
    assert desc["modules"] == expected
    assert desc["has_thinlto"] is False
    for name in expected:
        bc = (csrc_corpus / f"{name}.bc").read_bytes()
        assert bc[:4] == b"BC\xc0\xde", f"{name}.bc is not bitcode"
        cmd = (csrc_corpus / f"{name}.cmd").read_bytes().split(b"\0")
        assert cmd[0] == b"clang" and b"-emit-llvm" in cmd and str(DATA / "csrc" / name).encode() in cmd
    # The modules are pre-optimization IR that opt can still optimize: llvm-dis shows allocas.
    ir = toolchain.run("llvm-dis", [csrc_corpus / "sort.c.bc", "-o", "-"]).stdout.decode()
    assert "alloca" in ir


def test_failing_source_is_skipped_and_listed(tmp_path: Path, toolchain: Toolchain) -> None:
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(DATA / "csrc" / "sort.c", src)
    shutil.copy(DATA / "bad" / "syntax_error.c", src)
    c = corpus.from_sources(src, tmp_path / "out", toolchain)
    assert [m.name for m in c.modules] == ["sort.c"]
    assert len(c.skipped) == 1
    assert c.skipped[0]["module"] == "syntax_error.c"
    assert c.skipped[0]["reason"].startswith("clang exited with code 1:")
    assert "expected expression" in c.skipped[0]["reason"]
    assert corpus.load(tmp_path / "out").skipped == c.skipped


def test_non_utf8_file_name_is_skipped_and_listed(tmp_path: Path, toolchain: Toolchain) -> None:
    """A module whose name cannot be UTF-8 JSON is listed, the rest of the corpus is made; triplets run."""
    import os

    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(DATA / "csrc" / "sort.c", src)
    shutil.copy(DATA / "csrc" / "hash.c", os.fsdecode(bytes(src) + b"/h\xe4sh.c"))  # Latin-1 'ä'
    c = corpus.from_sources(src, tmp_path / "out", toolchain)
    assert [m.name for m in c.modules] == ["sort.c"]
    assert c.skipped == [{"module": "h\\xe4sh.c",
                          "reason": "file name or path is not valid UTF-8 (a corpus description is UTF-8 JSON)"}]
    json.loads((tmp_path / "out" / corpus.SKIPPED).read_bytes().decode("utf-8"))  # strict UTF-8 JSON


def test_description_naming_a_non_utf8_module_skips_it(tmp_path: Path, csrc_corpus: Path,
                                                        toolchain: Toolchain) -> None:
    copy = tmp_path / "c"
    shutil.copytree(csrc_corpus, copy)
    desc = json.loads((copy / corpus.DESCRIPTION).read_text())
    desc["modules"].append("lone\udcffsurrogate.c")  # JSON can spell a name no file system encoding can
    (copy / corpus.DESCRIPTION).write_text(json.dumps(desc))
    c = corpus.load(copy)
    assert len(c.modules) == len(desc["modules"]) - 1
    assert c.skipped[-1] == {"module": "lone\\xffsurrogate.c", "stage": "corpus",
                             "reason": "module name is not valid UTF-8"}
    from workers import triplets

    ds = triplets.build_dataset(copy, tmp_path / "ds", "ir", toolchain, jobs=1, opt_levels=["O0"])
    m = json.loads((ds / "manifest.json").read_text())
    assert m["modules_used"] == len(c.modules) and m["skipped"][-1]["module"] == "lone\\xffsurrogate.c"


def test_empty_source_dir_is_an_error_and_leaves_nothing(tmp_path: Path, toolchain: Toolchain) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"^no C/C\+\+ sources found in .*empty$"):
        corpus.from_sources(tmp_path / "empty", tmp_path / "out", toolchain)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "mlgo-farm.toml"]


def test_unwritable_output_is_an_error(tmp_path: Path, toolchain: Toolchain) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(FarmError, match="cannot create output directory"):
        corpus.from_sources(DATA / "csrc", blocker / "out", toolchain)


def test_compile_commands_keep_their_flags(tmp_path: Path, toolchain: Toolchain) -> None:
    src = tmp_path / "proj"
    src.mkdir()
    (src / "cfg.c").write_text("#ifndef SCALE\n#error SCALE must come from the build\n#endif\n"
                               "int scaled(int x) { return x * SCALE; }\n")
    db = [{"directory": str(src), "file": "cfg.c", "arguments": ["cc", "-DSCALE=3", "-O2", "-c", "cfg.c", "-o",
                                                                    "cfg.o"]}]
    (src / "compile_commands.json").write_text(json.dumps(db))
    c = corpus.from_sources(src, tmp_path / "out", toolchain)
    assert [m.name for m in c.modules] == ["cfg.c"] and c.skipped == []
    cmd = (tmp_path / "out" / "cfg.c.cmd").read_bytes().split(b"\0")
    assert b"-DSCALE=3" in cmd and b"cfg.o" not in cmd


def test_identical_compile_commands_are_one_module(tmp_path: Path, toolchain: Toolchain) -> None:
    """A database that repeats one command (merged from several builds) compiles it once; other flags are another."""
    src = tmp_path / "proj"
    src.mkdir()
    (src / "cfg.c").write_text("int scaled(int x) { return x * SCALE; }\n")
    same = {"directory": str(src), "file": "cfg.c", "arguments": ["cc", "-DSCALE=3", "-c", "cfg.c", "-o", "cfg.o"]}
    other = {**same, "arguments": ["cc", "-DSCALE=5", "-c", "cfg.c", "-o", "cfg5.o"]}
    (src / "compile_commands.json").write_text(json.dumps([same] * 100_000 + [other]))
    jobs = corpus.jobs_from_compile_commands(src / "compile_commands.json")
    assert [(j.name, "-DSCALE=3" in j.args) for j in jobs] == [("cfg.c", True), ("cfg.c.2", False)]
    (src / "compile_commands.json").write_text(json.dumps([same, other, same, {**same, "directory": f"{src}/"}]))
    c = corpus.from_sources(src, tmp_path / "out", toolchain)
    assert sorted(m.name for m in c.modules) == ["cfg.c", "cfg.c.2"] and c.skipped == []


def test_compile_commands_as_autotools_and_bear_write_them(tmp_path: Path, toolchain: Toolchain) -> None:
    """`command` strings, dependency options with values, an absolute `file` with the source relative."""
    src = tmp_path / "proj"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "cfg.c").write_text("#ifndef SCALE\n#error SCALE must come from the build\n#endif\n"
                                       "int scaled(int x) { return x * SCALE; }\n")
    (src / "other.c").write_text("int other(int x) { return x + 1; }\n")
    db = [
        {"directory": str(src / "sub"), "file": str(src / "sub" / "cfg.c"),
         "command": "cc -DSCALE=3 -O2 -MD -MT cfg.o -MF .deps/cfg.Tpo -c -o cfg.o cfg.c"},
        {"directory": str(src), "file": "other.c", "command": "cc -O2 -MMD -MQ other.o -c other.c -oother.o"},
    ]
    (src / "compile_commands.json").write_text(json.dumps(db))
    c = corpus.from_sources(src, tmp_path / "out", toolchain)
    assert [m.name for m in c.modules] == ["other.c", "sub/cfg.c"] and c.skipped == []
    cmd = (tmp_path / "out" / "sub" / "cfg.c.cmd").read_bytes().split(b"\0")
    assert b"-DSCALE=3" in cmd
    assert not {b"cfg.o", b".deps/cfg.Tpo", b"-MD", b"-MT", b"-MF"} & set(cmd)
    assert cmd.count(str(src / "sub" / "cfg.c").encode()) == 1 and b"cfg.c" not in cmd


@pytest.mark.parametrize("db, message", [
    ('{"file": "a.c"}', "is a JSON list of entries"),
    ('[{"directory": "/tmp", "command": "cc -c a.c"}]', "entry 0 needs 'file' and 'arguments' or 'command'"),
    ('[{"file": "a.c"}]', "entry 0 needs 'file'"),
    ('[{"file": "a.c", "command": "cc \\"unterminated -c a.c"}]', "entry 0: cannot split its command"),
])
def test_malformed_compile_commands_are_one_line(tmp_path: Path, toolchain: Toolchain, db: str, message: str) -> None:
    (tmp_path / "compile_commands.json").write_text(db)
    with pytest.raises(InputError, match=message) as e:
        corpus.from_sources(tmp_path / "compile_commands.json", tmp_path / "out", toolchain)
    assert "\n" not in str(e.value) and not (tmp_path / "out").exists()


def test_corrupt_description_is_one_line(tmp_path: Path) -> None:
    (tmp_path / corpus.DESCRIPTION).write_text('{"modules": [')
    with pytest.raises(InputError, match="invalid JSON"):
        corpus.load(tmp_path)
    (tmp_path / corpus.DESCRIPTION).write_text('{"modules": []}')
    with pytest.raises(InputError, match="is empty: no modules"):
        corpus.load(tmp_path)
    (tmp_path / corpus.DESCRIPTION).write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match=r"corpus_description.json: JSON nested too deeply to read$"):
        corpus.load(tmp_path)


def test_embedded_bitcode_build_through_extract_ir(tmp_path: Path, toolchain: Toolchain) -> None:
    """A real CMake + Ninja build with -fembed-bitcode=all, extracted with mlgo-utils."""
    if not (shutil.which("cmake") and shutil.which("ninja")):
        pytest.fail("cmake and ninja are required (deploy/setup.sh installs them)")
    src = tmp_path / "proj"
    src.mkdir()
    for f in ("sort.c", "hash.c"):
        shutil.copy(DATA / "csrc" / f, src)
    (src / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.20)\nproject(p C)\n"
                                        "add_library(p STATIC sort.c hash.c)\n")
    build = tmp_path / "build"
    subprocess.run(["cmake", "-G", "Ninja", "-S", src, "-B", build, f"-DCMAKE_C_COMPILER={toolchain.path('clang')}",
                    "-DCMAKE_C_FLAGS=-Xclang -fembed-bitcode=all -O2", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"],
                   check=True, capture_output=True)
    subprocess.run(["ninja", "-C", build], check=True, capture_output=True)
    c = corpus.from_embedded_build(build, tmp_path / "corpus", toolchain)
    assert len(c.modules) == 2
    assert all(m.bitcode.read_bytes()[:4] == b"BC\xc0\xde" for m in c.modules)
    assert sorted(Path(m.name).name for m in c.modules) == ["hash.c.o", "sort.c.o"]


def test_build_without_embedded_bitcode_is_refused(tmp_path: Path, toolchain: Toolchain) -> None:
    (tmp_path / "build").mkdir()
    with pytest.raises(InputError, match=r"no compile_commands\.json"):
        corpus.from_embedded_build(tmp_path / "build", tmp_path / "corpus", toolchain)


@pytest.mark.parametrize("cache", ["true", "false"])
def test_a_database_whose_directory_does_not_exist_is_one_line(tmp_path: Path, cache: str) -> None:
    """A database from another machine (or a removed build directory): one line before any compile, and no
    word about the compile cache, which has nothing to do with it."""
    import os
    import sys

    gone = tmp_path / "build-removed"
    db = tmp_path / "compile_commands.json"
    source = DATA / "csrc" / "sort.c"
    db.write_text(json.dumps([{"directory": str(gone), "file": str(source),
                               "arguments": ["clang", "-O2", "-c", str(source), "-o", "sort.o"]}]))
    res = subprocess.run([sys.executable, "-m", "farm.cli", "corpus", "sources", str(db), "-o", str(tmp_path / "c")],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "MLGO_FARM_CACHE_ENABLED": cache})
    assert res.returncode == 2, res.stderr[-3000:]
    assert res.stderr == f"mlgo-farm: error: {db}: entry 0: its directory {gone} does not exist\n"
    assert not (tmp_path / "c").exists()
