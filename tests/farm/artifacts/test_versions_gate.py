"""The states a gate leaves in the versioned store (farm/artifacts/versions.py): an operator's promotion (forward
and back, refused when the bytes changed or without a reason), a `latest` without a manifest refused before
anything is uploaded, and a version waiting for a rule (`policy_size`) that a later step settles.

Versions are hand-made vocabularies published through the vocabulary side with its gate (tests/vocabgen/conftest.py
`publish_handmade`, `GATE`, `WAITS`)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from farm.artifacts import VOCABULARIES
from farm.artifacts.verdict import Check
from farm.errors import InputError
from farm.objectstore import CorruptObject, FileStore
from tests.vocabgen.conftest import WAITS, assert_consistent
from tests.vocabgen.conftest import publish_handmade as _publish
from vocabgen import publish as pub

DAY = 86400
T0 = 1_790_000_000.0


def test_promote_moves_latest_and_records_why(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store")
    first = _publish(store, 1, T0)
    worse = _publish(store, 2, T0 + DAY, mrr=0.2)
    entry = VOCABULARIES.promote(store, "ir", worse["version"], "  held-out set of the old one was\ttiny ", by="ops",
                                 when=T0 + 2 * DAY)
    assert VOCABULARIES.resolve(store, "ir", "latest") == worse["version"]
    assert entry["state"] == "latest" and entry["promoted"] == {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(T0 + 2 * DAY)), "by": "ops",
        "reason": "held-out set of the old one was tiny", "previous": first["version"]}
    assert entry["gate"]["passed"] is False, "the gate's verdict stays beside the promotion"
    index = {v["version"]: v for v in VOCABULARIES.read_index(store)}
    assert index[first["version"]]["state"] == "superseded" and index[worse["version"]] == entry
    assert _publish(store, 1, T0 + 3 * DAY)["latest"] == worse["version"], "republishing does not undo a promotion"
    back = VOCABULARIES.promote(store, "ir", first["version"], "roll back", when=T0 + 4 * DAY)
    assert VOCABULARIES.resolve(store, "ir", "latest") == first["version"] and \
        back["promoted"]["previous"] == worse["version"]
    assert {v["version"]: v["state"] for v in VOCABULARIES.read_index(store)} == {first["version"]: "latest",
                                                                                  worse["version"]: "superseded"}
    before = {k: store.get(k) for k in store.list("vocab/")}
    for version, reason, message in ((worse["version"], " ", "a promotion needs a reason"),
                                     ("20260101-x-ir-d4-000000000000", "r", "is listed in"),
                                     ("latest", "r", "names a version, not `latest`"),
                                     ("../x", "r", "invalid version name")):
        with pytest.raises(InputError, match=message):
            VOCABULARIES.promote(store, "ir", version, reason)
    assert {k: store.get(k) for k in store.list("vocab/")} == before, "a refused promotion changes nothing"


def test_promote_refuses_a_version_whose_bytes_changed(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store")
    _publish(store, 1, T0)
    worse = _publish(store, 2, T0 + DAY, mrr=0.2)
    key = f"vocab/ir/{worse['version']}/vocab.json"
    store.put(key, store.get(key).replace(b"0", b"1", 1))
    with pytest.raises(CorruptObject, match="does not match its manifest's sha256; not promoted"):
        VOCABULARIES.promote(store, "ir", worse["version"], "r")
    assert json.loads(store.get("vocab/ir/latest.json"))["version"] != worse["version"]


def test_a_latest_without_manifest_is_refused_before_anything_is_uploaded(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store")
    first = _publish(store, 1, T0)
    store.delete(f"vocab/ir/{first['version']}/manifest.json")
    before = {k: store.get(k) for k in store.list("vocab/")}
    with pytest.raises(CorruptObject, match=rf"names {first['version']}, which has no manifest \(`mlgo-farm "
                                                r"vocab promote` a listed version to repair it\)"):
        _publish(store, 2, T0 + DAY)
    assert {k: store.get(k) for k in store.list("vocab/")} == before


def test_a_version_waiting_for_its_policy_becomes_latest_only_when_the_check_holds(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store")
    first = _publish(store, 1, T0)
    waiting = _publish(store, 2, T0 + DAY, gate=WAITS)
    assert waiting["state"] == "candidate" and waiting["latest"] == first["version"]
    assert pub.summary(waiting) == (f"ir {waiting['version']} (published, awaiting policy_size; latest stays at "
                                    f"{first['version']} until then)")
    assert VOCABULARIES.newest(store, "ir", "policy_size") == waiting["version"], "what the policy is retrained with"
    failing = _publish(store, 3, T0 + 2 * DAY, gate=WAITS, mrr=0.1)
    assert VOCABULARIES.newest(store, "ir", "policy_size") == waiting["version"], "fails a rule of its own"
    assert VOCABULARIES.settle(store, "ir", failing["version"], Check("policy_size", True, "fine")) is not None
    assert VOCABULARIES.resolve(store, "ir", "latest") == first["version"], "its mrr still keeps it out"
    held = VOCABULARIES.settle(store, "ir", waiting["version"], Check("policy_size", False, "policy P: zlib +0.4%"))
    assert held["state"] == "candidate" and held["gate"]["reasons"] == ["policy_size: policy P: zlib +0.4%"]
    assert VOCABULARIES.resolve(store, "ir", "latest") == first["version"]
    assert VOCABULARIES.settle(store, "ir", waiting["version"], Check("policy_size", True, "x")) is None, "settled once"
    later = _publish(store, 4, T0 + 3 * DAY, gate=WAITS)
    assert VOCABULARIES.newest(store, "ir", "policy_size") == later["version"]
    passed = VOCABULARIES.settle(store, "ir", later["version"], Check("policy_size", True, "policy Q: zlib -0.1%"))
    assert passed["state"] == "latest" and VOCABULARIES.resolve(store, "ir", "latest") == later["version"]
    assert VOCABULARIES.newest(store, "ir", "policy_size") == later["version"]
    assert assert_consistent(store)
