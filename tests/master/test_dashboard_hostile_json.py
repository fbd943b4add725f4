"""Hostile numbers in the store's JSON are one line, never a traceback (issue 35, item 6): a 5,001-digit integer (over
Python's int-string limit), an array 100,000 deep (over the recursion limit) or a 400-digit integer (parsed, then
no float holds it) in an index, a manifest or a vocabulary make every page that reads it answer a one-line error
that names the object and that no cache keeps, while the pages that do not read it still work (and the front page,
which reads every index, blanks only the section of the one it cannot read: tests/master/test_dashboard_degraded.py).
The real app over the store tests/master/test_dashboard.py builds."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from farm.config import load_settings
from farm.objectstore import FileStore
from master.dashboard.app import create_app
from tests.master.test_dashboard import DS, V1, V2, fill_history, populate

HOSTILE = {"5001 digits": "1" * 5001, "100000 deep": "[" * 100_000 + "]" * 100_000, "401 digits": "1" + "0" * 400}
DIFF = f"/vocab/ir/diff?a={V1}&b={V2}"
VOCAB_MANIFEST = f"vocab/ir/{V1}/manifest.json"
DATASET_MANIFEST = f"datasets/ir/{DS}/manifest.json"


def _hostile_index(root: Path, number: str, key: str) -> None:
    (root / key).write_text('{"format": 1, "versions": [{"version": "x", "mrr": ' + number + "}]}")


def _hostile_manifest(root: Path, number: str, key: str) -> None:
    text = (root / key).read_text()
    (root / key).write_text(text[:-1] + ', "entities": ' + number + "}")


def _hostile_vocab(root: Path, number: str, key: str) -> None:
    """V1's vocab.json with the number in a vector, its manifest's sha256 that of these bytes (what publishing a
    hand-made file could leave): the digest check passes, the reader must not."""
    data = (root / key).read_bytes().replace(b"[", b"[" + number.encode() + b",", 1)
    (root / key).write_bytes(data)
    manifest = json.loads((root / VOCAB_MANIFEST).read_text())
    (root / VOCAB_MANIFEST).write_text(json.dumps({**manifest, "sha256": hashlib.sha256(data).hexdigest()}))


#: (the object made hostile, how, the pages that read it: each a one-line error; pages that do not read it: 200)
CASES = {
    "vocab index": ("vocab/index.json", _hostile_index,
                    ["/index.json", "/vocab/", f"/vocab/ir/{V1}/", DIFF],
                    [f"/store/vocab/ir/{V1}/vocab.json", "/", "/index.html"]),  # the front page: a note (issue 47)
    "policy index": ("policies/index.json", _hostile_index, ["/policies/", "/index.json"], ["/vocab/", "/"]),
    "vocab manifest": (VOCAB_MANIFEST, _hostile_manifest,
                       ["/index.json", "/vocab/", f"/vocab/ir/{V1}/", DIFF, f"/store/vocab/ir/{V1}/vocab.json.sha256",
                        f"/store/vocab/ir/{V1}/vocab.json"], ["/", f"/vocab/ir/{V2}/"]),
    "dataset manifest": (DATASET_MANIFEST, _hostile_manifest, ["/datasets/", f"/datasets/ir/{DS}/",
                                                               f"/store/datasets/ir/{DS}/train2id.txt"], ["/"]),
    "vocabulary": (f"vocab/ir/{V1}/vocab.json", _hostile_vocab, [DIFF], [f"/vocab/ir/{V1}/", "/vocab/"]),
}


@pytest.mark.parametrize("number", list(HOSTILE.values()), ids=list(HOSTILE))
@pytest.mark.parametrize("case", list(CASES))
def test_hostile_numbers_in_stored_json_are_a_one_line_error_page(tmp_path: Path, case: str, number: str) -> None:
    root = tmp_path / "store"
    populate(root)
    fill_history(tmp_path / "history.sqlite")
    key, make, broken, fine = CASES[case]
    make(root, number, key)
    c = create_app(load_settings(), store=FileStore(root), history=tmp_path / "history.sqlite").test_client()
    for url in broken:
        r = c.get(url)
        text = r.get_data(as_text=True)
        assert r.status_code == 500 and r.mimetype == "text/plain", (url, r.status_code, text[:300])
        assert text.startswith("500 Internal Server Error: corrupt object in the store: "), (url, text[:300])
        assert text.count("\n") == 1 and len(text) < 1000 and r.headers["Cache-Control"] == "no-store", (url, text)
        assert (key if case != "vocabulary" else f"vocabulary {V1}") in text, (url, text)
    for url in fine:
        assert c.get(url).status_code == 200, url
