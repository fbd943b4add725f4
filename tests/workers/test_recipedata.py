"""The Debian package catalogue as data (workers/recipedata.py): the loader gives the PackageRecipe objects the Python
recipes were, byte for byte, and a bad entry (a key, a missing generated file) is one line naming the file, the package
and the key, so a typo in recipes.toml cannot silently give a package the default (all of its C files, no defines)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tomllib
from pathlib import Path

import pytest

from farm.errors import InputError
from workers import recipedata, shipped
from workers.debrecipes import RECIPES, PackageRecipe

GOOD = '''
[tool]
subdirs = ["src", "test"]
flags = ["-DHAVE_CONFIG_H", "-I{src}/include"]
exclude = ["src/win32.c", "test/fuzz_*.c"]
file_flags = { "*_avx2.c" = ["-mavx2"], "*_sse41.c" = ["-msse4.1"] }
fallback_version = "1.0-1"
[tool.generated]
"config.h" = """
#define HAVE_UNISTD_H 1
#define VERSION "1.0"
"""

[built]
cmake = "llvm"
cmake_defines = ["CMAKE_BUILD_TYPE=Release"]
cxx = true
copies = { "src/config.h" = "src/config.h.generic" }
'''


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "recipes.toml"
    path.write_text(text)
    return path


def _one_line_error(path: Path, *words: str, defined: dict[str, object] | None = None) -> str:
    with pytest.raises(InputError) as e:
        recipedata.load(PackageRecipe, path, defined=defined or {})
    msg = str(e.value)
    assert "\n" not in msg
    for word in (str(path), *words):
        assert word in msg
    return msg


def test_a_good_file_gives_the_recipes_python_would(tmp_path):
    got = recipedata.load(PackageRecipe, _write(tmp_path, GOOD))
    assert got == {
        "tool": PackageRecipe(subdirs=("src", "test"), flags=("-DHAVE_CONFIG_H", "-I{src}/include"),
                       exclude=("src/win32.c", "test/fuzz_*.c"),
                       file_flags={"*_avx2.c": ("-mavx2",), "*_sse41.c": ("-msse4.1",)},
                       fallback_version="1.0-1",
                       generated={"config.h": '#define HAVE_UNISTD_H 1\n#define VERSION "1.0"\n'}),
        "built": PackageRecipe(cmake="llvm", cmake_defines=("CMAKE_BUILD_TYPE=Release",), cxx=True,
                        copies={"src/config.h": "src/config.h.generic"}),
    }
    assert got["tool"].flags_of("src/x_avx2.c") == ("-mavx2",)  # tuples, as PackageRecipe's methods expect


def _toml(recipe: PackageRecipe) -> str:
    """A recipe's non-default fields as TOML lines (JSON strings and arrays are TOML's too)."""
    lines = []
    for key, value in vars(recipe).items():
        if value == getattr(PackageRecipe(), key):
            continue
        if isinstance(value, dict):
            items = ", ".join(f"{json.dumps(k)} = {json.dumps(list(v) if isinstance(v, tuple) else v)}"
                              for k, v in value.items())
            lines.append(f"{key} = {{ {items} }}")
        else:
            lines.append(f"{key} = {json.dumps(list(value) if isinstance(value, tuple) else value)}")
    return "\n".join(lines)


def test_every_python_recipe_survives_the_trip_through_toml(tmp_path):
    # Every kind of field the Python recipes use (generated headers with quotes and backslashes, per-file flags,
    # copies, CMake projects) reads back equal: moving a recipe into recipes.toml changes nothing.
    text = "\n".join(f"[{json.dumps(name)}]\n{_toml(r)}\n" for name, r in RECIPES.items())
    assert recipedata.load(PackageRecipe, _write(tmp_path, text)) == RECIPES


def test_an_unknown_key_is_one_line_naming_package_and_key(tmp_path):
    path = _write(tmp_path, '[tool]\nflags = ["-DX"]\nexcludes = ["a.c"]\n')
    msg = _one_line_error(path, "[tool]", "'excludes'")
    assert "exclude" in msg.split("keys:")[1]  # says which keys there are


@pytest.mark.parametrize(("text", "key", "said"), [
    ('flags = "-DX"', "flags", "must be a list, not a string"),
    ("subdirs = [1]", "subdirs", "item 0 must be a string, not an integer"),
    ("cxx = 1", "cxx", "must be true or false, not an integer"),
    ('file_flags = { "*.c" = "-mavx2" }', "file_flags", "'*.c' must be a list, not a string"),
    ('generated = ["config.h"]', "generated", "must be a table, not a list"),
    ('fallback_version = ["1.0"]', "fallback_version", "must be a string, not a list"),
])
def test_a_wrong_type_is_one_line_naming_package_and_key(tmp_path, text, key, said):
    _one_line_error(_write(tmp_path, f"[tool]\n{text}\n"), "[tool]", key, said)


def test_a_package_the_python_recipes_have_cannot_be_defined_again(tmp_path):
    path = _write(tmp_path, '[zlib]\nflags = ["-DX"]\n')
    _one_line_error(path, "[zlib]", "already", defined={"zlib": PackageRecipe()})


def test_a_package_must_be_a_table_and_the_file_valid_toml(tmp_path):
    _one_line_error(_write(tmp_path, 'tool = "yes"\n'), "[tool]", "must be a table")
    _one_line_error(_write(tmp_path, "[tool\nflags = []\n"), "line 1")
    _one_line_error(tmp_path / "missing.toml", "does not exist")


#: The twelve packages recipes.toml held before the whole catalogue moved in (commit d4c6c2b): an evaluation set, so
#: each has a shipped entry (tests/workers/test_shipped.py checks every held-out package's).
FIRST_IN_DATA = ("lhasa", "libmspack", "mxml", "serd", "potrace", "tinycdb", "libdvdread", "fribidi", "nlopt",
                 "libspiro", "discount", "bc")


def test_the_data_file_joins_the_python_recipes_and_every_package_has_a_shipped_entry():
    with open(recipedata.DATA, "rb") as f:
        assert list(tomllib.load(f)) == list(RECIPES)  # the data file is the whole catalogue
    names = [name for name in RECIPES if name in FIRST_IN_DATA]
    assert len(names) >= 12
    assert all(RECIPES[name] is not None for name in names)  # read into RECIPES by workers/debrecipes.py
    assert all(not RECIPES[name].cxx for name in names)  # the policy's packages are C
    assert shipped.missing(names) == []


#: sha256 of the canonical JSON of every recipe (`_canonical`), 81 packages, produced from the Python recipes at
#: commit d4c6c2b (workers/debrecipes.py and its six debrecipes_*.py modules, with the twelve of recipes.toml) before
#: they became data: the conversion changed no byte. A recipe changed on purpose changes it: the failure prints the
#: new sum to put here, and the commit says which recipe changed and why.
CATALOGUE_SHA256 = "78a44de13cd95fd814115ed30393eb2f783cb5d7917fe3cba4a043ec7dc677c2"


def _canonical() -> bytes:
    """Every recipe, all fields (`dataclasses.asdict`), as sorted compact JSON."""
    d = {name: dataclasses.asdict(r) for name, r in RECIPES.items()}
    return json.dumps(d, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def test_the_catalogue_is_the_python_recipes_byte_for_byte():
    got = hashlib.sha256(_canonical()).hexdigest()
    assert got == CATALOGUE_SHA256, f"the catalogue changed: its sha256 is now {got}"


def test_every_generated_file_belongs_to_a_table():
    # A header left behind when its table dropped it (or misnamed beside it) would be dead data nobody reads.
    root = recipedata.DATA.parent / recipedata.FILES_DIR
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    with open(recipedata.DATA, "rb") as f:
        listed = {f"{pkg}/{name}" for pkg, entry in tomllib.load(f).items()
                  for name in entry.get(recipedata.FILES_KEY, ())}
    assert on_disk == listed


def _with_files(tmp_path: Path, text: str, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        f = tmp_path / "debian" / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data)
    return _write(tmp_path, text)


def test_generated_files_are_read_byte_for_byte_beside_the_data_file(tmp_path):
    header = b'#define X "a\\b"\r\n\t#define Y 1'  # a \r\n, a tab, no final newline: all kept
    path = _with_files(tmp_path, '[tool]\ngenerated_files = ["config.h", "src/x.h"]\n'
                       'generated = { "inline.h" = "#define Z 1\\n" }\n',
                       {"tool/config.h": header, "tool/src/x.h": b""})
    got = recipedata.load(PackageRecipe, path)["tool"]
    assert got.generated == {"inline.h": "#define Z 1\n", "config.h": header.decode(), "src/x.h": ""}


def test_a_missing_generated_file_is_one_line_naming_package_key_and_file(tmp_path):
    path = _with_files(tmp_path, '[tool]\ngenerated_files = ["config.h", "src/x.h"]\n', {"tool/config.h": b"\n"})
    _one_line_error(path, "[tool]", "generated_files", "'src/x.h'", str(tmp_path / "debian" / "tool" / "src" / "x.h"))


@pytest.mark.parametrize(("text", "files", "said"), [
    ('generated_files = ["../other/config.h"]', {"other/config.h": b"\n"}, "relative path inside the tree"),
    ('generated_files = ["/etc/passwd"]', {}, "relative path inside the tree"),
    ('generated_files = ["config.h", "config.h"]', {"tool/config.h": b"\n"}, "listed twice"),
    ('generated_files = "config.h"', {}, "must be a list, not a string"),
    ('generated_files = ["config.h"]', {"tool/config.h": b"\xff\n"}, "not UTF-8"),
    ('generated_files = ["config.h"]\ngenerated = { "config.h" = "x" }', {"tool/config.h": b"\n"}, "in generated too"),
    ('generated = { "../x.h" = "x" }', {}, "relative path inside the tree"),
])
def test_a_bad_generated_file_is_one_line_naming_package_and_key(tmp_path, text, files, said):
    _one_line_error(_with_files(tmp_path, f"[tool]\n{text}\n", files), "[tool]", "generated", said)
