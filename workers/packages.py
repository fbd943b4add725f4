"""Which Debian source packages the inliner policy trains on, is validated on, and is judged on.

A policy that shrinks the code it trained on may still grow other code (ml-compiler-opt's issues
#10 and #331), so it is judged on whole packages it never saw: no package is in two splits, and a
package's modules never straddle a split. Every package here has a recipe (`workers/debrecipes.py`),
so `mlgo-farm corpus debian PKG` makes its corpus. The table is checked when this module is imported.

Chosen for variety of C code: an interpreter, compressors, regular-expression engines, cryptography,
audio and image codecs, parsers, a DNS resolver, a memory-mapped database, colour management, a
tracker-music player, hashing, zip archives, an event loop, suffix sorting. speexdsp has a recipe but no split:
two of its files are near-copies of speex's, an evaluation package. LLVM's own code (`llvm-toolchain-19`) is C++
and feeds the vocabularies, not the policy, so it is in no split.
"""

from __future__ import annotations

from collections.abc import Mapping

from farm.errors import InputError
from workers.debrecipes import RECIPES

#: The policy learns from these. The last seven (workers/debrecipes_more.py) joined on 2026-11-26: with them the
#: nightly ranked better on eleven packages nobody trained on than both draws without them (bench/README.md).
TRAIN = ("lua5.4", "libzstd", "pcre2", "libsodium", "libtomcrypt", "opus", "libjpeg-turbo", "lzo2", "libonig",
         "zopfli", "xxhash", "lzlib", "openjpeg2", "libzip", "libevent", "libdivsufsort")
#: Checkpoints and hyper-parameters are chosen on these: enough of them that one package a policy grows shows.
VALIDATION = ("xz-utils", "jansson", "cmark", "c-ares", "lmdb")
#: The policy is judged on these, which it never saw. The first nine have been looked at while recipes were
#: compared (bench/README.md counts the looks); the next six (workers/debrecipes_eval.py) joined on 2026-11-25
#: and have been looked at since; the last six (workers/debrecipes_fresh.py) joined later that day, before any
#: policy was measured on them, so the farm's first numbers on them are the honest estimate.
EVALUATION = ("zlib", "bzip2", "lz4", "libdeflate", "flac", "libwebp", "giflib", "cjson", "libyaml",
              "expat", "lcms2", "speex", "libexif", "libconfig", "libxmp",
              "libsamplerate", "libgsm", "libmodbus", "msgpack-c", "libsndfile", "jbigkit")

SPLITS: dict[str, tuple[str, ...]] = {"train": TRAIN, "validation": VALIDATION, "evaluation": EVALUATION}
#: Fewer evaluation packages than this and one odd package decides the verdict.
MIN_EVALUATION = 5


def check(splits: Mapping[str, tuple[str, ...]] = SPLITS, recipes: Mapping[str, object] = RECIPES) -> None:
    """Raise InputError (one line) unless the splits are known, disjoint, have recipes, and evaluation is big enough."""
    unknown = sorted(set(splits) - {"train", "validation", "evaluation"})
    if unknown:
        raise InputError(f"package splits: unknown split {unknown[0]!r} (train, validation, evaluation)")
    seen: dict[str, str] = {}
    for name, packages in splits.items():
        for pkg in packages:
            if pkg in seen:
                where = "twice in" if seen[pkg] == name else f"in {seen[pkg]} and in"
                raise InputError(f"package splits: {pkg} is {where} {name}")
            seen[pkg] = name
            if pkg not in recipes:
                raise InputError(f"package splits: {pkg} ({name}) has no recipe in workers/debrecipes.py")
    n = len(splits.get("evaluation", ()))
    if n < MIN_EVALUATION:
        raise InputError(f"package splits: {n} evaluation package(s), at least {MIN_EVALUATION} needed")


def split_of(package: str) -> str | None:
    """The split `package` belongs to, or None if it is in none."""
    return next((name for name, packages in SPLITS.items() if package in packages), None)


check()
