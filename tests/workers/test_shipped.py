"""workers/shipped.py: which modules of a package its binary packages ship, read from workers/data/shipped.toml."""

from __future__ import annotations

import re

import pytest

from farm.errors import InputError
from policytrain import splitdata
from workers import shipped

GOOD = {"unshipped": ["tests/*", "examples/*.c"], "why": "debian/libfoo1.install: the library only"}


def _error(data: dict[str, object]) -> str:
    with pytest.raises(InputError) as e:
        shipped.parse(data, "shipped.toml")
    return str(e.value)


def test_a_good_entry_parses_and_its_patterns_say_what_is_shipped() -> None:
    entry = shipped.parse({"libfoo": GOOD})["libfoo"]
    assert entry.unshipped == ("tests/*", "examples/*.c") and entry.why == GOOD["why"]
    assert entry.ships("src/foo.c")
    assert not entry.ships("tests/unit/test_foo.c") and not entry.ships("examples/demo.c")
    assert shipped.parse({"libbar": {"unshipped": [], "why": "everything is installed"}})["libbar"].ships("x.c")


@pytest.mark.parametrize(("entry", "key"), [
    ({**GOOD, "shipped": ["src/*"]}, r"unknown key 'shipped'"),            # an unknown key
    ({"unshipped": ["tests/*"]}, r"\bwhy\b"),                              # no why
    ({**GOOD, "unshipped": "tests/*"}, r"\bunshipped\b"),                  # a string, not a list
    ({**GOOD, "unshipped": ["tests/*", 3]}, r"\bunshipped\b"),             # a list of something else
    ({**GOOD, "why": "  "}, r"\bwhy\b"),                                   # an empty why
])
def test_a_bad_entry_is_one_line_naming_the_package_and_the_key(entry: dict[str, object], key: str) -> None:
    message = _error({"good": GOOD, "libfoo": entry})
    assert message.startswith("shipped.toml: [libfoo] ") and "\n" not in message
    assert re.search(key, message.removeprefix("shipped.toml: [libfoo] ")), message


def test_an_entry_that_is_not_a_table_is_refused() -> None:
    assert _error({"libfoo": ["tests/*"]}).startswith("shipped.toml: [libfoo] ")


def test_a_package_without_an_entry_keeps_all_its_modules() -> None:
    modules = {"src/a.c", "tests/test_a.c", "examples/demo.c"}
    assert "no-such-package" not in shipped.load()
    assert shipped.shipped_names("no-such-package", modules) == modules
    assert shipped.missing(["no-such-package"]) == ["no-such-package"]


def test_a_package_with_an_entry_drops_what_it_does_not_ship() -> None:
    assert shipped.shipped_names("cjson", {"cJSON.c", "cJSON_Utils.c", "tests/parse_array.c",
                                           "fuzzing/afl.c"}) == {"cJSON.c"}


def test_every_held_out_package_has_an_entry() -> None:
    held_out = [pkg for split, pkgs in splitdata.SPLITS.items() if split != "train" for pkg in pkgs]
    assert held_out and shipped.missing(held_out) == []
    for pkg in held_out:
        assert shipped.shipping(pkg).why.strip()


@pytest.mark.parametrize(("outputs", "message"), [
    ('[[p.outputs]]\nname = "libp.so"\nkind = "static"\nmodules = ["*.c"]',
     "[p.outputs] 'libp.so' kind must be one of shared, program, not 'static'"),
    ('[[p.outputs]]\nname = "p"\nkind = "program"\nmodules = ["main.c"]\nneeds = ["libq.so"]',
     "[p.outputs] 'p' needs 'libq.so', which is not another output of the package"),
    ('[[p.outputs]]\nname = "libp.so"\nkind = "shared"\nmodules = ["tests/t.c"]',
     "[p.outputs] 'libp.so' modules: 'tests/t.c' is unshipped (the entry's `unshipped` names it)"),
    ('[[p.outputs]]\nname = "libp.so"\nkind = "shared"\nmodules = ["*.c"]\nlibs = ["/usr/bin/evil"]',
     "[p.outputs] 'libp.so' libs: '/usr/bin/evil' is not a library (-lNAME) or a linker flag (-Wl,...)"),
    ('[[p.outputs]]\nname = "../libp.so"\nkind = "shared"\nmodules = ["*.c"]',
     "[p.outputs] '../libp.so' name must be a file name, not a path"),
    ('[[p.outputs]]\nname = "libp.so"\nkind = "shared"\nmodules = ["*.c"]\nflavour = 1',
     "[p.outputs] unknown key 'flavour'"),
    ('[[p.outputs]]\nname = "p"\nkind = "program"\nmodules = ["main.c"]\n'
     '[[p.outputs]]\nname = "q"\nkind = "program"\nmodules = ["q.c"]\nneeds = ["p"]',
     "[p.outputs] 'q' can only link against shared outputs"),
])
def test_a_bad_output_is_one_line_naming_the_package_and_the_key(outputs: str, message: str) -> None:
    """The linked files a package declares are checked as the file is read (workers/linked.py links them)."""
    from farm import datafile
    from workers.shipped import parse

    text = f'[p]\nunshipped = ["tests/*"]\nwhy = "debian/p.install"\n{outputs}\n'
    with pytest.raises(InputError) as e:
        parse(datafile.loads(text, "shipped.toml"), "shipped.toml")
    assert str(e.value).startswith("shipped.toml: ") and message in str(e.value), str(e.value)


def test_outputs_name_the_modules_and_the_libraries_a_package_links() -> None:
    from farm import datafile
    from workers.shipped import Output, parse

    text = ('[p]\nunshipped = []\nwhy = "debian/p.install"\n[[p.outputs]]\nname = "libp.so.1"\nkind = "shared"\n'
            'modules = ["lib/*.c"]\nlibs = ["-lm"]\n[[p.outputs]]\nname = "p"\nkind = "program"\nmodules = ["main.c"]\n'
            'needs = ["libp.so.1"]\n')
    entry = parse(datafile.loads(text, "shipped.toml"))["p"]
    assert entry.outputs == (Output("libp.so.1", "shared", ("lib/*.c",), (), ("-lm",)),
                             Output("p", "program", ("main.c",), ("libp.so.1",)))
    broad = Output("libp.so", "shared", ("lib/*.c",), exclude=("lib/tests/*",))
    assert broad.members(["lib/a.c", "lib/tests/t.c"]) == ["lib/a.c"] and broad.unmatched(["lib/tests/t.c"])
    assert entry.output("p").members(["lib/a.c", "main.c", "lib/b.c"]) == ["main.c"]
    assert entry.output("libp.so.1").unmatched(["main.c"]) == ["lib/*.c"]
    assert Output.from_json(entry.outputs[1].as_json()) == entry.outputs[1]


def test_every_package_a_policy_is_trained_chosen_or_judged_on_declares_what_it_links() -> None:
    """The tables judge what the linker ships: a package of these splits without linked outputs would be judged by a
    sum of objects in silence (retired packages too, which the demo judges on, but for libsndfile, whose Debian
    configuration links FLAC, Ogg and MPEG libraries the recipe cannot compile)."""
    judged = [p for s in ("train", "validation", "decision", "evaluation", "cxx-train", "cxx-validation",
                          "cxx-decision", "cxx-evaluation") for p in splitdata.SPLITS[s]]
    assert shipped.unlinked(judged) == []
    assert shipped.unlinked(splitdata.SPLITS["retired"]) == ["libsndfile"]
