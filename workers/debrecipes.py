"""How each known Debian source package compiles without its build system: the `PackageRecipe` and the catalogue.

A recipe stands in for `./configure && make`: which directories hold the sources, the defines and
include paths the build would pass, the headers it would generate (`config.h` and the like,
written from what configure finds on x86-64 Debian 12), the files it never compiles on this
target (other architectures, fragments #included by another source, C++), and the per-file flags
of SIMD variants. `workers/debsrc.py` fetches and applies them; `policytrain/splitdata.py` names which
packages train, validate and judge the inliner policy.

The recipes themselves are data: `workers/data/recipes.toml`, one table per package, and the generated
headers as files under `workers/data/debian/<package>/`, read and checked by `workers/recipedata.py`
(whose docstring says how to add a package). This module keeps what is behaviour: the class and its methods.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

from workers import recipedata


@dataclass(frozen=True)
class PackageRecipe:
    """What a package's own build would provide: which sources, which defines, generated headers.

    The name says what it is the recipe of, a Debian package's build: the inliner trainer's recipes, how hard each
    stage of a training works, are another thing (policytrain/recipes.py `TrainingRecipe`)."""

    subdirs: tuple[str, ...] = (".",)
    #: Compile flags; `{src}` stands for the unpacked source tree (include paths the build would add),
    #: as in regression/benchmarks.py.
    flags: tuple[str, ...] = ()
    #: Headers the build would generate (`path under the tree: text`).
    generated: dict[str, str] = field(default_factory=dict)
    #: Files the build copies from templates the tree ships (`dest: source`, both under the tree),
    #: for a package whose generic `config.h` is right as it stands.
    copies: dict[str, str] = field(default_factory=dict)
    #: Module names (`fnmatch` patterns) left out: code the package's build never compiles on x86-64 Linux,
    #: or compiles only as a fragment #included by another source.
    exclude: tuple[str, ...] = ()
    #: Extra flags for the modules matching a pattern, as the build gives them per file (the x86 SIMD
    #: variants of a function are compiled with `-mavx2` and the like; clang ignores `#pragma GCC target`).
    file_flags: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: Whether C++ sources (`.cc`, `.cpp`, `.cxx`) are modules too; the policy's packages are C, and the
    #: C++ in them (fuzz drivers, bindings, libFLAC++) would bring in a second language's inlining.
    cxx: bool = False
    #: The Debian version to fetch when the newest source does not download (a security update whose
    #: files the mirror lacks); the corpus's lineage says which version it was.
    fallback_version: str | None = None
    #: The directory of a CMake project to configure (instead of compiling `subdirs` with `flags`).
    cmake: str | None = None
    #: `VAR=VALUE` cache settings for that project.
    cmake_defines: tuple[str, ...] = ()

    def flags_for(self, tree: Path) -> tuple[str, ...]:
        """The recipe's flags for the source tree unpacked at `tree`."""
        return tuple(f.replace("{src}", str(tree)) for f in self.flags)

    def wanted(self, module: str) -> bool:
        """Whether the module named `module` (its path under the tree) belongs in the corpus."""
        if not self.cxx and not module.endswith(".c"):
            return False
        return not any(fnmatch.fnmatchcase(module, pat) for pat in self.exclude)

    def flags_of(self, module: str) -> tuple[str, ...]:
        """The extra flags the module named `module` gets (those of every file_flags pattern it matches)."""
        return tuple(f for pat, flags in self.file_flags.items() if fnmatch.fnmatchcase(module, pat) for f in flags)


#: Packages the farm knows how to compile (without their build systems, but for LLVM's), checked when read.
RECIPES: dict[str, PackageRecipe] = recipedata.load(PackageRecipe)

#: LLVM's own code, configured with CMake: workers/debsrc.py gives this recipe to every `llvm-toolchain-NN`,
#: listed or not, and its cache settings to whoever configures LLVM for a corpus.
LLVM = RECIPES["llvm-toolchain-19"]
LLVM_CMAKE_DEFINES = LLVM.cmake_defines
