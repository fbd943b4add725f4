"""`corpus` and `triplets` say how far they are (issue 39, item 2): stage, done/total (failures counted), elapsed and
an estimate, as plain lines on stderr off a terminal (farm/progress.py), never on stdout. The interval between lines
is set to none, so that a run of a few modules shows a line per module whatever the machine's speed."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from farm import progress
from farm.cli import main
from tests.conftest import DATA

LINE = re.compile(r"^(?P<stage>.+): (?P<done>\d+)/(?P<total>\d+) done \((?P<failed>\d+) failed\), \d+m\d\ds, "
                  r"about \d+m\d\ds left$")


def _lines(err: str, stage: str) -> list[tuple[str, int, int, int]]:
    """The progress lines of `stage` (under --json, the verb's own sentences go to stderr too)."""
    got = []
    for line in err.splitlines():
        if not line.startswith(stage + ": "):
            continue
        m = LINE.match(line)
        assert m, f"not a progress line: {line!r}"
        got.append((m["stage"], int(m["done"]), int(m["total"]), int(m["failed"])))
    return got


@pytest.fixture(autouse=True)
def _every_item(monkeypatch) -> None:
    monkeypatch.setattr(progress, "PROGRESS_EVERY", 0.0)


def test_corpus_then_triplets_show_their_modules(tmp_path: Path, capsys) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for f in ("sort.c", "hash.c"):
        shutil.copy(DATA / "csrc" / f, src / f)
    shutil.copy(DATA / "bad" / "syntax_error.c", src / "broken.c")
    assert main(["corpus", "sources", str(src), "-o", str(tmp_path / "corpus"), "--jobs", "1"]) == 0
    out = capsys.readouterr()
    assert "2 modules" in out.out and "done (" not in out.out
    got = _lines(out.err, "corpus: translation units compiled")
    assert len(got) == len(out.err.splitlines())  # nothing else: the verb's answer is on stdout
    # a line per translation unit but the last (the verb's summary follows); the broken one counted as failed
    assert [(s, d, t) for s, d, t, _ in got] == [("corpus: translation units compiled", 1, 3),
                                                 ("corpus: translation units compiled", 2, 3)]
    assert [f for *_, f in got] in ([0, 0], [0, 1], [1, 1])  # failures only grow, the broken one in any order

    assert main(["triplets", "ir", str(tmp_path / "corpus"), "-o", str(tmp_path / "ds"), "--opt-levels", "O0",
                 "--jobs", "1", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["kind"] == "ir"  # stdout is the answer alone
    assert _lines(out.err, "triplets ir: modules") == [("triplets ir: modules", 1, 2, 0)]


def test_corpus_debian_shows_its_translation_units(tmp_path: Path, capsys, have_apt_source: bool) -> None:
    if not have_apt_source:
        pytest.skip("needs apt-get source")
    assert main(["corpus", "debian", "zlib", "-o", str(tmp_path / "corpus"), "--debsrc", str(tmp_path / "src"),
                 "--json"]) == 0
    out = capsys.readouterr()
    modules = json.loads(out.out)["modules"]
    got = _lines(out.err, "corpus: translation units compiled")
    assert modules > 5 and [(s, d) for s, d, _, _ in got] == [("corpus: translation units compiled", n)
                                                             for n in range(1, modules)]
