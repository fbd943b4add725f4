"""Triplets from a corpus: per module `llvm-ir2vec triplets`, streamed, deduplicated, merged.

IR: each module optionally through `opt` at one or more levels, then `llvm-ir2vec triplets`.
MIR: `llc` to post-allocation MIR, then `llvm-ir2vec triplets --mode=mir`. Modules run on all
cores; each module's output is deduplicated as it arrives, so memory grows with the number of
unique triplets, never with the raw output. Failing modules are skipped with the reason.
"""

from __future__ import annotations

import hashlib
import logging
import random
import re
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from farm.atomic import check_replaceable, check_writable
from farm.errors import InputError, ToolError
from farm.kinds import check_kind
from farm.store import ObjectStore
from farm.toolchain import Toolchain
from workers import corpus as corpus_mod
from workers import mir as mir_mod
from workers import shards as shards_mod
from workers.dataset import MANIFEST, DatasetSummary, write_dataset
from workers.parallel import run_all

log = logging.getLogger(__name__)

OPT_LEVELS = ("O0", "O1", "O2", "O3", "Os", "Oz")
_TRIPLET = re.compile(rb"\d+\t\d+\t\d+")
DEFAULT_LEVELS = {"ir": ("O0", "O2"), "mir": ("O2",)}


class Output:
    """One `llvm-ir2vec triplets` run, deduplicated as its output streams in (a sink for Toolchain.stream).

    Only unique lines and a partial last line are kept, never the raw output.
    """

    def __init__(self) -> None:
        self.lines: set[bytes] = set()
        self.raw = 0
        self.max_relation: int | None = None
        self._tail = b""

    def feed(self, chunk: bytes) -> None:
        lines = (self._tail + chunk).split(b"\n")
        self._tail = lines.pop()
        if self.max_relation is None and lines:
            first = lines[0]
            if not first.startswith(b"MAX_RELATION="):
                raise ToolError(f"llvm-ir2vec output does not start with MAX_RELATION: {first[:60]!r}")
            try:
                self.max_relation = int(first.split(b"=", 1)[1])
            except ValueError:
                raise ToolError(f"llvm-ir2vec printed a malformed first line: {first[:60]!r}") from None
            del lines[0]
        self.raw += len(lines)
        self.lines.update(lines)

    def finish(self) -> Output:
        """Check the run's output once it is complete: a header, then only `head<TAB>tail<TAB>relation` lines."""
        if self._tail:
            self.feed(b"\n")
        if self.max_relation is None:
            raise ToolError("llvm-ir2vec printed no MAX_RELATION line")
        self.lines.discard(b"")
        bad = next((ln for ln in self.lines if not _TRIPLET.fullmatch(ln)), None)
        if bad is not None:
            raise ToolError(f"llvm-ir2vec printed a line that is not a triplet: {bad[:60]!r}")
        return self


@dataclass
class ModuleTriplets:
    """Unique triplet lines of one module (`head\\ttail\\trelation` as bytes)."""

    lines: set[bytes] = field(default_factory=set)
    raw: int = 0
    max_relation: int = -1
    mir_file: Path | None = None  # a MIR file LLVM parsed (for the MIR entity map)
    lost_functions: list[str] = field(default_factory=list)

    def add(self, out: Output) -> None:
        """Merge one finished run (a run that failed midway is never merged)."""
        self.max_relation = max(self.max_relation, out.max_relation)  # set by Output.finish
        self.raw += out.raw
        self.lines |= out.lines


def triplets_of(tc: Toolchain, file: Path, timeout: float, name: str, mode: str = "ir") -> Output:
    """`llvm-ir2vec triplets` of one IR or MIR file, streamed and deduplicated."""
    out = Output()
    args = ["triplets", file] if mode == "ir" else ["triplets", f"--mode={mode}", file]
    tc.stream("llvm-ir2vec", args, out.feed, timeout=timeout, subject=name)
    return out.finish()


def choose_levels(levels: Sequence[str], module: str, seed: int, sample: int | None) -> list[str]:
    """The opt levels for one module: all, or `sample` of them drawn with a per-module seed."""
    if not sample or sample >= len(levels):
        return list(levels)
    return sorted(random.Random(f"{seed}:{module}").sample(list(levels), sample))


def _optimize(tc: Toolchain, bc: Path, level: str, work: Path, timeout: float, name: str) -> Path:
    if level == "O0":
        return bc
    out = work / f"opt.{level}.bc"
    tc.run("opt", [f"-passes=default<{level}>", bc, "-o", out], timeout=timeout, subject=name)
    return out


def ir_module(tc: Toolchain, bc: Path, levels: Sequence[str], work: Path, timeout: float, name: str) -> ModuleTriplets:
    result = ModuleTriplets()
    for level in levels:
        ir = _optimize(tc, bc, level, work, timeout, name)
        result.add(triplets_of(tc, ir, timeout, name))
    return result


def mir_module(tc: Toolchain, bc: Path, levels: Sequence[str], work: Path, timeout: float, name: str) -> ModuleTriplets:
    result = ModuleTriplets()
    for level in levels:
        ir = _optimize(tc, bc, level, work, timeout, name)
        raw = work / f"{level}.mir"
        tc.run("llc", ["-O2", f"-stop-after={mir_mod.STOP_AFTER}", ir, "-o", raw], timeout=timeout, subject=name)
        text = mir_mod.sanitize(raw.read_text())
        mir = work / f"{level}.sanitized.mir"
        mir.write_text(text)
        try:
            result.add(triplets_of(tc, mir, timeout, name, mode="mir"))
            result.mir_file = result.mir_file or mir
            continue
        except ToolError as whole:
            functions = mir_mod.split_functions(text)
            if len(functions) < 2:
                raise whole
        for i, (fname, ftext) in enumerate(functions):
            fmir = work / f"{level}.fn{i}.mir"
            fmir.write_text(ftext)
            try:
                out = triplets_of(tc, fmir, timeout, name, mode="mir")
            except ToolError:
                result.lost_functions.append(fname)
                continue
            result.add(out)
            result.mir_file = result.mir_file or fmir
        if result.max_relation < 0:
            raise ToolError(f"llvm-ir2vec --mode=mir crashed on every function of {name} "
                            f"(class-less registers such as $mxcsr; LLVM 22 bug)")
    return result


@dataclass
class Merge:
    """All modules' triplets merged as they finish, plus what was skipped and why."""

    unique: set[bytes] = field(default_factory=set)
    raw: int = 0
    max_relation: int = -1
    skipped: list[dict[str, str]] = field(default_factory=list)
    partial: list[dict[str, str]] = field(default_factory=list)
    mir_files: dict[str, Path] = field(default_factory=dict)

    def add(self, module: str, res: ModuleTriplets | str) -> None:
        if isinstance(res, str):
            self.skipped.append({"module": module, "reason": res, "stage": "triplets"})
            return
        self.unique |= res.lines
        self.raw += res.raw
        self.max_relation = max(self.max_relation, res.max_relation)
        if res.lost_functions:
            more = " ..." if len(res.lost_functions) > 5 else ""
            self.partial.append({"module": module, "reason": "llvm-ir2vec crashed on function(s) "
                                 + ", ".join(res.lost_functions[:5]) + more})
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


@dataclass(frozen=True)
class Plan:
    """What every module goes through: the kind, the levels (and their sampling), the per-tool timeout."""

    kind: str
    levels: tuple[str, ...]
    seed: int = 0
    sample: int | None = None
    timeout: float = 300

    def run_module(self, toolchain: Toolchain, module: corpus_mod.Module, work: Path) -> ModuleTriplets | str:
        """One module's triplets, or why it was skipped.

        Taken from the worker's triplet cache when the same bitcode went through the same levels
        with the same tools before (an entry holds exactly what this run would compute, MIR's
        entity source included); what is computed is stored there, and so is a failure that would
        repeat (LLVM 22's MIR crashes), never a time-out.
        """
        from workers import cache
        from workers.tripletcache import Entry

        chosen = choose_levels(self.levels, module.name, self.seed, self.sample)
        if self.kind == "mir" or chosen != ["O0"]:  # only these write intermediate files
            work.mkdir(parents=True)
        store = cache.for_triplets(toolchain, self.kind)
        key = store.key(module.bitcode, self.kind, chosen, self.timeout) if store else None
        hit = store.get(key, module.name) if key else None
        if hit is not None and hit.failure is not None:
            return hit.failure
        if hit is not None:
            res = ModuleTriplets(hit.lines, hit.raw, hit.max_relation, lost_functions=list(hit.lost_functions))
            if hit.mir is not None:
                res.mir_file = work / "cached.mir"
                res.mir_file.write_bytes(hit.mir)
            return res
        per_module = ir_module if self.kind == "ir" else mir_module
        try:
            res = per_module(toolchain, module.bitcode, chosen, work, self.timeout, module.name)
        except ToolError as e:
            if key:
                store.put_failure(key, module.name, str(e), private=(work.parent, module.bitcode.parent))
            return str(e)
        if key:
            store.put(key, Entry(res.lines, res.raw, res.max_relation, tuple(res.lost_functions),
                                 res.mir_file.read_bytes() if res.mir_file else None))
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
                               jobs=jobs, desc=f"{plan.kind} triplets"):
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
    )


def build_dataset(corpus_dir: Path, out_dir: Path, kind: str, toolchain: Toolchain, jobs: int | None = None,
                  opt_levels: Sequence[str] | None = None, seed: int = 0, sample: int | None = None,
                  timeout: float = 300, shard: shards_mod.Shard | None = None) -> Path:
    """Generate the deduplicated `kind` dataset of a corpus into `out_dir` (atomically).

    With `shard`, only that shard's modules, and `out_dir` is a shard's part (workers/shards.py)
    for `merge_dataset`, which makes of all parts the dataset one run over the whole corpus makes.
    Every input is checked before any module runs: the levels, the tools, the corpus, and that the
    output may be replaced and written.
    """
    plan = Plan(kind, check_levels(kind, opt_levels), seed, sample, timeout)
    toolchain.check("clang", "opt", "llvm-ir2vec", *(["llc"] if kind == "mir" else []))
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
        return write_dataset(out_dir, merged.unique, entities, summarize(plan, corpus.describe(), merged, llvm))


def part_facts(plan: Plan, corpus: corpus_mod.Corpus, merged: Merge, llvm: dict,
               entities_from: str | None) -> dict[str, Any]:
    """What a shard's part records for the merge: everything `summarize` needs that one shard cannot finish."""
    return {
        "kind": plan.kind,
        "plan": {"opt_levels": list(plan.levels), "sample": plan.sample, "seed": plan.seed},
        "llvm": llvm,
        "corpus": corpus_facts(corpus),
        "modules": [[m.name, hashlib.sha256(m.bitcode.read_bytes()).hexdigest()] for m in corpus.modules],
        "skipped": sorted(merged.skipped, key=lambda s: (s["module"], s["stage"])),
        "partial": sorted(merged.partial, key=lambda s: s["module"]),
        "raw": merged.raw,
        "max_relation": merged.max_relation,
        "entities_from": entities_from,
    }


def merge_dataset(store: ObjectStore, run: str, count: int, out_dir: Path) -> Path:
    """The dataset of a sharded run from its `count` parts in the store: byte for byte what one run makes.

    An incomplete set, parts of another run or another split, and a corrupt part are one line
    (workers/shards.py), before anything is written.
    """
    check_replaceable(out_dir, MANIFEST)
    check_writable(Path(out_dir).absolute().parent)
    c = shards_mod.merge_run(store, run, count)
    facts = c.facts
    plan = Plan(facts["kind"], tuple(facts["plan"]["opt_levels"]), facts["plan"]["seed"], facts["plan"]["sample"])
    merged = Merge(unique=c.unique, raw=c.raw, max_relation=c.max_relation, skipped=c.skipped, partial=c.partial)
    if not c.modules:
        first = min((s for s in c.skipped if s["stage"] == "corpus"), key=lambda s: s["module"], default=None)
        raise InputError(f"no module of {facts['corpus'].get('source') or 'the corpus'} compiled in run {run}; "
                         f"first failure: {first['reason'] if first else 'no modules'}")
    require_triplets(merged, f"run {run}")
    whole = {"digest": corpus_mod.digest_of(c.modules), "modules": len(c.modules), **facts["corpus"]}
    return write_dataset(out_dir, c.unique, c.entities, summarize(plan, whole, merged, facts["llvm"]))
