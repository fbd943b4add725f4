"""ThinLTO corpora: a package's modules as a distributed ThinLTO build hands them to its backends.

A ThinLTO build compiles each module to summary-carrying bitcode (the pre-link: `clang -Oz -flto=thin -c`), links
the summaries (the thin link: which functions each module imports from the others, what is exported), then runs one
backend per module (`clang -Oz -x ir M.bc -fthinlto-index=M.thinlto.bc -c`) that imports those functions and
optimises — inlining across modules — before the final, ordinary link. The backend is where an inliner policy
decides what the whole package's call graph offers, and it is one clang process per module, so the farm's launcher
and host drive it as they drive a per-file compile. This is how ml-compiler-opt extracts ThinLTO corpora (lld's
index-only thin link, `-fthinlto-index=`, docs/thinlto.md there), in LLVM's corpus layout: `M.bc` (the pre-link
bitcode), `M.thinlto.bc` (its index), `has_thinlto: true` in corpus_description.json.

The pre-link runs LLVM's heuristic, as a user's ThinLTO build would before the policy's backend; the thin link is
made per linked output of workers/data/shipped.toml (a module two outputs link is two backends), with
`--thinlto-index-only` so that nothing is linked yet. An index names the other modules by absolute path: a ThinLTO
corpus stays where it was made (it is remade, not moved).
"""

from __future__ import annotations

import glob
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from farm.errors import FarmError, InputError, ToolError
from farm.jsonio import dumps, load_file
from farm.toolchain import Toolchain
from workers.corpusdir import DESCRIPTION, SKIPPED, Corpus, load
from workers.linked import check, driver, first_error, order, thin_index_flags
from workers.parallel import run_all
from workers.shipped import Output

#: What marks a ThinLTO corpus's description (LLVM's corpus layout names the field so).
FIELD = "has_thinlto"
INDEX_SUFFIX = ".thinlto.bc"
#: The outputs as they link from a ThinLTO corpus, beside its description.
OUTPUTS = "outputs.json"


def thin_corpus(package: str, corpus: Corpus, outputs: Sequence[Output], out: Path, toolchain: Toolchain,
                jobs: int | None = None, level: str = "Oz") -> tuple[Corpus, tuple[Output, ...]]:
    """The ThinLTO corpus of `package` (its per-file `corpus` at `level` and the linked `outputs` it ships) in `out`,
    and the outputs as they link from it: every module of an output pre-linked, each output thin-linked, each
    module's index beside it. A module two outputs link is two backends (each output's thin link promotes and
    imports its own way): its second copy is `MODULE@OUTPUT`, and the outputs returned name their members exactly.
    One line naming the package when a module does not pre-link or an output does not thin-link; the description is
    written last, so an interrupted run leaves no corpus."""
    if not outputs:
        raise InputError(f"package {package}: no linked outputs in workers/data/shipped.toml, so no ThinLTO build")
    names = [m.name for m in corpus.modules]
    check(package, outputs, names)
    by_name = {m.name: m for m in corpus.modules}
    plan: list[tuple[Output, list[tuple[str, str]]]] = []  # (output, [(thin corpus name, module)])
    taken: set[str] = set()
    for o in order(outputs):
        mine = [(m if m not in taken else f"{m}@{o.name}", m) for m in o.members(names)]
        taken.update(m for _, m in mine)
        plan.append((o, mine))
    out = Path(out).absolute()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)

    def prelink(item: tuple[str, str]) -> str | None:
        target = out / f"{item[0]}.bc"
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            toolchain.run("clang", [f"-{level}", "-flto=thin", "-c", by_name[item[1]].bitcode, "-o", target],
                          subject=item[1])
        except ToolError as e:
            return str(e)
        return None

    every = [x for _, mine in plan for x in mine]
    failed = [(x[1], err) for x, err in run_all(prelink, every, jobs=jobs, desc=f"{package}: ThinLTO pre-link",
                                                is_failure=bool) if err]
    if failed:
        raise ToolError(f"package {package}: {len(failed)} module(s) did not pre-link for ThinLTO (first, "
                        f"{failed[0][0]}: {failed[0][1]})")
    linked: list[Output] = []
    for i, (o, mine) in enumerate(plan):
        index_dir = out / f".index-{i}"
        _thin_link(package, o, [out / f"{n}.bc" for n, _ in mine], driver(m for _, m in mine),
                   out, index_dir, toolchain, level)
        for n, _ in mine:
            (index_dir / f"{n}.bc{INDEX_SUFFIX}").replace(out / f"{n}{INDEX_SUFFIX}")
        shutil.rmtree(index_dir, ignore_errors=True)
        linked.append(replace(o, modules=tuple(glob.escape(n) for n, _ in mine), exclude=()))
    (out / SKIPPED).write_text("[]\n")
    (out / OUTPUTS).write_text(dumps([o.as_json() for o in linked]))
    (out / DESCRIPTION).write_text(dumps({"modules": [n for n, _ in every], FIELD: True,
                                          "source": f"thinlto:{corpus.origin}", "lineage": corpus.lineage,
                                          "level": level}))
    return load(out), tuple(linked)


def outputs_of(corpus_dir: Path) -> tuple[Output, ...]:
    """The outputs a ThinLTO corpus links (what `thin_corpus` returned when it made it)."""
    return tuple(Output.from_json(d) for d in load_file(Path(corpus_dir) / OUTPUTS))


def _thin_link(package: str, o: Output, objects: list[Path], link_driver: str, root: Path, index_dir: Path,
               toolchain: Toolchain, level: str) -> None:
    """The thin link of one output by `link_driver` (workers/linked.py `driver`): every member's index written under
    `index_dir` (lld's prefix replacement of `root`), nothing linked."""
    kind = ["-shared", f"-Wl,-soname,{o.name}"] if o.kind == "shared" else ["-Wl,--unresolved-symbols=ignore-all"]
    args = [*thin_index_flags(toolchain, [f"-{level}"]), *kind, f"-Wl,--thinlto-prefix-replace={root}/;{index_dir}/",
            "-o", index_dir / o.name, *(f"-Wl,{p}" for p in objects), *o.libs]  # (the driver would compile a .bc)
    index_dir.mkdir(parents=True, exist_ok=True)
    try:
        toolchain.run(link_driver, args, timeout=600, cwd=root)
    except FarmError as e:
        raise ToolError(f"package {package}: the ThinLTO thin link of {o.name} failed: {first_error(str(e))}") from None
