"""Recipes kept as data: `workers/data/recipes.toml`, one table per Debian source package.

A recipe is facts about a package's build (which directories, which defines, which generated headers), not code;
kept as TOML, a new package is an entry someone can read and review without reading Python, and the loader checks
every entry against the fields of the recipe class, so a misspelt key fails at import instead of silently giving a
package the default. Like LNT's schema loader, a bad entry is one InputError line naming the file, the package and
the key.

The keys are the recipe class's field names. Tuples are TOML lists, `generated` a table of path -> text (multi-line
strings welcome), `copies` a table of path -> path, `file_flags` a table of pattern -> list of flags:

    [tinycdb]
    flags = ["-I{src}"]
    exclude = ["nss_cdb*.c"]
    generated = { "config.h" = "#define HAVE_UNISTD_H 1\\n" }

This module receives the class (`load(Recipe)`) rather than importing `workers.debrecipes`, which imports it: no
import cycle, and the tests can load small files of their own.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from farm import datafile
from farm.errors import InputError

DATA = Path(__file__).parent / "data" / "recipes.toml"

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


def parse(recipe_cls: type[R], data: Mapping[str, object], where: str = str(DATA),
          defined: Mapping[str, object] = types.MappingProxyType({})) -> dict[str, R]:
    """The recipes of a parsed recipes.toml; InputError (one line) naming the first bad package or key, or a package
    that `defined` (the recipes kept in Python) already has: a second definition would silently replace the first."""
    fields = {f.name: f for f in dataclasses.fields(recipe_cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(recipe_cls)
    out: dict[str, R] = {}
    for pkg, entry in data.items():
        if pkg in defined:
            raise InputError(f"{where}: [{pkg}] is already a recipe in Python (workers/debrecipes*.py): "
                             "define a package in one place")
        if not isinstance(entry, dict):
            raise InputError(f"{where}: [{pkg}] must be a table of recipe fields, not {_toml_type(entry)}")
        kwargs = {}
        for key, value in entry.items():
            if key not in fields:
                raise InputError(f"{where}: [{pkg}] unknown key {key!r} (keys: {', '.join(fields)})")
            try:
                kwargs[key] = _convert(value, hints[key])
            except _Bad as e:
                raise InputError(f"{where}: [{pkg}] {key} {e}") from None
        out[pkg] = recipe_cls(**kwargs)
    return out


def load(recipe_cls: type[R], path: Path = DATA,
         defined: Mapping[str, object] = types.MappingProxyType({})) -> dict[str, R]:
    """The recipes in the TOML file at `path`, as `recipe_cls` objects (package name: recipe), checked by `parse`."""
    return parse(recipe_cls, datafile.read(path), str(path), defined)
