"""A package's linked files: its shared libraries and programs, linked by `ld.lld` from one object per module.

What a size user ships is linked files, not objects. For C the two agree but for a constant (the linker's own
tables); for C++ they do not: every object that instantiates a template or emits an inline function carries a
copy in a COMDAT group, and the linker keeps one per linked file. A policy judged on a sum of objects is paid for
inlining those copies away in every object, and the library users install can grow while its objects shrink
(issue 45: objects 0.974x, linked up to 1.030x). So the farm links what `workers/data/shipped.toml` says each
package installs (`Output`: the modules, the package's own libraries a program links against, system libraries)
the way Debian's build does — `clang -fuse-ld=lld` with Debian's default `-Wl,-z,relro`, shared libraries with
their soname and `-z defs` (a missing module is an undefined symbol, not a smaller library) — and measures each
file's Berkeley `text` with `llvm-size`, as it measures objects.

Bad input is one line naming the package: an output whose pattern matches no module (an object no rule builds),
an output whose module did not compile, a link that fails.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from farm.errors import InputError, ToolError
from farm.toolchain import Toolchain, text_sizes
from workers.shipped import Output

#: Debian 12's default link flags (dpkg-buildflags: LDFLAGS=-Wl,-z,relro).
DEBIAN_LDFLAGS = ("-Wl,-z,relro",)
#: The suffixes of C++ modules: linked by clang++, and the only ones with COMDAT groups the linker merges
CXX_SUFFIXES = (".cc", ".cpp", ".cxx", ".C")


@dataclass(frozen=True)
class Linked:
    """The Berkeley `text` of each linked file of a package, in link order."""

    outputs: Mapping[str, int]

    @property
    def text(self) -> int:
        """All the package's linked files together: what its binary packages install."""
        return sum(self.outputs.values())


def linker_flags(toolchain: Toolchain) -> list[str]:
    """The clang driver's flags that link with the toolchain's own ld.lld (whatever the system's default linker)."""
    return ["-fuse-ld=lld", f"--ld-path={toolchain.path('ld.lld')}"]


def thin_index_flags(toolchain: Toolchain, opt_flags: Sequence[str]) -> list[str]:
    """A distributed ThinLTO build's thin link (with `driver`): the toolchain's ld.lld writes each pre-link module's
    index (`M.o.thinlto.bc`, which `-fthinlto-index=` gives its backend) and links nothing. Packages
    (workers/thinlto.py) and benchmarks (regression/build.py) are thin-linked alike."""
    return [*linker_flags(toolchain), "-flto=thin", *opt_flags, "-Wl,--thinlto-index-only"]


def driver(modules: Iterable[str | Path]) -> str:
    """The clang driver that links `modules` (names or paths of their sources): `clang++`, which adds libstdc++, when
    any is C++ (CXX_SUFFIXES), else `clang`. A ThinLTO corpus names the second backend of a module two outputs link
    `MODULE@OUTPUT` (workers/thinlto.py): its source is the name before the `@`."""
    return "clang++" if any(str(m).partition("@")[0].endswith(CXX_SUFFIXES) for m in modules) else "clang"


def order(outputs: Sequence[Output]) -> list[Output]:
    """Outputs with every shared library before the outputs that link against it (the loader refused cycles of
    programs; a library needing a library is linked after it)."""
    done: list[Output] = []
    left = list(outputs)
    while left:
        ready = [o for o in left if all(n in {d.name for d in done} for n in o.needs)]
        if not ready:
            raise InputError(f"outputs {', '.join(o.name for o in left)} need each other: no link order")
        done += ready
        left = [o for o in left if o not in ready]
    return done


def check(package: str, outputs: Sequence[Output], modules: Sequence[str]) -> None:
    """One line naming the package and output when an output's pattern matches none of `modules` (the corpus's
    module names): an object the recipe never builds."""
    for o in outputs:
        pats = o.unmatched(modules)
        if pats:
            raise InputError(f"package {package}: output {o.name} names {pats[0]!r}, which no module of its corpus "
                             "matches (an object no rule builds: fix workers/data/shipped.toml or the recipe)")


def link(package: str, outputs: Sequence[Output], objects: Mapping[str, Path | None], out_dir: Path,
         toolchain: Toolchain) -> Linked:
    """Link every output (workers/shipped.py `Shipping.outputs`) from `objects` (module name -> object, in the
    corpus's order; None for a module that did not compile) into `out_dir`; the linked files' Berkeley `text`. One
    line (InputError, ToolError) naming the package for no outputs, a pattern no module matches, a member that did
    not compile, a failed link."""
    if not outputs:
        raise InputError(f"package {package}: workers/data/shipped.toml declares no linked outputs")
    check(package, outputs, list(objects))
    out_dir.mkdir(parents=True, exist_ok=True)
    made: dict[str, Path] = {}
    for o in order(outputs):
        members = o.members(objects)
        failed = [m for m in members if objects[m] is None]
        if failed:
            raise ToolError(f"package {package}: cannot link {o.name}: module {failed[0]} did not compile"
                            + (f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""))
        target = out_dir / o.name
        kind = ["-shared", f"-Wl,-soname,{o.name}", "-Wl,-z,defs"] if o.kind == "shared" else []
        args = [*linker_flags(toolchain), *DEBIAN_LDFLAGS, *kind, "-o", target,
                *(objects[m] for m in members), *(made[n] for n in o.needs), *o.libs]
        try:
            toolchain.run(driver(members), args, timeout=600, cwd=out_dir)
        except ToolError as e:
            raise ToolError(f"package {package}: linking {o.name} failed: {first_error(str(e))}") from None
        made[o.name] = target
    sizes = text_sizes(toolchain, list(made.values()))
    return Linked({name: sizes[path] for name, path in made.items()})


def first_error(message: str) -> str:
    """The linker's first error out of a tool failure's message (the rest repeats it per symbol)."""
    for line in message.splitlines():
        for mark in ("ld.lld: error:", "error:"):
            if mark in line:
                return line[line.index(mark):].strip()
    return message.splitlines()[0] if message else "failed"
