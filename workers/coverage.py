"""The farm's coverage corpus: small hand-written C/C++ sources that bring the IR LLVM's code lacks.

Why: a vocabulary entity the triplets never mention gets filler, not training. LLVM's own code
(the nightly corpus) is C++ built without exceptions, single-threaded, integer-heavy, for the
baseline x86-64: it never shows exception handling, atomics, most floating point, vector code,
`va_arg`, `asm goto`, computed goto or address spaces. One module is textual IR (`ir_only.ll`:
`fcmp false`/`fcmp true`, which clang never emits, and LLVM 22's new `ptrtoaddr`, which clang 22
does not emit yet); the corpus compiles it at O0 like the rest, and its O0 triplets keep them
(every optimization level folds the two compares away). Each file of `workers/data/coverage/`
exists for named instructions and types (its first comment says which; the README there has the
table), and is compiled like any corpus source, plus the flags on a first line
`// mlgo-farm-flags: ...` where a target or an option is needed (Windows EH, BPF's `va_arg`,
AArch64's target types, AVX2). Modules are named `_coverage/FILE`, so they never clash with a
source tree's names and shard like any other module.

`corpus ... --with-coverage` adds them to the corpus it makes (the nightly builders do),
`corpus coverage -o DIR` makes a corpus of them alone (to measure what they reach).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from farm.atomic import atomic_dir
from farm.errors import InputError
from farm.jsonio import dumps, load_file
from farm.toolchain import Toolchain
from workers import corpus as corpus_mod

if TYPE_CHECKING:
    from workers.shards import Shard

DATA = Path(__file__).parent / "data" / "coverage"
PREFIX = "_coverage/"
_FLAGS_LINES = ("// mlgo-farm-flags:", "; mlgo-farm-flags:")
#: Textual IR, for what no C or C++ source makes clang emit (clang assembles it like any source).
IR_SUFFIX = ".ll"
SOURCE = "farm coverage corpus"


def flags_of(source: Path) -> tuple[str, ...]:
    """The extra clang flags a file asks for on its first line (none when it asks for none)."""
    first = source.read_text().split("\n", 1)[0]
    for prefix in _FLAGS_LINES:
        if first.startswith(prefix):
            return tuple(shlex.split(first[len(prefix):]))
    return ()


def sources(root: Path = DATA) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.suffix in (*corpus_mod.SOURCE_SUFFIXES, IR_SUFFIX) and p.is_file())


def jobs(root: Path = DATA) -> list[corpus_mod.CompileJob]:
    """One compile job per source, with the corpus defaults and the file's own flags after them."""
    files = sources(root)
    if not files:
        raise InputError(f"no coverage sources in {root}")
    return [corpus_mod.CompileJob(f"{PREFIX}{f.name}", f, (*corpus_mod.DEFAULT_FLAGS, *flags_of(f)), f.parent)
            for f in files]


def digest(root: Path = DATA) -> str:
    """sha256 over the sources' names and bytes: which coverage corpus a corpus holds (its lineage)."""
    h = hashlib.sha256()
    for f in sources(root):
        h.update(f.name.encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def build(out: Path, toolchain: Toolchain, jobs_: int | None = None, shard: Shard | None = None,
          root: Path = DATA) -> corpus_mod.Corpus:
    """A corpus of the coverage sources alone."""
    return corpus_mod.compile_jobs(jobs(root), out, toolchain, jobs=jobs_, source=SOURCE, shard=shard,
                                   lineage=_lineage(None, root))


def _lineage(lineage: dict[str, Any] | None, root: Path) -> dict[str, Any] | None:
    """The corpus's lineage plus which coverage sources it holds; none stays none (the corpus's `source`
    names the coverage corpus either way, and its digest covers the bitcode)."""
    if lineage is None:
        return None
    return {**lineage, "coverage_corpus": {"files": len(sources(root)), "sha256": digest(root)}}


def add_to(corpus_dir: Path, toolchain: Toolchain, jobs_: int | None = None, shard: Shard | None = None,
           root: Path = DATA) -> corpus_mod.Corpus:
    """Add the coverage modules to the corpus in `corpus_dir`, atomically (hard links for its own modules).

    With `shard`, only the coverage modules that belong to it (a shard's corpus may get none).
    A coverage source that does not compile is skipped and listed like any other.
    """
    corpus_dir = Path(corpus_dir).absolute()
    base = corpus_mod.load(corpus_dir)
    clash = [m.name for m in base.modules if m.name.startswith(PREFIX)]
    if clash:
        raise InputError(f"corpus {corpus_dir} already holds coverage modules ({clash[0]})")
    desc = load_file(corpus_dir / corpus_mod.DESCRIPTION)
    with tempfile.TemporaryDirectory(prefix=".coverage-", dir=corpus_dir.parent) as tmp:
        part = Path(tmp) / "corpus"
        wanted = [j for j in jobs(root) if shard is None or shard.owns(j.name)]
        extra, extra_skipped = _compile(wanted, part, toolchain, jobs_, shard)
        with atomic_dir(corpus_dir, corpus_mod.DESCRIPTION) as out:
            for origin, corpus in ((corpus_dir, base), (part, extra)):
                for m in corpus.modules if corpus else ():
                    for suffix in (".bc", ".cmd"):
                        dst = out / f"{m.name}{suffix}"
                        dst.parent.mkdir(parents=True, exist_ok=True)
                        os.link(origin / f"{m.name}{suffix}", dst)
            names = sorted([m.name for m in base.modules] + [m.name for m in (extra.modules if extra else [])])
            skipped = load_file(corpus_dir / corpus_mod.SKIPPED) if (corpus_dir / corpus_mod.SKIPPED).is_file() else []
            skipped += extra_skipped
            desc = {**desc, "modules": names, "source": f"{desc.get('source', '')} + {SOURCE}",
                    "lineage": _lineage(desc.get("lineage"), root),
                    "level": base.level if extra is None or extra.level == base.level else None}
            # the layout corpus.compile_jobs writes
            (out / corpus_mod.DESCRIPTION).write_text(dumps(desc))
            (out / corpus_mod.SKIPPED).write_text(json.dumps(sorted(skipped, key=lambda s: s["module"]), indent=2)
                                                  + "\n")
    return corpus_mod.load(corpus_dir)


def _compile(wanted: list[corpus_mod.CompileJob], part: Path, toolchain: Toolchain, jobs_: int | None,
             shard: Shard | None) -> tuple[corpus_mod.Corpus | None, list[dict[str, str]]]:
    """The coverage modules of this run, or none and why: coverage sources that all fail to compile
    (an older clang) are listed as skipped; they never sink the corpus they are added to."""
    if not wanted:
        return None, []
    try:
        extra = corpus_mod.compile_jobs(wanted, part, toolchain, jobs=jobs_, source=SOURCE, shard=shard)
    except InputError as e:
        return None, [{"module": j.name, "reason": str(e)} for j in wanted]
    return extra, load_file(part / corpus_mod.SKIPPED)
