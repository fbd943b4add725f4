"""Which Debian source packages the inliner policy trains on, is validated on, and is judged on.

A policy that shrinks the code it trained on may still grow other code (ml-compiler-opt's issues
#10 and #331), so it is judged on whole packages it never saw: no package is in two splits, and a
package's modules never straddle a split. Every package here has a recipe (`workers/debrecipes.py`),
so `mlgo-farm corpus debian PKG` makes its corpus. The table is checked when this module is imported.

Chosen for variety of C code: an interpreter, compressors, regular-expression engines, cryptography,
audio and image codecs, parsers, a DNS resolver, a memory-mapped database, colour management, a
tracker-music player, hashing, zip archives, an event loop, suffix sorting. speexdsp has a recipe but no
split: two of its files are near-copies of speex's, a retired evaluation package. Of nineteen more packages
(workers/debrecipes_media.py, debrecipes_data.py; training on them too ranked worse), eight decide between
recipes and eleven are in no split. LLVM's own code (`llvm-toolchain-19`) is C++ and feeds the
vocabularies, not the policy, so it is in no split.

An evaluation table stays honest only while nobody chooses knowing it: every look at an evaluation package's
numbers is counted (workers/data/looks.toml), and a package looked at MAX_LOOKS times retires (the check fails
until it is moved), as LNT ages out old regressions and chromeperf wants fresh points. Retired packages still never
train, validate or decide.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path

from farm import datafile
from farm.errors import InputError
from workers.debrecipes import RECIPES

#: The policy learns from these. The last seven (workers/debrecipes_more.py) joined on 2026-11-26: with them the
#: nightly ranked better on eleven packages nobody trained on than both draws without them (bench/README.md).
TRAIN = ("lua5.4", "libzstd", "pcre2", "libsodium", "libtomcrypt", "opus", "libjpeg-turbo", "lzo2", "libonig",
         "zopfli", "xxhash", "lzlib", "openjpeg2", "libzip", "libevent", "libdivsufsort")
#: Checkpoints and hyper-parameters are chosen on these: enough of them that one package a policy grows shows.
VALIDATION = ("xz-utils", "jansson", "cmark", "c-ares", "lmdb")
#: Recipes are compared on these (bench/data/policy-decisions-*.txt): nothing trains on them and no checkpoint is
#: chosen on them, so a comparison made here flatters no recipe (validation chooses; evaluation is reported after
#: a decision, never used for one). `mlgo-farm policy heldout MODEL --split decision`. The first six joined on
#: 2026-11-25; the last eight on 2026-11-26, dealt by name from the nineteen (the other half chose checkpoints in
#: an experiment, and pcre3, sharing most of its JIT compiler with pcre2, was left out).
DECISION = ("mbedtls", "libtommath", "mujs", "json-c", "wavpack", "libpng1.6",
            "faad2", "jbig2dec", "libcsv", "libmaxminddb", "libscrypt", "libtasn1-6", "twolame", "vo-aacenc")
#: The policy is judged on these, which it never saw: twelve C packages (workers/data/recipes.toml) chosen and given
#: recipes on 2026-11-27, before any policy was measured on them, in the real `-Oz` regime (issue 34). Each look at
#: their numbers is counted in workers/data/looks.toml; at MAX_LOOKS a package retires.
EVALUATION = ("lhasa", "libmspack", "mxml", "serd", "potrace", "tinycdb", "libdvdread", "fribidi", "nlopt",
              "libspiro", "discount", "bc")
#: Evaluation packages looked at too often to be held out any more (MAX_LOOKS): the farm's first 21, each looked at
#: six to twelve times while recipes were compared (bench/README.md counts the looks). Nothing trains, validates or
#: decides on them; `policy heldout --split retired` still measures them, and small runs (`make demo`) judge on them
#: so as to spend no look of the fresh packages.
RETIRED = ("zlib", "bzip2", "lz4", "libdeflate", "flac", "libwebp", "giflib", "cjson", "libyaml",
           "expat", "lcms2", "speex", "libexif", "libconfig", "libxmp",
           "libsamplerate", "libgsm", "libmodbus", "msgpack-c", "libsndfile", "jbigkit")

SPLITS: dict[str, tuple[str, ...]] = {"train": TRAIN, "validation": VALIDATION, "decision": DECISION,
                                      "evaluation": EVALUATION, "retired": RETIRED}

#: Code that packages of different splits share (`mlgo-farm policy splits` finds it: workers/overlap.py), each pair
#: with the decision taken and why. The issue splits by whole package; an overlap not written here fails the check.
OVERLAPS: dict[frozenset[str], str] = {
    frozenset(("libzstd", "lz4")): "one author's code: xxhash.h (lz4's is an older xxHash) and programs/platform.h; "
    "measured after lz4 grew under the sixteen-package nightly (bench/README.md): kept, lz4 counts as looked at",
    frozenset(("xxhash", "lz4")): "lz4 bundles an older xxHash (lib/xxhash.h, .c), and lz4's programs/util.h shares "
    "timing code with xxhash's tests/bench/timefn.c; as libzstd's: kept, lz4 counts as looked at",
    frozenset(("libjpeg-turbo", "flac")): "both compile a copy of Colin Plumb's public-domain MD5 (md5/md5.c, "
    "src/libFLAC/md5.c), 68 % of flac's lines: one module of 81, kept",
    frozenset(("opus", "speex")): "Xiph's shared kiss_fft and fixed-point headers (celt/_kiss_fft_guts.h, "
    "fixed_debug.h); headers, not modules, about half their lines: kept",
    frozenset(("xz-utils", "libxmp")): "libxmp's depackers embed XZ Embedded, whose xz_lzma2.h shares half its lines "
    "with xz-utils' lzma_common.h: validation against evaluation, one header, kept",
    frozenset(("jansson", "json-c")): "json-c's linkhash.c and jansson's lookup3.h both carry Bob Jenkins' "
    "public-domain lookup3 hash (69 lines): validation against decision, one hash function, kept",
    frozenset(("libtomcrypt", "mbedtls")): "mbedtls' gcm.c and libtomcrypt's gcm_test.c hold the same GCM test "
    "vectors (50 lines of data, no code): kept",
}
#: Fewer evaluation packages than this and one odd package decides the verdict.
MIN_EVALUATION = 5
#: An evaluation package whose numbers have been looked at this many times (workers/data/looks.toml) is retired:
#: each look informs the next choice, so after a few a table on it is no longer held out. Moved to RETIRED, it
#: still never trains, validates or decides, and `policy heldout --split retired` still measures it.
MAX_LOOKS = 3
LOOKS = Path(__file__).parent / "data" / "looks.toml"
_LOOKS_SCHEMA = {"looks": (int, True, "a whole number of looks"), "where": (str, True, "which tables looked")}


@cache
def looks(path: Path = LOOKS) -> dict[str, int]:
    """How many times each package's numbers have been looked at (a package without an entry: never)."""
    entries = datafile.tables(datafile.read(path), _LOOKS_SCHEMA, str(path))
    bad = next((name for name, e in entries.items() if e["looks"] < 0), None)
    if bad:
        raise InputError(f"{path}: [{bad}] looks must not be negative")
    return {name: e["looks"] for name, e in entries.items()}


def check(splits: Mapping[str, tuple[str, ...]] = SPLITS, recipes: Mapping[str, object] = RECIPES,
          overlaps: Mapping[frozenset[str], str] | None = None, counts: Mapping[str, int] | None = None) -> None:
    """Raise InputError (one line) unless the splits are known, disjoint, have recipes, every decided overlap (by
    default OVERLAPS, for the declared splits) joins two packages of different splits with a reason, evaluation
    is big enough, and no evaluation package has been looked at MAX_LOOKS times (`counts`, default `looks()`)."""
    if overlaps is None:
        overlaps = OVERLAPS if splits is SPLITS else {}
    unknown = sorted(set(splits) - set(SPLITS))
    if unknown:
        raise InputError(f"package splits: unknown split {unknown[0]!r} ({', '.join(SPLITS)})")
    seen: dict[str, str] = {}
    for name, packages in splits.items():
        for pkg in packages:
            if pkg in seen:
                where = "twice in" if seen[pkg] == name else f"in {seen[pkg]} and in"
                raise InputError(f"package splits: {pkg} is {where} {name}")
            seen[pkg] = name
            if pkg not in recipes:
                raise InputError(f"package splits: {pkg} ({name}) has no recipe in workers/debrecipes.py")
    for pair, why in overlaps.items():
        where = [seen.get(pkg) for pkg in pair]
        if len(pair) != 2 or not why or None in where or len(set(where)) != 2:
            raise InputError(f"package splits: the overlap of {' and '.join(sorted(pair))} needs two packages of "
                             "different splits and a reason")
    n = len(splits.get("evaluation", ()))
    if n < MIN_EVALUATION:
        raise InputError(f"package splits: {n} evaluation package(s), at least {MIN_EVALUATION} needed")
    counts = looks() if counts is None else counts
    often = [(pkg, counts[pkg]) for pkg in splits.get("evaluation", ()) if counts.get(pkg, 0) >= MAX_LOOKS]
    if often:
        raise InputError(f"package splits: evaluation package {often[0][0]} has been looked at {often[0][1]} times "
                         f"(workers/data/looks.toml; {MAX_LOOKS} retire a package): move it to the retired split")


def split_of(package: str) -> str | None:
    """The split `package` belongs to, or None if it is in none."""
    return next((name for name, packages in SPLITS.items() if package in packages), None)


check()
