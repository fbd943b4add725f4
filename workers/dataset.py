"""The triplet dataset on disk (OpenKE layout plus a manifest) and its publication.

Files: `train2id.txt` (count, then unique sorted `head<TAB>tail<TAB>relation`),
`entity2id.txt` and `relation2id.txt` (count, then `name<TAB>id`), `manifest.json`. The id is
derived from the three text files, so the same corpus and seed give the same id.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from farm.atomic import atomic_dir
from farm.errors import FarmError, InputError
from farm.store import ObjectStore

FORMAT = 1
FILES = ("train2id.txt", "entity2id.txt", "relation2id.txt")
MANIFEST = "manifest.json"


@dataclass
class DatasetSummary:
    kind: str
    llvm: dict[str, Any]
    corpus: dict[str, Any]
    modules_used: int
    skipped: list[dict[str, str]]
    partial: list[dict[str, str]]
    raw: int
    max_relation: int
    opt_levels: list[str]
    sample: int | None
    seed: int


def relation_names(kind: str, max_relation: int) -> list[str]:
    """LLVM's relation order: IR `Type, Next, Arg0…`; MIR `Next, Arg0…`."""
    fixed = ["Type", "Next"] if kind == "ir" else ["Next"]
    return [*fixed, *(f"Arg{i}" for i in range(max_relation + 1 - len(fixed)))]


def _entity_count(entities: bytes) -> int:
    first = entities.split(b"\n", 1)[0]
    try:
        return int(first)
    except ValueError:
        raise FarmError(f"llvm-ir2vec entities: unexpected first line {first[:40]!r}") from None


def write_dataset(out_dir: Path, unique: set[bytes], entities: bytes, s: DatasetSummary) -> Path:
    """Write the dataset atomically; returns its directory."""
    triples = sorted(tuple(map(int, line.split(b"\t"))) for line in unique)
    if any(len(t) != 3 for t in triples):
        raise FarmError("llvm-ir2vec produced a triplet line without three fields")
    n_entities = _entity_count(entities)
    worst = max(max(h, t) for h, t, _ in triples)
    if worst >= n_entities:
        raise FarmError(f"triplet entity id {worst} outside the {n_entities} entities LLVM lists")
    relations = relation_names(s.kind, s.max_relation)
    texts = {
        "train2id.txt": f"{len(triples)}\n" + "".join(f"{h}\t{t}\t{r}\n" for h, t, r in triples),
        "entity2id.txt": entities.decode().rstrip("\n") + "\n",
        "relation2id.txt": f"{len(relations)}\n" + "".join(f"{n}\t{i}\n" for i, n in enumerate(relations)),
    }
    digest = hashlib.sha256()
    for name in FILES:
        digest.update(name.encode() + b"\0" + texts[name].encode())
    dataset_id = f"{s.kind}-{digest.hexdigest()[:16]}"
    manifest = {
        "format": FORMAT,
        "id": dataset_id,
        **{k: v for k, v in asdict(s).items()},
        "triplets": {"raw": s.raw, "unique": len(triples)},
        "entities": n_entities,
        "relations": len(relations),
        "files": {n: hashlib.sha256(texts[n].encode()).hexdigest() for n in FILES},
    }
    for key in ("raw",):
        manifest.pop(key)
    with atomic_dir(out_dir, MANIFEST) as tmp:
        for name, text in texts.items():
            (tmp / name).write_text(text)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return Path(out_dir)


def read_manifest(dataset_dir: Path) -> dict[str, Any]:
    path = Path(dataset_dir) / MANIFEST
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"{dataset_dir} is not a dataset: no {MANIFEST}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: invalid JSON: {e}") from None


def publish(dataset_dir: Path, store: ObjectStore) -> str:
    """Upload files, verify them, then move `datasets/{kind}/latest.json`; returns the id."""
    m = read_manifest(dataset_dir)
    kind, dataset_id = m["kind"], m["id"]
    prefix = f"datasets/{kind}/{dataset_id}"
    for name in (*FILES, MANIFEST):
        data = (Path(dataset_dir) / name).read_bytes()
        if name in m["files"] and hashlib.sha256(data).hexdigest() != m["files"][name]:
            raise InputError(f"{dataset_dir}/{name} does not match its manifest checksum")
        store.put(f"{prefix}/{name}", data, "text/plain" if name.endswith(".txt") else "application/json")
    for name in FILES:
        if hashlib.sha256(store.get(f"{prefix}/{name}")).hexdigest() != m["files"][name]:
            raise FarmError(f"uploaded {prefix}/{name} does not match its checksum; latest not moved")
    pointer = {"kind": kind, "id": dataset_id, "manifest": m}
    store.put(f"datasets/{kind}/latest.json", json.dumps(pointer, indent=2, sort_keys=True).encode(),
              "application/json")
    return dataset_id
