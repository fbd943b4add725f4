"""Triplet datasets as the vocabulary trainer reads them: a local directory or one in the object store.

The layout is the one `mlgo-farm triplets` writes (OpenKE): `train2id.txt` (count, then
`head<TAB>tail<TAB>relation` with LLVM's numeric ids), `entity2id.txt` and `relation2id.txt`
(count, then `name<TAB>id`, ids 0..n-1 in order) and `manifest.json`. Every malformed line is
reported with its file and line number.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from farm import jsonio
from farm.artifacts.kinds import DATASET
from farm.atomic import atomic_dir
from farm.embeddings import KINDS
from farm.embeddings import check_kind as _check_kind
from farm.errors import InputError, NothingPublished
from farm.locks import made_once
from farm.objectstore import MissingObject, ObjectStore

FILES = DATASET.files
MANIFEST = "manifest.json"
#: Lineage fields of the manifest's "llvm" object that go into the vocabulary's manifest.
LLVM_FIELDS = ("llvm_version", "llvm_commit", "clang")
_DATASET_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_kind(kind: str) -> str:
    return _check_kind(kind, "vocabulary kind")


@dataclass(frozen=True)
class Dataset:
    """A parsed dataset; `triples` keeps LLVM's (head, tail, relation) column order."""

    path: Path
    kind: str
    id: str
    triples: np.ndarray
    entities: list[str]
    relations: list[str]
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def trained_entities(self) -> np.ndarray:
        """Ids of the entities that occur in at least one triple."""
        return np.unique(self.triples[:, :2])


def _lines(path: Path) -> list[str]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise InputError(f"{path.parent} is not a dataset: no {path.name}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text file") from None
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    return text.splitlines()


def _count_line(path: Path, lines: list[str]) -> int:
    if not lines or not lines[0].strip():
        raise InputError(f"{path}: empty file (expected a count on the first line)")
    try:
        n = int(lines[0].strip())
    except ValueError:
        raise InputError(f"{path}:1: count line {lines[0][:40]!r} is not a number") from None
    if n < 0:
        raise InputError(f"{path}:1: negative count {n}")
    body = [ln for ln in lines[1:] if ln.strip()]
    if len(body) != n:
        raise InputError(f"{path}: count line says {n} but the file has {len(body)} entries")
    return n


def read_names(path: Path) -> list[str]:
    """`name<TAB>id` lines whose ids are exactly 0..n-1 in order."""
    lines = _lines(path)
    _count_line(path, lines)
    names: list[str] = []
    for no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0]:
            raise InputError(f"{path}:{no}: expected 'name<TAB>id', got {line[:60]!r}")
        if parts[1].strip() != str(len(names)):
            raise InputError(f"{path}:{no}: id {parts[1].strip()!r} out of order (expected {len(names)})")
        names.append(parts[0])
    if len(set(names)) != len(names):
        raise InputError(f"{path}: duplicate names")
    return names


def read_triples(path: Path, n_entities: int, n_relations: int) -> np.ndarray:
    """train2id.txt as an (n, 3) int64 array in (head, tail, relation) order, every id checked."""
    lines = _lines(path)
    n = _count_line(path, lines)
    if n == 0:
        raise InputError(f"{path}: empty dataset (no triplets)")
    rows = np.empty((n, 3), dtype=np.int64)
    i = 0
    for no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 3:
            raise InputError(f"{path}:{no}: expected 3 columns 'head tail relation', got {len(parts)}")
        try:
            h, t, r = (int(p) for p in parts)
        except ValueError:
            raise InputError(f"{path}:{no}: non-numeric id in {line[:60]!r}") from None
        for what, value, bound in (("head", h, n_entities), ("tail", t, n_entities), ("relation", r, n_relations)):
            if not 0 <= value < bound:
                raise InputError(f"{path}:{no}: {what} id {value} out of range 0..{bound - 1}")
        rows[i] = (h, t, r)
        i += 1
    return rows


def _check_manifest(path: Path, manifest: Any) -> tuple[str, str]:
    """Every field the trainer uses has the right type (before any training); returns (kind, id)."""
    where = path / MANIFEST
    if not isinstance(manifest, dict):
        raise InputError(f"{where}: not a JSON object")
    kind = manifest.get("kind")
    if not isinstance(kind, str):
        raise InputError(f"{where}: \"kind\" must be a string, got {kind!r}")
    check_kind(kind)
    dataset_id = manifest.get("id")
    if not isinstance(dataset_id, str) or not _DATASET_ID.match(dataset_id):
        raise InputError(f"{where}: missing or invalid dataset id {dataset_id!r}")
    files = manifest.get("files")
    if files is not None and not (
        isinstance(files, dict) and all(isinstance(v, str) for v in files.values())
    ):
        raise InputError(f"{where}: \"files\" must be an object of file name -> sha256 string")
    llvm = manifest.get("llvm")
    if llvm is not None and not isinstance(llvm, dict):
        raise InputError(f"{where}: \"llvm\" must be an object, got {type(llvm).__name__}")
    for key in LLVM_FIELDS:
        value = (llvm or {}).get(key)
        if value is not None and not isinstance(value, str):
            raise InputError(f"{where}: \"llvm.{key}\" must be a string or null, got {type(value).__name__}")
    return kind, dataset_id


def _check_files(path: Path, files: dict[str, str]) -> None:
    for name, digest in files.items():
        if name not in FILES:
            continue
        try:
            data = (path / name).read_bytes()
        except FileNotFoundError:
            raise InputError(f"{path} is not a complete dataset: {name}, listed in its manifest, is missing") from None
        except OSError as e:
            raise InputError(f"cannot read {path / name}: {e.strerror}") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise InputError(f"{path / name} does not match the checksum in its manifest")


def load_dataset(path: Path, kind: str | None = None) -> Dataset:
    """Parse and check a dataset directory; `kind`, when given, must match its manifest."""
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"dataset {path} is not a directory")
    try:
        manifest = jsonio.loads((path / MANIFEST).read_bytes(), str(path / MANIFEST))
    except FileNotFoundError:
        raise InputError(f"{path} is not a dataset: no {MANIFEST}") from None
    except OSError as e:
        raise InputError(f"cannot read {path / MANIFEST}: {e.strerror}") from None
    mkind, dataset_id = _check_manifest(path, manifest)
    if kind is not None and check_kind(kind) != mkind:
        raise InputError(f"dataset {path} is a {mkind} dataset, not {kind}")
    _check_files(path, manifest.get("files") or {})
    entities = read_names(path / "entity2id.txt")
    relations = read_names(path / "relation2id.txt")
    if not entities or not relations:
        raise InputError(f"dataset {path} lists no entities or no relations")
    triples = read_triples(path / "train2id.txt", len(entities), len(relations))
    return Dataset(path, mkind, dataset_id, triples, entities, relations, manifest)


def check_dataset_ref(ref: str) -> str:
    """`latest` or a plain dataset id (what the store can hold)."""
    if ref != "latest" and (not _DATASET_ID.match(ref) or ".." in ref):
        raise InputError(f"invalid dataset id {ref!r} (and no such directory)")
    return ref


def fetch_dataset(store: ObjectStore, kind: str, ref: str, cache_dir: Path) -> Path:
    """Download dataset `ref` (an id or `latest`) of `kind` into `cache_dir/kind/id` once; returns the path."""
    check_kind(kind)
    if ref == "latest":
        try:
            pointer = jsonio.loads(store.get(DATASET.latest_key(kind)), f"{DATASET.latest_key(kind)} in {store.url}")
        except MissingObject:
            raise NothingPublished(f"no {kind} dataset has been published to {store.url}") from None
        ref = str(pointer.get("id", "")) if isinstance(pointer, dict) else ""
    if ref == "latest" or not _DATASET_ID.match(ref) or ".." in ref:
        raise InputError(f"invalid dataset id {ref!r}")
    target = Path(cache_dir) / kind / ref

    def download() -> None:
        prefix = DATASET.prefix(kind, ref)
        try:
            blobs = {name: store.get(f"{prefix}/{name}") for name in (*FILES, MANIFEST)}
        except MissingObject:
            raise InputError(f"dataset {ref} of kind {kind} is not in {store.url}") from None
        with atomic_dir(target, MANIFEST) as tmp:
            for name, data in blobs.items():
                (tmp / name).write_bytes(data)

    return made_once(target, MANIFEST, download)  # a complete copy is never replaced, so readers need no lock


def dataset_kind(ref: str, kind: str | None) -> str:
    """The kind of a store reference: `kind` if given, else the prefix of an id like `ir-0123...`."""
    if kind is not None:
        return check_kind(kind)
    prefix = ref.split("-", 1)[0]
    if ref != "latest" and prefix in KINDS:
        return prefix
    raise InputError(f"dataset {ref}: give --kind ({' or '.join(KINDS)}) to look it up in the store")


def resolve_dataset(ref: str, kind: str | None, store: ObjectStore | None, cache_dir: Path) -> Dataset:
    """A local directory, or else a dataset id / `latest` in the object store."""
    if Path(ref).is_dir():
        return load_dataset(Path(ref), kind)
    if "/" in ref or Path(ref).exists():
        raise InputError(f"dataset {ref} is not a directory, nor a valid dataset id")
    if store is None:
        raise InputError(f"dataset {ref} is not a directory (and there is no store to look it up in)")
    kind = dataset_kind(ref, kind)
    return load_dataset(fetch_dataset(store, kind, ref, cache_dir), kind)
