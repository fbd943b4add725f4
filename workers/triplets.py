"""Triplets from a corpus: per module `llvm-ir2vec triplets`, streamed, deduplicated, merged.

IR: each module optionally through `opt` at one or more levels, then `llvm-ir2vec triplets`.
MIR: `llc` to post-allocation MIR, then the farm's own MIR reader (workers/mirtriplets.py), which
prints what `llvm-ir2vec triplets --mode=mir` prints and does not crash on SSE code as LLVM 22.1.8's
does (a function it cannot read is left out and listed). Modules run on all
cores; each module's output is deduplicated as it arrives, so memory grows with the number of
unique triplets, never with the raw output. Failing modules are skipped with the reason.

Two farm options shape what each module contributes: compare-predicate triplets (IR, on by
default; workers/predicates.py says why LLVM's triplets need them) and march levels (every x86-64
module once per `-march` level; workers/march.py). Both are recorded in the manifest and in
every cache key.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import random
import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from farm.atomic import check_replaceable, check_writable
from farm.embeddings import check_kind
from farm.errors import InputError, ToolError
from farm.objectstore import ObjectStore
from farm.toolchain import Toolchain
from workers import corpus as corpus_mod
from workers import march as march_mod
from workers import predicates as predicates_mod
from workers import shards as shards_mod
from workers.dataset import MANIFEST, DatasetSummary, write_dataset
from workers.modulerun import ModuleTriplets, ir_module, mir_module
from workers.parallel import run_all

log = logging.getLogger(__name__)
#: The stage a left-out MIR function is tagged with (workers/modulerun.py): `name [stage] (why)`.
_STAGE = re.compile(r" \[(\w+)\] \(")

OPT_LEVELS = ("O0", "O1", "O2", "O3", "Os", "Oz")
DEFAULT_LEVELS = {"ir": ("O0", "O2"), "mir": ("O2",)}


def choose_levels(levels: Sequence[str], module: str, seed: int, sample: int | None) -> list[str]:
    """The opt levels for one module: all, or `sample` of them drawn with a per-module seed."""
    if not sample or sample >= len(levels):
        return list(levels)
    return sorted(random.Random(f"{seed}:{module}").sample(list(levels), sample))


@dataclass
class Merge:
    """All modules' triplets merged as they finish, plus what was skipped and why."""

    unique: set[bytes] = field(default_factory=set)
    raw: int = 0
    max_relation: int = -1
    skipped: list[dict[str, str]] = field(default_factory=list)
    partial: list[dict[str, str]] = field(default_factory=list)
    mir_files: dict[str, Path] = field(default_factory=dict)
    predicates: set[bytes] = field(default_factory=set)
    compares: int = 0

    def add(self, module: str, res: ModuleTriplets | str) -> None:
        if isinstance(res, str):
            self.skipped.append({"module": module, "reason": res, "stage": "triplets"})
            return
        self.unique |= res.lines
        self.predicates |= res.predicates
        self.compares += res.compares
        self.raw += res.raw
        self.max_relation = max(self.max_relation, res.max_relation)
        if res.lost_functions:
            more = " ..." if len(res.lost_functions) > 5 else ""
            stages = Counter(m[1] if (m := _STAGE.search(f)) else "?" for f in res.lost_functions)
            self.partial.append({"module": module, "reason": "MIR function(s) left out (at the [stage]): "
                                 + ", ".join(res.lost_functions[:5]) + more,
                                 "functions": len(res.lost_functions), "by_stage": dict(sorted(stages.items()))})
        if res.mir_file:
            self.mir_files[module] = res.mir_file


def check_levels(kind: str, opt_levels: Sequence[str] | None) -> tuple[str, ...]:
    """The optimization levels to run (the kind's default when none are given), or a one-line InputError."""
    check_kind(kind, "dataset kind")
    levels = tuple(opt_levels or DEFAULT_LEVELS[kind])
    bad = [lv for lv in levels if lv not in OPT_LEVELS]
    if bad:
        raise InputError(f"unknown optimization level {bad[0]!r}: use {', '.join(OPT_LEVELS)}")
    return levels


def check_predicates(kind: str, predicates: bool | None) -> bool:
    """Predicate triplets are on by default for IR; MIR has no compare predicates in its vocabulary."""
    if predicates and kind != "ir":
        raise InputError("predicate triplets exist for IR datasets only")
    return kind == "ir" if predicates is None else predicates


@functools.cache
def _extension_code() -> str:
    """Digest of the farm code that shapes lines besides triplets.py and mir.py (which workers/cache.py
    hashes into every key): an entry made by other per-module, predicate or march code is never used."""
    here = Path(__file__).parent
    names = ("modulerun.py", "predicates.py", "cmpscan.c", "march.py", "mirtriplets.py",
             "data/x86_mir_registers.tsv")
    return hashlib.sha256(b"".join((here / n).read_bytes() for n in names)).hexdigest()


@dataclass(frozen=True)
class Plan:
    """What every module goes through: the kind, the levels (and their sampling), the per-tool timeout,
    whether compares become predicate triplets (workers/predicates.py) and the march levels
    (workers/march.py; none: as compiled)."""

    kind: str
    levels: tuple[str, ...]
    seed: int = 0
    sample: int | None = None
    timeout: float = 300
    predicates: bool = False
    marches: tuple[str, ...] = ()

    def facts(self) -> dict[str, Any]:
        """The plan as a manifest and a shard's part record it (a part of another plan is a mix-up)."""
        return {"opt_levels": list(self.levels), "sample": self.sample, "seed": self.seed,
                "predicates": self.predicates, "march": list(self.marches)}

    @classmethod
    def from_facts(cls, kind: str, f: dict[str, Any]) -> Plan:
        return cls(kind, tuple(f["opt_levels"]), f["seed"], f["sample"], predicates=bool(f.get("predicates")),
                   marches=tuple(f.get("march") or ()))

    def _options(self) -> dict[str, Any]:
        """What the cache key needs beyond the levels: switching predicates or marches changes the key."""
        return {"predicates": self.predicates, "march": list(self.marches),
                "code": _extension_code()}

    def run_module(self, toolchain: Toolchain, module: corpus_mod.Module, work: Path) -> ModuleTriplets | str:
        """One module's triplets, or why it was skipped.

        Taken from the worker's triplet cache when the same bitcode went through the same levels
        with the same tools before (an entry holds exactly what this run would compute, MIR's
        entity source included); what is computed is stored there, and so is a failure that would
        repeat (a module llc rejects), never a time-out.
        """
        from workers import cache
        from workers.tripletcache import Entry

        chosen = choose_levels(self.levels, module.name, self.seed, self.sample)
        if self.kind == "mir" or chosen != ["O0"] or self.marches:  # only these write intermediate files
            work.mkdir(parents=True)
        store = cache.for_triplets(toolchain, self.kind)
        key = store.key(module.bitcode, self.kind, chosen, self.timeout, self._options()) if store else None
        hit = store.get(key, module.name) if key else None
        if hit is not None and hit.failure is not None:
            return hit.failure
        if hit is not None:
            res = ModuleTriplets(hit.lines, hit.raw, hit.max_relation, lost_functions=list(hit.lost_functions),
                                 predicates=set(hit.predicates), compares=hit.compares)
            if hit.mir is not None:
                res.mir_file = work / "cached.mir"
                res.mir_file.write_bytes(hit.mir)
            return res
        per_module = ir_module if self.kind == "ir" else mir_module
        try:
            res = per_module(toolchain, module.bitcode, chosen, work, self.timeout, module.name,
                             self.predicates, self.marches)
        except ToolError as e:
            if key:
                store.put_failure(key, module.name, str(e), private=(work.parent, module.bitcode.parent))
            return str(e)
        if key:
            store.put(key, Entry(res.lines, res.raw, res.max_relation, tuple(res.lost_functions),
                                 res.mir_file.read_bytes() if res.mir_file else None,
                                 predicates=frozenset(res.predicates), compares=res.compares))
        return res


def run_modules(plan: Plan, corpus: corpus_mod.Corpus, toolchain: Toolchain, scratch: Path,
                jobs: int | None) -> Merge:
    """Every module of the corpus on all cores, merged as each finishes; a corpus-level skip stays listed.

    A shard's corpus may hold no module, or only failing ones: whether the run made any triplets
    is decided over all shards (`require_triplets`).
    """
    merged = Merge(skipped=[dict(s, stage="corpus") for s in corpus.skipped])
    index = {m.name: i for i, m in enumerate(corpus.modules)}  # names may hold '/' and clash once flattened
    # Largest first, so no big module starts last and leaves the other cores idle; the merge is
    # order-independent, so the dataset does not change.
    by_size = sorted(corpus.modules, key=lambda m: -m.bitcode.stat().st_size)
    for module, res in run_all(lambda m: plan.run_module(toolchain, m, scratch / str(index[m.name])), by_size,
                               jobs=jobs, desc=f"triplets {plan.kind}: modules",
                               is_failure=lambda r: isinstance(r, str)):
        merged.add(module.name, res)
    return merged


def require_triplets(merged: Merge, where: object) -> None:
    """A run where every module failed is one line naming the first failure."""
    if not merged.unique:
        first = next((s["reason"] for s in merged.skipped if s["stage"] == "triplets"), "no triplets")
        raise InputError(f"no triplets from any module of {where}; first failure: {first}")


def corpus_facts(corpus: corpus_mod.Corpus) -> dict[str, Any]:
    """What a manifest says of its corpus (`Corpus.describe`) besides its digest and size: a shard carries
    these to the merge, which then adds the digest and size of the whole corpus."""
    return {k: v for k, v in corpus.describe().items() if k not in ("digest", "modules")}


def summarize(plan: Plan, corpus: dict[str, Any], merged: Merge, llvm: dict) -> DatasetSummary:
    """The manifest's facts about a finished run (no timestamps: the same inputs give the same bytes).

    `corpus` is what `Corpus.describe` says of the whole corpus (a merge puts it together from its shards).
    """
    return DatasetSummary(
        kind=plan.kind,
        llvm=llvm,
        corpus=corpus,
        modules_used=corpus["modules"] - sum(1 for s in merged.skipped if s["stage"] == "triplets"),
        skipped=sorted(merged.skipped, key=lambda s: (s["module"], s["stage"])),
        partial=sorted(merged.partial, key=lambda s: s["module"]),
        raw=merged.raw,
        max_relation=merged.max_relation,
        opt_levels=list(plan.levels),
        sample=plan.sample,
        seed=plan.seed,
        march=list(plan.marches),
        predicates={"enabled": plan.predicates, "compares": merged.compares} if plan.predicates else None,
    )


def build_dataset(corpus_dir: Path, out_dir: Path, kind: str, toolchain: Toolchain, jobs: int | None = None,
                  opt_levels: Sequence[str] | None = None, seed: int = 0, sample: int | None = None,
                  timeout: float = 300, shard: shards_mod.Shard | None = None, predicates: bool | None = None,
                  marches: Sequence[str] | None = None) -> Path:
    """Generate the deduplicated `kind` dataset of a corpus into `out_dir` (atomically).

    With `shard`, only that shard's modules, and `out_dir` is a shard's part (workers/shards.py)
    for `merge_dataset`, which makes of all parts the dataset one run over the whole corpus makes.
    Every input is checked before any module runs: the levels, the tools, the corpus, and that the
    output may be replaced and written. `predicates` (default: on for IR) adds the compare
    predicate triplets; `marches` runs every module once per x86-64 level (default: as compiled).
    """
    plan = Plan(kind, check_levels(kind, opt_levels), seed, sample, timeout, check_predicates(kind, predicates),
                march_mod.check_marches(marches))
    needs_dis = ["llvm-dis"] if plan.predicates or plan.marches else []
    toolchain.check("clang", "opt", "llvm-ir2vec", *(["llc"] if kind == "mir" else []), *needs_dis)
    if plan.predicates:
        predicates_mod.scanner(toolchain)  # built (once) before any module needs it
    corpus = shards_mod.share(corpus_mod.load(corpus_dir), shard)
    check_replaceable(out_dir, MANIFEST if shard is None else shards_mod.PART_MANIFEST)
    check_writable(Path(out_dir).absolute().parent)
    with ThreadPoolExecutor(max_workers=1) as side, tempfile.TemporaryDirectory(prefix="mlgo-farm-") as scratch:
        # Facts that do not depend on the modules are gathered while the modules run.
        llvm_facts = side.submit(toolchain.describe)
        ir_entities = side.submit(toolchain.run, "llvm-ir2vec", ["entities"], timeout=timeout)
        merged = run_modules(plan, corpus, toolchain, Path(scratch), jobs)
        if shard is None:
            require_triplets(merged, corpus.path)
        entities, entities_from = None, None
        if kind == "ir":
            entities = ir_entities.result().stdout
        elif merged.mir_files:  # MIR entities are target specific: read them off a MIR file LLVM parsed
            entities_from = min(merged.mir_files)
            entities = toolchain.run("llvm-ir2vec", ["entities", "--mode=mir", merged.mir_files[entities_from]],
                                     timeout=timeout).stdout
        llvm = llvm_facts.result()
        if shard is not None:
            facts = part_facts(plan, corpus, merged, llvm, entities_from)
            return shards_mod.write_part(out_dir, shard, facts, merged.unique, entities)
        return write_dataset(out_dir, merged.unique, entities, summarize(plan, corpus.describe(), merged, llvm),
                             merged.predicates)


def part_facts(plan: Plan, corpus: corpus_mod.Corpus, merged: Merge, llvm: dict,
               entities_from: str | None) -> dict[str, Any]:
    """What a shard's part records for the merge: everything `summarize` needs that one shard cannot finish."""
    return {
        "kind": plan.kind,
        "plan": plan.facts(),
        "llvm": llvm,
        "corpus": corpus_facts(corpus),
        "modules": [[m.name, hashlib.sha256(m.bitcode.read_bytes()).hexdigest()] for m in corpus.modules],
        "skipped": sorted(merged.skipped, key=lambda s: (s["module"], s["stage"])),
        "partial": sorted(merged.partial, key=lambda s: s["module"]),
        "raw": merged.raw,
        "max_relation": merged.max_relation,
        "entities_from": entities_from,
        "predicates": sorted(p.decode() for p in merged.predicates),
        "compares": merged.compares,
    }


def merge_dataset(store: ObjectStore, run: str, count: int, out_dir: Path) -> Path:
    """The dataset of a sharded run from its `count` parts in the store: byte for byte what one run makes.

    An incomplete set, parts of another run or another split, and a corrupt part are one line
    (workers/shards.py), before anything is written.
    """
    check_replaceable(out_dir, MANIFEST)
    check_writable(Path(out_dir).absolute().parent)
    parts = shards_mod.fetch_parts(store, run, count)
    c = shards_mod.combine(parts)
    facts = c.facts
    plan = Plan.from_facts(facts["kind"], facts["plan"])
    merged = Merge(unique=c.unique, raw=c.raw, max_relation=c.max_relation, skipped=c.skipped, partial=c.partial,
                   predicates={p.encode() for part in parts for p in part.manifest.get("predicates", [])},
                   compares=sum(int(part.manifest.get("compares", 0)) for part in parts))
    if not c.modules:
        first = min((s for s in c.skipped if s["stage"] == "corpus"), key=lambda s: s["module"], default=None)
        raise InputError(f"no module of {facts['corpus'].get('source') or 'the corpus'} compiled in run {run}; "
                         f"first failure: {first['reason'] if first else 'no modules'}")
    require_triplets(merged, f"run {run}")
    whole = {"digest": corpus_mod.digest_of(c.modules), "modules": len(c.modules), **facts["corpus"]}
    return write_dataset(out_dir, c.unique, c.entities, summarize(plan, whole, merged, facts["llvm"]),
                         merged.predicates)
