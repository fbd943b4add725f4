"""A retrain's warm start never reads rotten or hostile bytes from the store (issue 35, items 2 and 6): a `latest`
vocabulary whose bytes do not match its manifest, or a pointer no JSON reader takes, is a one-line CorruptObject
(the retrain stops and says which object), never vectors silently taken from a truncated file or a traceback."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from farm.objectstore import CorruptObject, FileStore
from vocabgen.warm import WarmStart, from_latest

VERSION = "20260101-llvm22.1.8-ir-d2-aaaaaaaaaaaa"
VOCAB = b'{"Opcodes":{"Ret":[0.5,0.5]},"Types":{"VoidTy":[0.1,0.2]},"Arguments":{"Function":[0.3,0.4]}}\n'
ENTITIES = ["Ret", "VoidTy", "Function"]


def _store(root: Path, data: bytes = VOCAB) -> FileStore:
    store = FileStore(root)
    store.put(f"vocab/ir/{VERSION}/vocab.json", data)
    store.put(f"vocab/ir/{VERSION}/manifest.json", json.dumps({"sha256": hashlib.sha256(VOCAB).hexdigest()}).encode())
    store.put("vocab/ir/latest.json", json.dumps({"kind": "ir", "version": VERSION}).encode())
    return store


def test_a_truncated_latest_is_no_start(tmp_path: Path) -> None:
    warm = from_latest(_store(tmp_path / "intact"), "ir", ENTITIES, 2)
    assert isinstance(warm, WarmStart) and warm.record["from"] == VERSION and warm.known.all()
    with pytest.raises(CorruptObject, match=rf"^vocab/ir/{VERSION}/vocab\.json in file://.* does not match its "
                                            r"manifest's sha256 \(`mlgo-farm store verify`"):
        from_latest(_store(tmp_path, VOCAB[:40]), "ir", ENTITIES, 2)


@pytest.mark.parametrize("pointer", ['{"version": ' + "1" * 5001 + "}", "[" * 100_000 + "]" * 100_000])
def test_a_hostile_pointer_is_one_line(tmp_path: Path, pointer: str) -> None:
    store = _store(tmp_path)
    store.put("vocab/ir/latest.json", pointer.encode())
    with pytest.raises(CorruptObject) as e:
        from_latest(store, "ir", ENTITIES, 2)
    assert str(e.value).startswith("vocab/ir/latest.json in file://") and "\n" not in str(e.value)
