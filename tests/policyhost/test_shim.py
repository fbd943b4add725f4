"""The compiler shim: one executable that *is* the compiler to a build system (policyhost/shim.py, `mlgo-farm
policy-cc --shim`, and the `printf` line of the README's "Use a policy" and the policy page).

A launcher prefix in `CC` breaks libtool (it takes `CC`'s words for its `--tag` inference: `--tag=CC: not found`)
and CMake wants a launcher as a `;`-list; a shim is a plain compiler to both. Real projects, built for real with
clang-22: a make project, an autoconf+automake+libtool project (a shared and a static library) and a CMake
project. Every object is compiled with `-frecord-command-line`, so each object says whether its compile went
through a policy host (the host's `-mllvm -enable-ml-inliner=release` is in the recorded command line), and the
programs run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from tests.docblocks import run_sh, sh_block
from tests.policyhost.conftest import ir2vec_vocab  # noqa: F401 - a fixture
from tests.policyhost.test_standalone import PV, VV, dashboard, inline_model  # noqa: F401 - fixtures

BIN = Path(sys.executable).parent
#: in the command line `-frecord-command-line` keeps in each object: the host's flag, so the compile went through it
MARK = b"-enable-ml-inliner=release"
UTIL_C = """static int sq(int x) { return x * x; }
static int cube(int x) { return sq(x) * x; }
int util(int n) { int s = 0; for (int i = 0; i < n; i++) s += cube(i) + sq(i); return s; }
"""
MAIN_C = """#include <stdio.h>
int util(int n);
static int twice(int x) { return 2 * x; }
int main(void) { printf("%d\\n", twice(util(10))); return 0; }
"""
OUTPUT = "4620\n"  # 2 * (2025 + 285)
RECORD = "-frecord-command-line"


def _sources(d: Path) -> Path:
    d.mkdir(parents=True)
    (d / "util.c").write_text(UTIL_C)
    (d / "main.c").write_text(MAIN_C)
    return d


def make_project(d: Path) -> Path:
    """A plain Makefile project: the program from two objects."""
    _sources(d)
    (d / "Makefile").write_text("prog: main.o util.o\n\t$(CC) $(CFLAGS) -o $@ main.o util.o\n"
                                f"%.o: %.c\n\t$(CC) $(CFLAGS) {RECORD} -c $< -o $@\n")
    return d


def autotools_project(d: Path) -> Path:
    """An autoconf+automake+libtool project: a libtool library (shared and static) and a program linked to it,
    its `configure` generated here with the plain tools, as a release tarball ships it."""
    missing = [t for t in ("autoreconf", "automake", "libtoolize") if not shutil.which(t)]
    assert not missing, f"{missing} not installed: deploy/setup.sh installs autoconf, automake and libtool"
    _sources(d)
    (d / "configure.ac").write_text("AC_INIT([shimtest], [1.0])\nAM_INIT_AUTOMAKE([foreign])\nAC_PROG_CC\nLT_INIT\n"
                                    "AC_CONFIG_FILES([Makefile])\nAC_OUTPUT\n")
    (d / "Makefile.am").write_text(f"lib_LTLIBRARIES = libutil.la\nlibutil_la_SOURCES = util.c\n"
                                   f"libutil_la_CFLAGS = {RECORD}\nbin_PROGRAMS = prog\nprog_SOURCES = main.c\n"
                                   f"prog_CFLAGS = {RECORD}\nprog_LDADD = libutil.la\n")
    p = subprocess.run(["autoreconf", "-fi"], cwd=d, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return d


def cmake_project(d: Path) -> Path:
    """A CMake project: a shared library and a program linked to it."""
    _sources(d)
    (d / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.20)\nproject(shimtest C)\n"
                                      "add_library(util SHARED util.c)\nadd_executable(prog main.c)\n"
                                      "target_link_libraries(prog util)\n"
                                      f"target_compile_options(util PRIVATE {RECORD})\n"
                                      f"target_compile_options(prog PRIVATE {RECORD})\n")
    return d


def through_host(tree: Path, at_least: int) -> list[Path]:
    """Every object under `tree` the build compiled (CMake's and libtool's included), each through a policy host."""
    objects = [p for p in tree.rglob("*.o") if "CompilerId" not in str(p) and "CMakeScratch" not in str(p)]
    assert len(objects) >= at_least, objects
    plain = [str(o.relative_to(tree)) for o in objects if MARK not in o.read_bytes()]
    assert not plain, f"compiled without the policy host: {plain}"
    return objects


def run_prog(path: Path) -> None:
    p = subprocess.run([str(path)], capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (0, OUTPUT), p.stderr


# -- the shim itself ---------------------------------------------------------------------------------------------
def test_the_shim_is_one_quoted_executable_written_atomically(tmp_path: Path) -> None:
    from farm.errors import InputError
    from policyhost import shim

    d = tmp_path / "a dir with 'quotes' and $HOME"
    d.mkdir()
    path = shim.write(d / "cc", ["/opt/my host/h", "--weights", f"{d}/w"], ["clang-22"])
    assert path == d / "cc" and stat.S_IMODE(path.stat().st_mode) == 0o755
    text = path.read_text()
    assert text.startswith("#!/bin/sh\n") and text.endswith(' clang-22 "$@"\n')
    assert [ln for ln in os.listdir(d) if ln != "cc"] == []  # no temporary left beside it
    # the words arrive as written: run it with a stand-in for the host that prints its argv
    host = tmp_path / "host"
    host.write_text('#!/bin/sh\nfor a in "$@"; do printf "[%s]" "$a"; done\n')
    host.chmod(0o755)
    shim.write(path, [str(host), "--weights", f"{d}/w", "--"], ["clang-22"])  # replaces the old one
    got = subprocess.run([str(path), "-c", "a b.c", "$x"], capture_output=True, text=True, check=True).stdout
    assert got == f"[--weights][{d}/w][--][clang-22][-c][a b.c][$x]"
    with pytest.raises(InputError, match="is a directory"):
        shim.write(d, ["h"], ["clang-22"])
    with pytest.raises(InputError, match="no compiler given"):
        shim.script(["h"], [])


# -- the farm's launcher as a shim: `mlgo-farm policy-cc --shim` --------------------------------------------------
def test_policy_cc_shim_refuses_in_one_line(tmp_path: Path) -> None:
    def cli(*args: object) -> subprocess.CompletedProcess:
        return subprocess.run([BIN / "mlgo-farm", "policy-cc", *args], capture_output=True, text=True, timeout=120)

    out = tmp_path / "out"
    out.mkdir()

    p = cli("--shim", out / "cc", "--policy", "heuristic")
    assert p.returncode == 2 and p.stderr == ("mlgo-farm: error: policy-cc --shim: no compiler given (usage: policy-cc "
                                              "--shim DIR/cc [options] -- clang-22)\n")
    p = cli("--shim", out, "--policy", "heuristic", "--", "clang-22")
    assert p.returncode == 2 and p.stderr == (f"mlgo-farm: error: policy-cc --shim: {out} is a directory: give "
                                              "the compiler's file name (DIR/cc)\n")
    p = cli("--shim", out / "cc", "--print-launcher", "--policy", "heuristic", "--", "clang-22")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "two ways to say one thing" in p.stderr
    p = cli("--shim", out / "cc", "--policy", "no-such-policy", "--", "clang-22")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no-such-policy" in p.stderr
    assert list(out.iterdir()) == [], "nothing written"


def test_policy_cc_shim_builds_make_libtool_and_cmake_projects(tmp_path: Path) -> None:
    stats = tmp_path / "stats.jsonl"
    p = subprocess.run([BIN / "mlgo-farm", "policy-cc", "--shim", tmp_path / "bin/cc", "--policy", "heuristic",
                        "--stats", stats, "--", "clang-22"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    cc = tmp_path / "bin/cc"
    assert p.stdout == f"{cc}\n" and os.access(cc, os.X_OK)
    words = cc.read_text().splitlines()[-1].split()
    assert words[0] == "exec" and words[-2:] == ["clang-22", '"$@"'], words
    assert all(words[words.index(o) + 1].startswith("/") for o in ("--bin-dir", "--stats")) and words[1][0] == "/"
    env = {**os.environ, "CC": str(cc)}

    def build(script: str, where: Path) -> None:
        got = subprocess.run(["bash", "-euc", script], cwd=where, env=env, capture_output=True, text=True,
                             timeout=600)
        assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-3000:]

    auto = autotools_project(tmp_path / "auto")
    build('./configure CC="$CC" CFLAGS=-Oz >/dev/null && make', auto)
    assert "libtool" in (auto / "Makefile").read_text() and (auto / ".libs/libutil.so").exists()
    through_host(auto, 3)  # util.o twice (shared and static) and main.o
    run_prog(auto / "prog")
    cm = cmake_project(tmp_path / "cmake")
    build('cmake -S . -B build -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS=-Oz >/dev/null && cmake --build build', cm)
    through_host(cm / "build", 2)
    run_prog(cm / "build/prog")
    mk = make_project(tmp_path / "make")
    build('make CC="$CC" CFLAGS=-Oz', mk)
    through_host(mk, 2)
    run_prog(mk / "prog")
    rows = [json.loads(line) for line in stats.read_text().splitlines()]
    # configure's and CMake's checks compile through it too (some fail, as they are meant to); the 7 objects above are
    # 7 compiles, each with the policy's decisions
    ours = [r for r in rows if RECORD in r["argv"] and "-c" in r["argv"]]  # not automake's link line
    assert len(ours) == 7 and all(r["ok"] and r["decisions"] > 0 for r in ours), ours


# -- the README's lines, as written, against a live dashboard ---------------------------------------------------
def readme_lines() -> list[str]:
    return sh_block("README.md", "## Use a policy", ends="\n## ")


def test_the_readmes_use_a_policy_lines_build_make_libtool_and_cmake_projects(
        dashboard: str, inline_model: Path, tmp_path: Path, toolchain: Toolchain) -> None:  # noqa: F811
    from farm.objectstore import FileStore
    from policyhost import publish as pstore
    from policytrain.native_export import weights_from_onnx

    # the version holds its native weights, as one `policy publish` wrote with them
    store, weights = FileStore(tmp_path / "store"), weights_from_onnx(inline_model.read_bytes())
    store.put(f"policies/inline/{PV}/model.weights", weights)
    manifest = json.loads(store.get(f"policies/inline/{PV}/manifest.json"))
    store.put(f"policies/inline/{PV}/manifest.json",
              json.dumps({**manifest, "weights": pstore.weights_record(weights)}).encode())

    lines = readme_lines()
    assert len(lines) == 5, lines
    *fetch, make = lines
    fetch = [ln.replace("http://MASTER:8010/plugins/wsgi_dashboards/farm", dashboard.rstrip("/"))
             .replace("/VERSION/", f"/{PV}/").replace("/VOCAB/", f"/{VV}/") for ln in fetch]
    assert fetch[0] != lines[0], "the README's base line names MASTER"
    command, _, comment = make.partition("   # ")
    others = re.fullmatch(r"in your project; or (\./configure .*), (cmake .*)", comment)
    assert others, comment
    configure, cmake = others.groups()
    user = tmp_path / "user"
    user.mkdir()
    projects = {"make": make_project(tmp_path / "make"), "auto": autotools_project(tmp_path / "auto"),
                "cmake": cmake_project(tmp_path / "cmake")}
    builds = {"make": command, "auto": f"{configure} >/dev/null && make",
              "cmake": f"{cmake} >/dev/null && cmake --build ."}  # in the source tree, as the line is written
    for name, build in builds.items():
        run_sh("\n".join([*fetch, f"cd {projects[name]}", build]), user, toolchain, timeout=600)
    assert (user / "cc").read_text().startswith("#!/bin/sh\nexec \"" + str(user))
    through_host(projects["make"], 2)
    through_host(projects["auto"], 3)
    through_host(projects["cmake"], 2)
    for prog in (projects["make"] / "prog", projects["auto"] / "prog", projects["cmake"] / "prog"):
        run_prog(prog)


# -- the docs' recipes for the standalone hosts ------------------------------------------------------------------
def docs_blocks() -> list[str]:
    """The ```sh blocks of docs/policies.md's "A compiler shim" section."""
    from tests.docblocks import ROOT

    text = (ROOT / "docs/policies.md").read_text().split("\n### A compiler shim: make, libtool and CMake alike\n")[1]
    return [b.split("```", 1)[0] for b in text.split("\n### ", 1)[0].split("```sh\n")[1:]]


def test_the_docs_shim_recipes_write_the_hosts_command(tmp_path: Path) -> None:
    """docs/policies.md's `printf` (Python host) and `cat <<EOF` (native host) lines, run as written in a directory
    with a space in its name, write shims that hand the host its arguments and the compiler's, word for word."""
    blocks = docs_blocks()
    assert len(blocks) == 4 and blocks[0].startswith("mlgo-farm policy-cc --shim"), blocks
    mlgo = tmp_path / "my policy"
    (mlgo / "venv/bin").mkdir(parents=True)
    echo = '#!/bin/sh\nfor a in "$0" "$@"; do printf "[%s]" "$a"; done\n'
    for stand_in in (mlgo / "venv/bin/python", mlgo / "mlgo-policy-host"):
        stand_in.write_text(echo)
        stand_in.chmod(0o755)
    for block, host in ((blocks[1], f"[{mlgo}/venv/bin/python][{mlgo}/mlgo-cc.py][--model][{mlgo}/model.onnx]"),
                        (blocks[2], f"[{mlgo}/mlgo-policy-host][--weights][{mlgo}/model.weights]")):
        p = subprocess.run(["bash", "-ec", f"mlgo=$PWD\n{block}"], cwd=mlgo, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert stat.S_IMODE((mlgo / "cc").stat().st_mode) == 0o755
        got = subprocess.run([str(mlgo / "cc"), "-Oz", "-c", "a b.c"], capture_output=True, text=True).stdout
        assert got == f"{host}[--vocab][{mlgo}/vocab.json][--][clang-22][-Oz][-c][a b.c]"


@pytest.mark.slow
def test_debians_lua_builds_with_libtool_through_the_shim_as_the_docs_say(tmp_path: Path) -> None:
    """The issue's project: Debian's lua5.4 (`apt-get source`), its libtool configured and its `make` run by the
    docs' lines with a `policy-cc --shim` as the C compiler: it builds, runs, and every C file was compiled with the
    policy answering (the stats' sessions)."""
    from workers import debsrc

    tree = debsrc.fetch_source("lua5.4", tmp_path / "src")
    stats, cc = tmp_path / "stats.jsonl", tmp_path / "bin/cc"
    p = subprocess.run([BIN / "mlgo-farm", "policy-cc", "--shim", cc, "--policy", "heuristic", "--stats", stats, "--",
                        "clang-22"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    block = docs_blocks()[3]
    assert "LIBTOOL=" in block and 'CC="$mlgo/cc' in block
    p = subprocess.run(["bash", "-ec", f"mlgo={cc.parent}\n{block}"], cwd=tree, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0 and p.stdout.endswith("42\n"), p.stdout[-2000:] + p.stderr[-3000:]
    rows = [json.loads(line) for line in stats.read_text().splitlines()]
    through = {Path(a).name for r in rows if r["ok"] and r["sessions"] and "-c" in r["argv"]
               for a in r["argv"] if a.endswith(".c")}
    sources = {f.name for f in (tree / "src").glob("*.c")}
    assert len(sources) > 30 and through - {"conftest.c"} == sources, sorted(sources ^ through)  # and configure's
