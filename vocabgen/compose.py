"""MIR entities the triplets never mention, composed from their parts instead of given their section's mean.

A MIR vocabulary has 7,158 entities and no corpus mentions most of them. An opcode or a register class that
shares a part with mentioned ones (vocabgen/opparts.py: base mnemonic, width, operand form, vector encoding;
vocabgen/regparts.py: register file, width, qualifiers, and the class itself, shared by the physical and the
virtual register section) gets a vector from its parts: the parts are trained with the dataset (one `HasX`
relation per kind of part, part entities after LLVM's, never written into `vocab.json`), and `compose` reads the
entity off them. Everything else stays filler and the manifest says why (`unreachable`: the entities no x86 code
the farm reads can bring, vocabgen/data/unreachable.toml).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from farm.errors import InputError
from vocabgen import opparts, regparts
from vocabgen.dataset import Dataset

if TYPE_CHECKING:
    from vocabgen.training import TrainResult
    from vocabgen.warm import WarmStart

#: The kinds whose entities get parts: x86 MIR. IR opcodes are few and all trained.
PART_KINDS = frozenset({"mir"})
#: The sections whose entities get parts, and the relations of each (in this order after the dataset's own).
SECTIONS = {"Opcodes": opparts.RELATIONS, "PhysicalRegisters": regparts.RELATIONS,
            "VirtualRegisters": regparts.RELATIONS}
UNREACHABLE = Path(__file__).parent / "data" / "unreachable.toml"

NOT_AN_OPCODE = "not an opcode: it has no parts to compose it from"
NO_TRAINED_PART = "an opcode none of whose parts (vocabgen/opparts.py) belongs to an opcode the triplets mention"
NO_TRAINED_CLASS = ("a register class neither trained in the other register section nor of a register file "
                    "(vocabgen/regparts.py) any mentioned class has")


@functools.cache
def unreachable(path: Path = UNREACHABLE) -> dict[str, dict[str, str]]:
    """{section: {key: why no x86 code the farm reads brings it}}; a bad table, key or value named in one line.

    Read by farm/datafile.py, the farm's one TOML reader, so hostile text (not UTF-8, nested past the recursion
    limit, an integer of thousands of digits) is the same one line there as in every other data file."""
    from farm import datafile
    from farm.embeddings import SECTIONS

    where = f"unreachable table {path}"
    data = datafile.read(path, "unreachable table")
    for section, keys in data.items():
        if section not in SECTIONS["mir"]:
            raise InputError(f"{where}: [{section}] is not a MIR section ({', '.join(SECTIONS['mir'])})")
        if not isinstance(keys, dict):
            raise InputError(f"{where}: [{section}] must be a table of key = \"reason\"")
        for key, why in keys.items():
            if not isinstance(why, str) or not why.strip():
                raise InputError(f"{where}: [{section}] {key} must be a non-empty reason")
    return data


@dataclass(frozen=True)
class Parts:
    """A dataset with its entities' parts: part entities after LLVM's, `HasX` relations after the dataset's.

    `ds` holds the dataset's triples plus one (entity, HasX, X:value) triple per part of every entity the dataset
    mentions; `parts[i]` lists (relation id, part entity id) of LLVM entity i, only parts that are entities of `ds`
    (a part no mentioned entity has is not trained, so nothing can be composed from it).
    """

    ds: Dataset
    n_entities: int  # LLVM's entities are rows 0..n_entities-1
    n_relations: int
    parts: dict[int, list[tuple[int, int]]]
    names: dict[int, list[str]]  # every part of every entity that has parts, by name

    @property
    def part_triples(self) -> int:
        return len(self.ds.triples) - len(self.base_triples)

    @property
    def base_triples(self) -> np.ndarray:
        return self.ds.triples[self.ds.triples[:, 2] < self.n_relations]

    def warm(self, warm: WarmStart | None) -> WarmStart | None:
        """`warm` over the extended rows: part entities start at random (they are never published)."""
        if warm is None:
            return None
        from vocabgen.warm import WarmStart

        extra = len(self.ds.entities) - self.n_entities
        return WarmStart(np.vstack([warm.vectors, np.zeros((extra, warm.vectors.shape[1]), warm.vectors.dtype)]),
                         np.concatenate([warm.known, np.zeros(extra, bool)]), warm.record)


def _decomposed(ds: Dataset) -> dict[int, list[tuple[str, str]]]:
    """(relation, part entity) of every entity of a part section, by row."""
    from vocabgen.layout import placement

    rows: dict[str, list[int]] = {}
    for i, (section, _) in enumerate(placement(ds.kind, ds.entities)):
        if section in SECTIONS:
            rows.setdefault(section, []).append(i)
    out: dict[int, list[tuple[str, str]]] = {}
    opcodes = rows.get("Opcodes", [])
    names = opparts.decompose([ds.entities[i] for i in opcodes])  # the whole list: siblings decide elements
    out.update({i: names[ds.entities[i]] for i in opcodes})
    registers = rows.get("PhysicalRegisters", []) + rows.get("VirtualRegisters", [])
    names = regparts.decompose(ds.entities[i] for i in registers)
    out.update({i: names[ds.entities[i]] for i in registers})
    return out


def with_parts(ds: Dataset, mentioned: np.ndarray | None = None) -> Parts:
    """`ds` with part triplets for the entities in `mentioned` (default: those its triples mention)."""
    decomposed = _decomposed(ds)
    mentioned_set = set((ds.trained_entities if mentioned is None else mentioned).tolist())
    used = {rel for i, ps in decomposed.items() if i in mentioned_set for rel, _ in ps}
    relations = [r for r in dict.fromkeys(r for rels in SECTIONS.values() for r in rels) if r in used]
    rel_id = {r: len(ds.relations) + k for k, r in enumerate(relations)}
    part_id: dict[str, int] = {}
    rows = []
    for i, ps in decomposed.items():
        if i not in mentioned_set:
            continue
        for rel, part in ps:
            pid = part_id.setdefault(part, len(ds.entities) + len(part_id))
            rows.append((i, pid, rel_id[rel]))
    triples = np.concatenate([ds.triples, np.asarray(rows, dtype=np.int64).reshape(-1, 3)])
    ext = dataclasses.replace(ds, triples=triples, entities=[*ds.entities, *part_id],
                              relations=[*ds.relations, *relations])
    parts = {i: [(rel_id[rel], part_id[part]) for rel, part in ps if part in part_id] for i, ps in decomposed.items()}
    names = {i: [part for _, part in ps] for i, ps in decomposed.items()}
    return Parts(ext, len(ds.entities), len(ds.relations), parts, names)


def compose(vectors: np.ndarray, relations: np.ndarray, parts: list[tuple[int, int]], norm: int = 1) -> np.ndarray:
    """The vector TransE's own geometry gives an entity from its trained parts.

    Training put every (entity o, HasX, part p) triple at `o + r_HasX ~ p`, so each part says `o ~ p - r`.
    TransE's score is -||o + r - p|| in the training's norm: the o that best fits all parts at once minimises
    sum_k ||o - (p_k - r_k)||, which for L1 (the farm's recipe, `norm` 1) is the coordinate-wise median of
    the p_k - r_k, and for L2 (squared) their mean. pykeen's TransE keeps every entity vector at unit L2 norm
    (its entity constrainer), so the result is projected onto that sphere, like every trained vector; with
    one part it is that part's p - r, normalised.
    """
    rel = np.fromiter((r for r, _ in parts), dtype=np.int64)
    ent = np.fromiter((e for _, e in parts), dtype=np.int64)
    diffs = vectors[ent].astype(np.float64) - relations[rel].astype(np.float64)
    v = np.median(diffs, axis=0) if norm == 1 else diffs.mean(axis=0)
    return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(vectors.dtype)


def _composable(ext: Parts, i: int, section: str) -> list[tuple[int, int]]:
    """The trained parts entity `i` is composed from; none when they do not identify it (a register class whose
    only trained parts are qualifiers such as `NOSP`, which every class of a file may have)."""
    parts = ext.parts.get(i) or []
    if section == "Opcodes" or not parts:
        return parts
    names = {pid: ext.ds.entities[pid] for _, pid in parts}
    if any(names[pid].split(":", 1)[0] in regparts.IDENTIFYING for _, pid in parts):
        return parts
    return []


def compose_unseen(ext: Parts, result: TrainResult, vectors: np.ndarray, coverage: dict, trained: np.ndarray,
                   norm: int = 1) -> tuple[np.ndarray, dict, dict]:
    """Replace the filler vector of every entity the triplets never mention by the one `compose` gives.

    `vectors`/`coverage` are `layout.fill_unseen`'s (section means over trained entities only). Returns the
    vectors, the coverage with `composed` counts per section (the filler lists keep only what is still
    filler) and the manifest's `composition` record: relations, parts, and each filler entity's reason.
    """
    from vocabgen.layout import placement

    assert result.relations is not None
    out = vectors.copy()
    is_trained = np.zeros(ext.n_entities, dtype=bool)
    is_trained[trained] = True
    placed = placement(ext.ds.kind, ext.ds.entities[: ext.n_entities])
    known = unreachable()
    composed: dict[str, int] = {}
    composed_keys: dict[str, list[str]] = {}
    reasons: dict[str, dict[str, list[str]]] = {}
    for i, (section, key) in enumerate(placed):
        if is_trained[i]:
            continue
        parts = _composable(ext, i, section)
        if parts:
            out[i] = compose(result.vectors, result.relations, parts, norm)
            composed[section] = composed.get(section, 0) + 1
            composed_keys.setdefault(section, []).append(key)
            continue
        why = known.get(section, {}).get(key) or (
            NOT_AN_OPCODE if i not in ext.names else NO_TRAINED_PART if section == "Opcodes" else NO_TRAINED_CLASS)
        reasons.setdefault(section, {}).setdefault(why, []).append(key)
    cov = {}
    for section, c in coverage.items():
        filler = [k for why in reasons.get(section, {}).values() for k in why]
        keep = set(filler)
        cov[section] = {"trained": c["trained"], "composed": composed.get(section, 0), "total": c["total"],
                        "filler": [k for k in c["filler"] if k in keep],
                        # named, so that nothing derived is read as trained: a warm start does not start from a
                        # composed vector (vocabgen/warm.py), and a diff does not call its move drift
                        "composed_keys": composed_keys.get(section, [])}
    record = {
        "method": "opcode parts (vocabgen/opparts.py) and register class parts (vocabgen/regparts.py), composed as "
                  "in vocabgen/compose.py:compose",
        "formula": "normalize(median_k(part_k - HasX_k))" if norm == 1 else "normalize(mean_k(part_k - HasX_k))",
        "relations": ext.ds.relations[ext.n_relations:],
        "parts": len(ext.ds.entities) - ext.n_entities,
        "part_triplets": int(ext.part_triples),
        "filler_reasons": reasons,
    }
    return out, cov, record
