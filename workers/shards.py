"""Shards: one corpus-and-triplets run split over several machines, merged into the very dataset one machine makes.

Membership is a property of the module name alone: module `name` belongs to shard i of N when the
first 8 bytes of sha256(name), as a number, are i-1 modulo N. Every shard computes its share
without asking anyone, whatever the scheduling, and the corpus step (which translation units to
compile) and the triplets step (which modules to run) agree on it, since a module is named after
its source. Shares are even in count (LLVM's 2,784 TUs over 4 shards: about 696 each); not in
size, which a hash cannot know before compiling.

A shard's *part* is a directory: `triplets.txt` (its unique triplet lines, sorted),
`entity2id.txt` (LLVM's entity map as its run read it; MIR: from its first module by name that
LLVM parsed) and `shard.json`: what the merged manifest needs and a shard alone cannot finish:
per module the sha256 of its bitcode (the corpus digest is over all modules), skips with stage
and reason, partial modules, the raw count, MAX_RELATION, the plan, LLVM, the corpus's facts,
and the sha256 of each file.

Parts hand over through the object store, never a queue of the farm's own:
`datasets/shards/{run}/{i}-of-{N}/`, the manifest written last and every file read back, so a
shard whose build died before the end has no manifest and the merge names it as missing. The
run id comes from the Buildbot build that fans out; the merge reads exactly `{i}-of-{N}` for
i = 1..N of its run and checks that each manifest says so, so parts of other runs or of another N
never mix in, and a part whose bytes changed is refused by its checksum.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from farm import jsonio
from farm.atomic import atomic_dir
from farm.errors import InputError, StoreError
from farm.jsonio import load_file
from farm.objectstore import MissingObject, ObjectStore
from workers import corpusdir as corpus_mod
from workers.corpusdir import MAX_SHARDS, Shard, shard_of  # membership: a property of the name

FORMAT = 1
PART_MANIFEST = "shard.json"
TRIPLETS = "triplets.txt"
ENTITIES = "entity2id.txt"
PREFIX = "datasets/shards"
#: A run id is one key segment of the store: letters, digits, '.', '_', '-'.
RUN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: Facts every part of one run must share: they are the merged manifest's, so a difference is a mix-up.
SHARED = ("kind", "plan", "llvm", "corpus")


def recorded_shard(corpus_dir: Path) -> str | None:
    """The shard a corpus was compiled as (`corpus ... --shard I/N`), or None for a whole corpus."""
    data = load_file(Path(corpus_dir) / corpus_mod.DESCRIPTION)
    return str(data["shard"]) if isinstance(data, dict) and data.get("shard") else None


def share(corpus: corpus_mod.Corpus, shard: Shard | None) -> corpus_mod.Corpus:
    """The modules and corpus-stage skips of `corpus` that a run as `shard` takes (None: a whole run).

    A corpus compiled as that very shard is all of it; a whole corpus (an embedded-bitcode build is
    extracted whole) is cut by name here. A shard's corpus in a whole run, or in another shard's,
    would silently leave modules out, and is refused.
    """
    recorded = recorded_shard(corpus.path)
    if recorded and shard is None:
        raise InputError(f"corpus {corpus.path} is shard {recorded} of a split corpus: run the triplets with "
                         f"--shard {recorded}, then merge")
    if recorded and recorded != str(shard):
        raise InputError(f"corpus {corpus.path} is shard {recorded}, not {shard}")
    if shard is None or recorded:
        return corpus
    return replace(corpus, modules=[m for m in corpus.modules if shard.owns(m.name)],
                   skipped=[s for s in corpus.skipped if shard.owns(s["module"])])


def check_run(run: str) -> str:
    if not RUN.fullmatch(run):
        raise InputError(f"run id {run!r}: use letters, digits, '.', '_' and '-' (at most 128)")
    return run


def run_prefix(run: str) -> str:
    return f"{PREFIX}/{check_run(run)}/"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_part(out_dir: Path, shard: Shard, facts: dict[str, Any], unique: Iterable[bytes],
               entities: bytes | None) -> Path:
    """Write a shard's part atomically (the same inputs give the same bytes)."""
    files = {TRIPLETS: b"".join(line + b"\n" for line in sorted(unique))}
    if entities is not None:
        files[ENTITIES] = entities
    manifest = {"format": FORMAT, "shard": str(shard), **facts, "files": {n: _sha(d) for n, d in files.items()}}
    with atomic_dir(out_dir, PART_MANIFEST) as tmp:
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        (tmp / PART_MANIFEST).write_text(jsonio.dumps(manifest))
    return Path(out_dir)


def _load_json(data: bytes, where: str) -> dict[str, Any]:
    try:
        value = jsonio.loads(data, where)
    except InputError as e:  # the farm's one JSON reader: too deep, too long a number, not UTF-8 too
        raise InputError(f"{where} is not valid JSON ({str(e).removeprefix(f'{where}: ')}): a corrupt shard") from None
    if not isinstance(value, dict) or value.get("format") != FORMAT or not isinstance(value.get("files"), dict):
        raise InputError(f"{where} is not a shard manifest of format {FORMAT}: a corrupt shard")
    return value


def put_part(part_dir: Path, store: ObjectStore, run: str) -> tuple[Shard, str]:
    """Upload a part under its run: files, then the manifest (with the run id), each read back and checked."""
    part_dir = Path(part_dir)
    if not (part_dir / PART_MANIFEST).is_file():
        raise InputError(f"{part_dir} is not a shard part: no {PART_MANIFEST} (was it made with --shard?)")
    manifest = _load_json((part_dir / PART_MANIFEST).read_bytes(), str(part_dir / PART_MANIFEST))
    shard = Shard.parse(str(manifest.get("shard")))
    prefix = run_prefix(run) + shard.key
    uploads = {}
    for name, digest in sorted(manifest["files"].items()):
        data = (part_dir / name).read_bytes()
        if _sha(data) != digest:
            raise InputError(f"{part_dir}/{name} does not match its checksum in {PART_MANIFEST}: not uploaded")
        uploads[name] = data
    uploads[PART_MANIFEST] = jsonio.dumps({**manifest, "run": run}).encode()
    for name, data in uploads.items():  # insertion order: the manifest last
        store.put(f"{prefix}/{name}", data, "application/json" if name.endswith(".json") else "text/plain")
        if _sha(store.get(f"{prefix}/{name}")) != _sha(data):
            raise StoreError(f"uploaded {prefix}/{name} does not read back as written")
    return shard, prefix


@dataclass
class Part:
    shard: Shard
    manifest: dict[str, Any]
    triplets: bytes
    entities: bytes | None


def fetch_parts(store: ObjectStore, run: str, count: int) -> list[Part]:
    """All `count` parts of `run`, checked; one-line errors for a missing, foreign or corrupt part."""
    if not 1 <= count <= MAX_SHARDS:
        raise InputError(f"shard count {count}: use 1..{MAX_SHARDS}")
    prefix = run_prefix(run)
    keys = store.list(prefix)
    wanted = [Shard(i, count) for i in range(1, count + 1)]
    folders = {k[len(prefix):].split("/", 1)[0] for k in keys}
    foreign = sorted(folders - {s.key for s in wanted})
    if foreign:
        raise InputError(f"run {run} also holds shard folder(s) {', '.join(foreign)} of another split than "
                         f"{count} shards: refusing to mix them; nothing merged")
    missing = [s for s in wanted if f"{prefix}{s.key}/{PART_MANIFEST}" not in keys]
    if missing:
        raise InputError(f"run {run}: shard {', '.join(map(str, missing))} missing (no {prefix}{missing[0].key}/"
                         f"{PART_MANIFEST}): its build failed or its worker died before uploading; nothing merged")
    return [_fetch(store, prefix, run, s) for s in wanted]


def _fetch(store: ObjectStore, prefix: str, run: str, shard: Shard) -> Part:
    where = f"{prefix}{shard.key}/"
    m = _load_json(store.get(where + PART_MANIFEST), where + PART_MANIFEST)
    if m.get("run") != run or m.get("shard") != str(shard):
        raise InputError(f"{where}{PART_MANIFEST} says run {m.get('run')!r}, shard {m.get('shard')!r}: "
                         f"not shard {shard} of run {run}; nothing merged")
    files = {}
    for name in (TRIPLETS, ENTITIES):
        digest = m["files"].get(name)
        if digest is None:
            continue
        try:
            files[name] = store.get(where + name)
        except MissingObject:
            raise InputError(f"{where}{name} is missing though its manifest lists it: a corrupt shard") from None
        if _sha(files[name]) != digest:
            raise InputError(f"{where}{name} does not match its checksum in {PART_MANIFEST}: a corrupt shard; "
                             f"nothing merged")
    if TRIPLETS not in files:
        raise InputError(f"{where}{PART_MANIFEST} lists no {TRIPLETS}: a corrupt shard")
    strays = [n for n, _ in m.get("modules", []) if not shard.owns(n)]
    if strays:
        raise InputError(f"shard {shard} of run {run} holds module {strays[0]!r}, which belongs to shard "
                         f"{shard_of(strays[0], shard.count)}/{shard.count}: not split by this rule; nothing merged")
    return Part(shard, m, files[TRIPLETS], files.get(ENTITIES))


@dataclass
class Combined:
    """The parts of one run as one unsharded run would have seen them."""

    facts: dict[str, Any]  # kind, plan, llvm, corpus (as the parts share them)
    modules: list[tuple[str, str]]  # (name, sha256 of bitcode), by name
    unique: set[bytes]
    raw: int
    max_relation: int
    skipped: list[dict[str, str]]
    partial: list[dict[str, str]]
    entities: bytes | None


def combine(parts: list[Part]) -> Combined:
    """Union of the parts: MAX_RELATION the maximum, triplets deduplicated, lists and counts joined."""
    first = parts[0]
    for p in parts[1:]:
        for key in SHARED:
            if p.manifest.get(key) != first.manifest.get(key):
                raise InputError(f"shard {p.shard} differs from shard {first.shard} in {key} ({p.manifest.get(key)!r}"
                                 f" != {first.manifest.get(key)!r}): not one run; nothing merged")
    out = Combined({k: first.manifest.get(k) for k in SHARED}, [], set(), 0, -1, [], [], None)
    entity_maps = {}
    for p in parts:
        m = p.manifest
        out.modules += [(str(n), str(h)) for n, h in m.get("modules", [])]
        out.unique.update(line for line in p.triplets.split(b"\n") if line)
        out.raw += int(m.get("raw", 0))
        out.max_relation = max(out.max_relation, int(m.get("max_relation", -1)))
        out.skipped += m.get("skipped", [])
        out.partial += m.get("partial", [])
        if p.entities is not None:
            entity_maps[m.get("entities_from") or ""] = p.entities
    out.modules.sort()
    if len({e for k, e in entity_maps.items() if not k}) > 1:
        raise InputError(f"the shards of {parts[0].manifest.get('run')} read different IR entity maps from one "
                         f"LLVM: a corrupt shard; nothing merged")
    if entity_maps:  # IR: the one map every part read; MIR: the map of the first module by name, as one run takes it
        out.entities = entity_maps[min(entity_maps)]
    return out


def merge_run(store: ObjectStore, run: str, count: int) -> Combined:
    return combine(fetch_parts(store, run, count))


def drop_run(store: ObjectStore, run: str) -> int:
    """Delete every part of `run` (after the merged dataset is published, or the run failed); how many objects."""
    keys = store.list(run_prefix(run))
    for k in keys:
        store.delete(k)
    return len(keys)
