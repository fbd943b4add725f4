"""A corpus from a CMake project that is configured but never built.

The project is configured with the farm's clang (CMake + Ninja, compile database on); then only
what its translation units need before they can compile is built, and each TU of the database
is compiled to pre-optimization bitcode with its own flags (`corpus.compile_jobs`).

What a TU needs first is read off Ninja's graph rather than listed by hand. CMake's Ninja
generator gives every object an order-only dependency on the phony
`cmake_object_order_depends_target_<T>` of its target, which depends on the same phony of each
target `T` links to and on everything `T` was made to depend on: its custom commands
(generated headers and sources: LLVM's tablegen outputs, `VCSRevision.h`) but also whole
executables and libraries (`add_dependencies(BugpointPasses bugpoint)`, object libraries'
objects), which Ninja would otherwise build and link before the first object. So the walk
follows the phonies from the selected objects and keeps only the outputs of custom commands
(plus any built input an object names directly: a generated source, a precompiled header).
Building those builds exactly the generators they run (llvm-min-tblgen, llvm-tblgen and their
libraries) and nothing else: no object of a selected TU, no library, no unrelated tool. A hand
list of LLVM targets would go stale with every LLVM release and miss the X86 backend's tables.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shlex
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from farm.atomic import check_replaceable, check_writable
from farm.errors import InputError, ToolError
from farm.jsonio import load_file
from farm.toolchain import Toolchain
from workers import buildsys
from workers.corpusdir import DESCRIPTION, CompileJob, Corpus, compile_jobs, jobs_from_compile_commands

if TYPE_CHECKING:
    from workers.corpusdir import Shard

log = logging.getLogger(__name__)

ORDER_PHONY = "cmake_object_order_depends_target_"
#: The rule CMake's Ninja generator gives every add_custom_command / add_custom_target command.
CUSTOM_COMMAND = "CUSTOM_COMMAND"
#: Module names of TUs whose source CMake generated in the build directory.
GENERATED_PREFIX = "_build"
_DEFINE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.+-]*(:[A-Z]+)?=")


@dataclass
class Prerequisites:
    """Nodes to build before the selected TUs compile, and the CMake target each one serves (for messages)."""

    nodes: dict[str, str]
    #: Executables, libraries and objects the order-only dependencies named and the walk left out.
    left_out: int = 0


def check_defines(defines: Sequence[str]) -> list[str]:
    """`VAR=VALUE` or `VAR:TYPE=VALUE` cache settings, each refused in one line if malformed."""
    for d in defines:
        if not _DEFINE.match(d):
            raise InputError(f"CMake setting {d!r}: expected VAR=VALUE")
    return list(defines)


def default_build_dir(src: Path) -> Path:
    """`<var_dir>/cmake-build/<name>-<hash of the path>`: kept between runs, so a second run's
    configure and generators are incremental."""
    from farm.config import load_settings

    src = Path(src).absolute()
    key = hashlib.sha256(str(src).encode()).hexdigest()[:12]
    return Path(load_settings().var_dir).absolute() / "cmake-build" / f"{src.name}-{key}"


def configure(src: Path, build: Path, toolchain: Toolchain, defines: Sequence[str] = ()) -> Path:
    """Configure `src` into `build` with the farm's clang; returns the compile database."""
    src = Path(src).absolute()
    if not (src / "CMakeLists.txt").is_file():
        raise InputError(f"{src} is not a CMake project: no CMakeLists.txt")
    user = check_defines(defines)
    if not any(d.split("=", 1)[0].split(":")[0] == "CMAKE_BUILD_TYPE" for d in user):
        user.insert(0, "CMAKE_BUILD_TYPE=Release")
    farm = ["CMAKE_EXPORT_COMPILE_COMMANDS=ON", f"CMAKE_C_COMPILER={toolchain.path('clang')}",
            f"CMAKE_CXX_COMPILER={toolchain.path('clang++')}"]
    buildsys.configure(src, Path(build).absolute(), [*user, *farm])  # the farm's settings last: they win
    db = Path(build).absolute() / "compile_commands.json"
    if not db.is_file():
        raise InputError(f"CMake wrote no compile database in {build} (does the project have C/C++ sources?)")
    return db


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


def module_name(source: Path, src: Path, build: Path) -> str:
    """A TU's module name: its path under the source tree (`lib/Transforms/Scalar/SROA.cpp`), so names
    and the corpus digest do not depend on where the tree was unpacked.

    A source CMake generated is `_build/<path in the build directory>`; one beside the tree (LLVM's
    `llvm/` compiles `../third-party/benchmark`) is `_up<levels>/<path from the common ancestor>`,
    since a name may not climb out of the corpus directory with `..`.
    """
    rel = _relative(source, src)
    if rel is not None:
        return rel
    rel = _relative(source, build)
    if rel is not None:
        return f"{GENERATED_PREFIX}/{rel}"
    common = Path(os.path.commonpath([source, src]))
    if common != Path(common.anchor):
        return f"_up{len(src.relative_to(common).parts)}/{source.relative_to(common).as_posix()}"
    return source.as_posix().lstrip("/")


def _objects(db: Path, build: Path) -> dict[Path, deque[str]]:
    """Per source file, the object outputs of its database entries in order, as Ninja names them."""
    outs: dict[Path, deque[str]] = defaultdict(deque)
    for e in load_file(db, "compilation database"):
        directory = Path(e.get("directory", db.parent))
        argv = e.get("arguments") or shlex.split(e["command"])
        out = e.get("output")
        if out is None and "-o" in argv[:-1]:
            out = argv[argv.index("-o") + 1]
        if out is None:
            out = next((a[2:] for a in argv if a.startswith("-o") and len(a) > 2), None)
        path = None if out is None else (directory / out).resolve()
        node = None if path is None else (_relative(path, build.resolve()) or str(path))
        outs[(directory / e["file"]).resolve()].append(node)
    return outs


def select(db: Path, src: Path, build: Path, include: Sequence[str] = ()) -> list[tuple[CompileJob, str]]:
    """(job named by `module_name`, its object as a Ninja node) for every TU under one of the `include` prefixes."""
    src, build = Path(src).resolve(), Path(build).resolve()  # as the database's files are resolved
    prefixes = [_prefix(p) for p in include]
    objects = _objects(db, build)
    chosen: list[tuple[CompileJob, str]] = []
    seen: dict[str, int] = {}
    used: set[str] = set()
    for job in jobs_from_compile_commands(db):
        node = objects[job.source].popleft() if objects[job.source] else None
        name = module_name(job.source, src, build)
        hit = [p for p in prefixes if p in ("", name) or name.startswith(p + "/")]
        if prefixes and not hit:
            continue
        used.update(hit)
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name = f"{name}.{seen[name]}"
        if node is None:
            raise InputError(f"{db}: the entry for {job.source} names no output (-o): not a database CMake wrote")
        chosen.append((replace(job, name=name), node))
    unused = [p for p in prefixes if p not in used]
    if unused:
        raise InputError(f"--include {unused[0]} matches no translation unit of {db} (paths are relative to {src})")
    if not chosen:
        raise InputError(f"{db} lists no C/C++ translation unit")
    return chosen


def _prefix(p: str) -> str:
    path = PurePosixPath(p)
    if not p or path.is_absolute() or ".." in path.parts:
        raise InputError(f"--include {p!r}: give a path relative to the source tree, such as lib/Transforms")
    return path.as_posix().rstrip("/") if path.as_posix() != "." else ""


def prerequisites(build: Path, objects: Sequence[str]) -> Prerequisites:
    """What must exist before `objects` compile, read off Ninja's graph (the module docstring says why)."""
    build = Path(build).absolute()
    edges = buildsys.query(build, objects)
    unknown = [o for o in objects if o not in edges]
    if unknown:
        raise InputError(f"Ninja in {build} does not know {unknown[0]}: the compile database is not this build's")
    need = Prerequisites({})
    # (node, the CMake target it serves, named directly by an object rather than reached through a phony)
    level: dict[str, tuple[str, bool]] = {}
    for o in objects:
        target = next((d.removesuffix(".dir") for d in reversed(Path(o).parts) if d.endswith(".dir")), o)
        for n in (*edges[o].explicit, *edges[o].implicit):
            level.setdefault(n, (target, True))
        for n in edges[o].order_only:
            level.setdefault(n, (target, False))
    seen: set[str] = set(objects)
    while level:
        todo = {n: v for n, v in level.items() if n not in seen}
        seen.update(todo)
        info = buildsys.query(build, todo)
        level = {}
        for n, (target, direct) in todo.items():
            e = info.get(n)
            if e is None or e.rule is None:
                continue  # a file in the source tree
            if e.rule == "phony":
                owner = n.removeprefix(ORDER_PHONY) if n.startswith(ORDER_PHONY) else Path(n).name
                for child in e.inputs:
                    level.setdefault(child, (owner, False))
            elif direct or e.rule == CUSTOM_COMMAND:
                need.nodes[n] = target
            else:
                need.left_out += 1
    return need


def build_prerequisites(build: Path, need: Prerequisites, jobs: int | None = None) -> None:
    """Build them with Ninja; a failure is one line naming the generator target and its first error."""
    if not need.nodes:
        return
    log.info("building %d generated files the TUs need (left out: %d executables, libraries and objects)",
             len(need.nodes), need.left_out)
    p = buildsys.build(build, sorted(need.nodes), jobs=jobs)
    if p.returncode == 0:
        return
    what, first = buildsys.ninja_failure(p.stdout + p.stderr)
    outputs = what.split()
    owner = next((need.nodes[o] for o in outputs if o in need.nodes), None)
    if owner:
        raise ToolError(f"generator target {owner} failed building {outputs[0]}: {first}")
    raise ToolError(f"building what the generators need failed at {what or 'an unknown step'}: {first}")


def detect_lineage(src: Path) -> dict[str, Any] | None:
    """The revision of a source tree: its git commit, or the Debian package it was unpacked from."""
    from workers import debsrc

    commit = buildsys.head(src)
    if commit:
        return {"kind": "git", "commit": commit, **({"dirty": True} if buildsys.dirty(src) else {})}
    for d in (src, *list(Path(src).absolute().parents)[:2]):
        found = debsrc.lineage(d)
        if found:
            return found
    return None


def from_cmake(src: Path, out: Path, toolchain: Toolchain, *, build: Path | None = None,
               include: Sequence[str] = (), defines: Sequence[str] = (), jobs: int | None = None,
               lineage: dict[str, Any] | None = None, origin: str | None = None,
               shard: Shard | None = None, sample: int | None = None, level: str | None = None) -> Corpus:
    """Configure `src`, build only what its (selected) TUs need, compile them to a corpus at `out`.

    `lineage` defaults to what the tree says about itself (git commit, Debian changelog); the
    `include` prefixes, `defines` and `sample` are added to it, since they decide what the corpus
    holds. `sample` keeps that many TUs (workers.corpus.sample_names) before anything is built, so
    a consumer that needs 400 modules of LLVM's 2,780 builds the generated headers and TUs of 400.
    `level`: each TU's own command compiled at that front-end level (corpus.compile_jobs).
    """
    src = Path(src).absolute()
    check_replaceable(out, DESCRIPTION)  # a mistyped -o is refused before the configure, not after it
    check_writable(Path(out).absolute().parent)
    toolchain.check("clang", "clang++")
    build = Path(build).absolute() if build else default_build_dir(src)
    db = configure(src, build, toolchain, defines)
    chosen = select(db, src, build, include)
    if sample is not None:
        from workers.corpusdir import sample_names

        keep = sample_names((job.name for job, _ in chosen), sample)
        chosen = [(job, node) for job, node in chosen if job.name in keep]
    need = prerequisites(build, [node for _, node in chosen])
    build_prerequisites(build, need, jobs)
    lineage = dict(lineage if lineage is not None else detect_lineage(src) or {})
    if include:
        lineage["include"] = sorted({_prefix(p) for p in include})
    if defines:
        lineage["defines"] = list(defines)
    if sample is not None:
        lineage["sample"] = sample
    return compile_jobs([job for job, _ in chosen], out, toolchain, jobs=jobs, source=origin or f"cmake:{src}",
                        shard=shard, lineage=lineage or None, level=level)


def describe_lineage(lineage: dict[str, Any] | None) -> str:
    """One line for people: `llvm-toolchain-19 1:19.1.7-3~deb12u1 (debian)`, `llvm-project 0123abcd... (git)`."""
    if not lineage:
        return "unknown"
    if lineage.get("kind") == "debian":
        text = f"{lineage.get('package')} {lineage.get('version')} (debian)"
    else:
        text = f"{lineage.get('project', 'commit')} {lineage.get('commit')} (git)" \
            + (" with local changes" if lineage.get("dirty") else "")
    if lineage.get("include"):
        text += ", only " + ", ".join(lineage["include"])
    return text
