"""The triplet dataset on disk (OpenKE layout plus a manifest) and its publication (an artifact kind:
farm/artifacts/kinds.py `DATASET`, with an index and `latest` like vocabularies and policies).

Files: `train2id.txt` (count, then unique sorted `head<TAB>tail<TAB>relation`),
`entity2id.txt` and `relation2id.txt` (count, then `name<TAB>id`), `manifest.json`. The id is
derived from the three text files, so the same corpus and seed give the same id.

With predicate triplets (workers/predicates.py, the farm's extension), `relation2id.txt` ends
with `Predicate`, the id after LLVM's last relation, and the manifest's `predicates` says how
many compares were read and how many triplets they gave. The manifest's `entities_mentioned`
says, per vocabulary section, which entities the triplets mention: what a vocabulary trained on
the dataset can learn rather than fill.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from farm import jsonio
from farm.artifacts import DATASETS
from farm.artifacts.kinds import DATASET
from farm.atomic import atomic_dir
from farm.errors import FarmError, InputError
from farm.objectstore import ObjectStore
from workers.predicates import RELATION, entity_ids, triplet_lines

FORMAT = 1
FILES = DATASET.files
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
    march: list[str] = field(default_factory=list)
    predicates: dict[str, Any] | None = None  # {"enabled", "compares"} when predicate triplets are on


def relation_names(kind: str, max_relation: int, predicates: bool = False) -> list[str]:
    """LLVM's relation order: IR `Type, Next, Arg0…`; MIR `Next, Arg0…`; then the farm's `Predicate`, if any."""
    fixed = ["Type", "Next"] if kind == "ir" else ["Next"]
    names = [*fixed, *(f"Arg{i}" for i in range(max_relation + 1 - len(fixed)))]
    return [*names, RELATION] if predicates else names


def mentioned(kind: str, entities: bytes, triples: list[tuple[int, int, int]]) -> dict[str, Any] | None:
    """Per vocabulary section: how many of its entities the triplets mention, of how many, and which.

    None when the entity list is not laid out as LLVM's vocabulary (a hand-made dataset).
    """
    from farm.embeddings import placement

    names = [ln.rsplit("\t", 1)[0] for ln in entities.decode().splitlines()[1:] if ln]
    try:
        where = placement(kind, names)
    except FarmError:
        return None
    used = {e for h, t, _ in triples for e in (h, t)}
    out: dict[str, Any] = {}
    for i, (section, key) in enumerate(where):
        s = out.setdefault(section, {"count": 0, "total": 0, "entities": []})
        s["total"] += 1
        if i in used:
            s["count"] += 1
            s["entities"].append(key)
    return out


def _entity_count(entities: bytes) -> int:
    first = entities.split(b"\n", 1)[0]
    try:
        return int(first)
    except ValueError:
        raise FarmError(f"llvm-ir2vec entities: unexpected first line {first[:40]!r}") from None


def write_dataset(out_dir: Path, unique: set[bytes], entities: bytes, s: DatasetSummary,
                  predicate_pairs: set[bytes] | None = None) -> Path:
    """Write the dataset atomically; returns its directory.

    `predicate_pairs` (names, as modules give them) become triplets under `Predicate`, whose id is
    `max_relation + 1`: one past the last relation LLVM emitted anywhere in the dataset, so a
    sharded run's merge gives the same id as one run.
    """
    extra: set[bytes] = set()
    if s.predicates is not None and predicate_pairs:
        extra = triplet_lines(predicate_pairs, entity_ids(entities), s.max_relation + 1)
        s = replace(s, predicates={**s.predicates, "relation": s.max_relation + 1, "triplets": len(extra)})
    elif s.predicates is not None:
        s = replace(s, predicates={**s.predicates, "relation": None, "triplets": 0})
    triples = sorted(tuple(map(int, line.split(b"\t"))) for line in unique | extra)
    if any(len(t) != 3 for t in triples):
        raise FarmError("llvm-ir2vec produced a triplet line without three fields")
    n_entities = _entity_count(entities)
    worst = max(max(h, t) for h, t, _ in triples)
    if worst >= n_entities:
        raise FarmError(f"triplet entity id {worst} outside the {n_entities} entities LLVM lists")
    relations = relation_names(s.kind, s.max_relation, bool(extra))
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
        "entities_mentioned": mentioned(s.kind, entities, triples),
        "files": {n: hashlib.sha256(texts[n].encode()).hexdigest() for n in FILES},
    }
    for key in ("raw",):
        manifest.pop(key)
    with atomic_dir(out_dir, MANIFEST) as tmp:
        for name, text in texts.items():
            (tmp / name).write_text(text)
        (tmp / MANIFEST).write_text(jsonio.dumps(manifest))
    return Path(out_dir)


def read_manifest(dataset_dir: Path) -> dict[str, Any]:
    path = Path(dataset_dir) / MANIFEST
    try:
        return jsonio.loads(path.read_bytes(), str(path))
    except FileNotFoundError:
        raise InputError(f"{dataset_dir} is not a dataset: no {MANIFEST}") from None


def store_prefix(kind: str, dataset_id: str) -> str:
    """Where a published dataset's files are in the store (and on the dashboard, under `store/`)."""
    return DATASET.prefix(kind, dataset_id)


def publish(dataset_dir: Path, store: ObjectStore) -> str:
    """Check every file against its manifest, then publish through the datasets' handle (farm/artifacts/shelf.py):
    the three files, the manifest as written, `datasets/index.json`, then `datasets/{kind}/latest.json`;
    returns the id. A failure anywhere (a full disk, an outage) removes the objects this call created, so
    the store never holds dataset files without their manifest, nor a dataset `latest` does not name."""
    m = read_manifest(dataset_dir)
    files = {name: (Path(dataset_dir) / name).read_bytes() for name in (*FILES, MANIFEST)}
    for name, data in files.items():
        if name in m["files"] and hashlib.sha256(data).hexdigest() != m["files"][name]:
            raise InputError(f"{dataset_dir}/{name} does not match its manifest checksum")
    return DATASETS.publish(store, files, m, raw_manifest=files[MANIFEST])["version"]
