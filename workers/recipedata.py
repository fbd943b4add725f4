"""The Debian package catalogue as data: `workers/data/recipes.toml`, one table per source package, and the files
its builds would generate under `workers/data/debian/<package>/`.

A recipe is facts about a package's build (which directories, which defines, which generated headers), not code;
kept as TOML, a package is an entry someone can read and review without reading Python, and the loader checks every
entry against the fields of the recipe class, so a misspelt key fails at import instead of silently giving a package
the default (all of its C files, no defines). Like LNT's schema loader, a bad entry is one InputError line naming
the file, the package and the key.

The keys are the recipe class's field names, and one more, `generated_files`. Tuples are TOML lists, `copies` a
table of path -> path, `file_flags` a table of pattern -> list of flags. A generated header (`config.h` and the
like) is a literal file: `generated_files` lists paths under the source tree, and the text of each is the file of
that path under `debian/<package>/` beside the TOML file, read byte for byte (so `diff` and `grep` work on it, and
no quoting stands between the text and the compiler). The catalogue writes every generated file that way;
`generated`, the field itself (a table of path -> text), is read too, for a test's small file. A path is relative
and stays inside the tree; one in both keys, a missing or unreadable file are one InputError line too.

Adding a package is one table, in its place by name, and its files: say `libfoo` needs a `config.h` and
an `include/foo_version.h`,

    # What the recipe compiles, what it leaves out and why (a fragment #included elsewhere, another system's code).
    [libfoo]
    subdirs = ["lib", "tests"]
    flags = ["-DHAVE_CONFIG_H", "-I{src}", "-I{src}/include"]
    exclude = ["lib/win32_*.c"]
    generated_files = ["config.h", "include/foo_version.h"]

with `workers/data/debian/libfoo/config.h` and `workers/data/debian/libfoo/include/foo_version.h` holding the
text configure would write. Nothing in Python changes; policytrain/splitdata.py says which split it joins, and
tests/workers/test_recipedata.py checks that every file under `debian/` belongs to a table (and pins the
catalogue's sha256, which a new package changes on purpose).

This module receives the class (`load(PackageRecipe)`) rather than importing `workers.debrecipes`, which imports it: no
import cycle, and the tests can load small files of their own.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from farm import datafile
from farm.errors import InputError

DATA = Path(__file__).parent / "data" / "recipes.toml"
#: The key naming generated files, and the folder (beside the TOML file) of one folder per package holding them.
FILES_KEY, FILES_DIR = "generated_files", "debian"

R = TypeVar("R")


class _Bad(Exception):
    """A value that does not fit its field: the message says what the field wants."""


def _convert(value: object, hint: Any) -> object:
    """`value` as parsed from TOML, made the field's type (`hint`): lists become tuples; _Bad when it does not fit."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        # `str | None`: TOML has no null, so a key present is always the non-None member.
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            return _convert(value, members[0])
        raise _Bad(f"unsupported field type {hint}")
    if origin is tuple:
        if not isinstance(value, list):
            raise _Bad(f"must be a list, not {_toml_type(value)}")
        item = args[0] if args else object
        return tuple(_item(v, item, f"item {i}") for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise _Bad(f"must be a table, not {_toml_type(value)}")
        key_type, item = args if args else (str, object)
        return {_item(k, key_type, "key"): _item(v, item, repr(k)) for k, v in value.items()}
    if hint is object:
        return value
    if isinstance(hint, type):
        # bool is an int in Python but not in TOML's sense, and the other way round.
        if isinstance(value, hint) and (hint is bool or not isinstance(value, bool)):
            return value
        raise _Bad(f"must be {_type_name(hint)}, not {_toml_type(value)}")
    raise _Bad(f"unsupported field type {hint}")


def _item(value: object, hint: Any, what: str) -> object:
    """An element of a list or table, converted; _Bad says which element."""
    try:
        return _convert(value, hint)
    except _Bad as e:
        raise _Bad(f"{what} {e}") from None


def _type_name(t: type) -> str:
    return {str: "a string", bool: "true or false", int: "an integer", float: "a number"}.get(t, t.__name__)


def _toml_type(value: object) -> str:
    for t, name in ((bool, "a boolean"), (str, "a string"), (int, "an integer"), (float, "a number"),
                    (list, "a list"), (dict, "a table")):
        if isinstance(value, t):
            return name
    return type(value).__name__


def _inside(path: str) -> bool:
    """Whether `path` names a file inside a tree: relative, POSIX, no `..` and no empty part (debsrc writes it at
    tree/path, and the loader reads it at debian/<package>/path)."""
    parts = path.split("/")
    return bool(path) and "\\" not in path and not PurePosixPath(path).is_absolute() and \
        all(p not in ("", ".", "..") for p in parts)


def _files(value: object, folder: Path) -> dict[str, str]:
    """The texts of the generated files `value` lists (paths under the tree), read from `folder`; _Bad naming the
    first path that is not a relative path inside the tree, or whose file is missing or not UTF-8."""
    names = typing.cast(tuple[str, ...], _convert(value, tuple[str, ...]))
    texts: dict[str, str] = {}
    for name in names:
        if not _inside(name):
            raise _Bad(f"{name!r} must be a relative path inside the tree")
        if name in texts:
            raise _Bad(f"{name!r} is listed twice")
        file = folder / name
        try:
            # Bytes, decoded: read_text would turn a \r\n into \n, and the header must be what the file holds.
            texts[name] = file.read_bytes().decode("utf-8")
        except FileNotFoundError:
            raise _Bad(f"{name!r}: no file {file}") from None
        except OSError as e:
            raise _Bad(f"{name!r}: cannot read {file} ({e.strerror})") from None
        except UnicodeDecodeError as e:
            raise _Bad(f"{name!r}: {file} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    return texts


def parse(recipe_cls: type[R], data: Mapping[str, object], where: str = str(DATA),
          defined: Mapping[str, object] = types.MappingProxyType({}),
          files: Path = DATA.parent / FILES_DIR) -> dict[str, R]:
    """The recipes of a parsed recipes.toml, their generated files read from `files`/<package>/; InputError (one
    line) naming the first bad package or key, or a package that `defined` (recipes from elsewhere) already has:
    a second definition would silently replace the first."""
    fields = {f.name: f for f in dataclasses.fields(recipe_cls)}  # type: ignore[arg-type]
    keys = [*fields, FILES_KEY]
    hints = typing.get_type_hints(recipe_cls)
    out: dict[str, R] = {}
    for pkg, entry in data.items():
        if pkg in defined:
            raise InputError(f"{where}: [{pkg}] is already a recipe defined elsewhere: define a package in one place")
        if not isinstance(entry, dict):
            raise InputError(f"{where}: [{pkg}] must be a table of recipe fields, not {_toml_type(entry)}")
        kwargs: dict[str, Any] = {}
        for key, value in entry.items():
            if key not in keys:
                raise InputError(f"{where}: [{pkg}] unknown key {key!r} (keys: {', '.join(keys)})")
            try:
                if key == "generated" and isinstance(value, list):
                    raise _Bad(f"must be a table, not a list (a list of files is {FILES_KEY})")
                kwargs[key] = _files(value, files / pkg) if key == FILES_KEY else _convert(value, hints[key])
                if key == "generated":
                    bad = next((p for p in kwargs[key] if not _inside(p)), None)
                    if bad is not None:
                        raise _Bad(f"{bad!r} must be a relative path inside the tree")
            except _Bad as e:
                raise InputError(f"{where}: [{pkg}] {key} {e}") from None
        if FILES_KEY in kwargs:
            both = next((p for p in kwargs[FILES_KEY] if p in kwargs.get("generated", {})), None)
            if both is not None:
                raise InputError(f"{where}: [{pkg}] {FILES_KEY} {both!r} is in generated too: one text per path")
            kwargs["generated"] = {**kwargs.get("generated", {}), **kwargs.pop(FILES_KEY)}
        out[pkg] = recipe_cls(**kwargs)
    return out


def load(recipe_cls: type[R], path: Path = DATA,
         defined: Mapping[str, object] = types.MappingProxyType({})) -> dict[str, R]:
    """The recipes in the TOML file at `path` (generated files in the `debian/` folder beside it), as `recipe_cls`
    objects (package name: recipe), checked by `parse`."""
    return parse(recipe_cls, datafile.read(path), str(path), defined, Path(path).parent / FILES_DIR)
