"""A vocabulary version's page says how its training started (the manifest's `warm_start`, vocabgen/warm.py): from
which version's vectors, for how many of its entities, or why it started cold; a version published before the
record existed says so. Through Flask's test client, with test_dashboard.py's store."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from farm.objectstore import FileStore
from tests.master.test_dashboard import V1, V2, client  # noqa: F401  (the fixture)


def _record(store: FileStore, version: str, warm_start: dict) -> None:
    key = f"vocab/ir/{version}/manifest.json"
    store.put(key, json.dumps({**json.loads(store.get(key)), "warm_start": warm_start}).encode())


def _start(page: str) -> str:
    return page.split('<td id="warm-start">')[1].split("</td>")[0]


def test_a_versions_page_says_from_which_version_its_training_started(client, tmp_path: Path):  # noqa: F811
    c, data = client
    store = FileStore(tmp_path / "store")
    sha = hashlib.sha256(data[V1]).hexdigest()
    _record(store, V2, {"from": V1, "sha256": sha, "entities": 6, "of": 7})
    _record(store, V1, {"from": None, "reason": "no ir vocabulary is published yet"})

    warm = _start(c.get(f"/vocab/ir/{V2}/").get_data(as_text=True))
    assert f'<a href="/vocab/ir/{V1}/">{V1}</a>' in warm and "6 of 7 entities" in warm and sha in warm, warm
    cold = _start(c.get(f"/vocab/ir/{V1}/").get_data(as_text=True))
    assert "random start: no ir vocabulary is published yet" in cold and "<a" not in cold, cold

    # a name that is no version is shown, escaped, and linked nowhere
    _record(store, V2, {"from": "<b>../x</b>", "sha256": sha, "entities": 6, "of": 7})
    odd = _start(c.get(f"/vocab/ir/{V2}/").get_data(as_text=True))
    assert "&lt;b&gt;../x&lt;/b&gt;" in odd and "<a" not in odd, odd


def test_a_version_published_before_the_record_says_it_is_not_recorded(client):  # noqa: F811
    c, _ = client
    assert _start(c.get(f"/vocab/ir/{V2}/").get_data(as_text=True)) == "not recorded"
