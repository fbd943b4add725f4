"""The recipes of eleven text, data, network and crypto C packages the farm had never compiled, for training data.

In no split (workers/packages.py): with these and debrecipes_media.py's eight, the nightly ranked worse on the
eleven packages that decide than without them (bench/README.md, "Still more training packages").

yajl (JSON parsing and generation), libmaxminddb (MaxMind DB lookups), utf8proc (Unicode normalisation), libuv1
(event loop), libcsv (CSV parsing), libsrtp2 (Secure RTP), hiredis (Redis client), tre (approximate regex matching),
libtasn1-6 (ASN.1 DER), libscrypt (the scrypt key derivation) and pcre3 (Perl-compatible regular expressions, 8.39).
Plain data, as workers/debrecipes_more.py: each entry is the keyword arguments of a `workers.debrecipes.Recipe`,
which `workers/debrecipes.py` builds and merges into `RECIPES` (this module imports only debrecipes_eval's helpers
and debrecipes_fresh's autoconf defines, so there is no import cycle). The headers are those Debian 12's build
writes on x86-64, the defines those it passes. No file here is a copy of an evaluation package's code: libuv's
inet.c (the ISC's inet_ntop and inet_pton, as in c-ares) and libtasn1's bison parser (bison's skeleton, as in
libconfig) are left out.
"""

from __future__ import annotations

from workers.debrecipes_eval import _defines, _have, _package
from workers.debrecipes_fresh import _AUTOCONF, _SYSTEM_EXTENSIONS


def _overlay(directory: str, files: dict[str, str]) -> str:
    """A clang VFS overlay (`-ivfsoverlay`) that shows `files` (`name: source`, both under the tree) in `directory`,
    for headers a build copies into a directory the unpacked tree does not have."""
    contents = ", ".join(f'{{"name": "{n}", "type": "file", "external-contents": "{s}"}}' for n, s in files.items())
    return ('{"version": 0, "root-relative": "overlay-dir", "overlay-relative": true, "roots": [{"name": '
            f'"{directory}", "type": "directory", "contents": [{contents}]}}]}}\n')


#: yajl's include/yajl/ as src/CMakeLists.txt lays it out in the build tree (the sources #include <yajl/...>): the
#: four public headers, and yajl_version.h configured from its template, shown there by an overlay.
YAJL_VERSION_H = (
    "#ifndef YAJL_VERSION_H_\n#define YAJL_VERSION_H_\n#include <yajl/yajl_common.h>\n"
    + _defines("YAJL_MAJOR 2", "YAJL_MINOR 1", "YAJL_MICRO 0",
               "YAJL_VERSION ((YAJL_MAJOR * 10000) + (YAJL_MINOR * 100) + YAJL_MICRO)")
    + "extern int YAJL_API yajl_version(void);\n#endif\n"
)
YAJL_INCLUDE = _overlay("include/yajl", {
    **{f"yajl_{h}.h": f"src/api/yajl_{h}.h" for h in ("common", "gen", "parse", "tree")},
    "yajl_version.h": "src/api/yajl_version.h"})

#: libmaxminddb's config.h (configure on x86-64 Debian 12: unsigned __int128, clock_gettime and open_memstream) and
#: include/maxminddb_config.h, the second header AC_CONFIG_HEADERS writes.
LIBMAXMINDDB_CONFIG = _defines(
    *_AUTOCONF, *_have(*(f"{h}_H" for h in ("ARPA_INET", "ASSERT", "FCNTL", "LIBGEN", "MATH", "NETDB", "NETINET_IN",
                                            "STDARG", "STDBOOL", "SYS_MMAN", "SYS_SOCKET", "SYS_TIME")),
                       "CLOCK_GETTIME", "OPEN_MEMSTREAM", "GETPAGESIZE", "MMAP"),
    "MMDB_LITTLE_ENDIAN 1", "MMDB_UINT128_IS_BYTE_ARRAY 0",
    *_package("libmaxminddb", "1.7.1", bugreport="support@maxmind.com"),
)
LIBMAXMINDDB_CONFIG_H = (
    "#ifndef MAXMINDDB_CONFIG_H\n#define MAXMINDDB_CONFIG_H\n"
    + _defines("MMDB_UINT128_USING_MODE 0", "MMDB_UINT128_IS_BYTE_ARRAY 0") + "#endif\n"
)

#: libsrtp2's crypto/include/config.h as configure writes it from config_in.h with debian/rules' --enable-nss (so GCM,
#: and the NSS back ends) on x86-64 (CPU_CISC, HAVE_X86); libpcap-dev is a <!nocheck> build dependency (HAVE_PCAP).
LIBSRTP2_CONFIG = _defines(
    *_AUTOCONF, *_have("ARPA_INET_H", "BYTESWAP_H", "NETINET_IN_H", "SYS_SOCKET_H", "SYS_UIO_H", "INET_ATON",
                       "INET_PTON", "SIGACTION", "SOCKET", "USLEEP", "NSS_H", "LIBNSPR4", "LIBNSS3", "PCAP",
                       "INT8_T", "INT16_T", "INT32_T", "UINT8_T", "UINT16_T", "UINT32_T", "UINT64_T"),
    "CPU_CISC 1", "HAVE_X86 1", "GCM 1", "NSS 1", "SIZEOF_UNSIGNED_LONG 8", "SIZEOF_UNSIGNED_LONG_LONG 8",
    *_package("libsrtp2", "2.5.0", bugreport="https://github.com/cisco/libsrtp/issues", automake=False),
)

#: tre's config.h and lib/tre-config.h (configure's defaults: approximate matching and agrep, wide characters and
#: multibyte, alloca, NLS with glibc's gettext, TRE's own regex ABI), and the part of it tre-config.h.in takes.
_TRE_CONFIG_H = ("HAVE_SYS_TYPES_H 1", "HAVE_WCHAR_H 1", "TRE_APPROX 1", "TRE_MULTIBYTE 1", "TRE_WCHAR 1",
                 'TRE_VERSION "0.8.0"', "TRE_VERSION_1 0", "TRE_VERSION_2 8", "TRE_VERSION_3 0")
TRE_CONFIG = _defines(
    *_AUTOCONF, *_TRE_CONFIG_H, "_GNU_SOURCE 1", "NDEBUG 1", "ENABLE_NLS 1", "TRE_USE_ALLOCA 1",
    "TRE_REGEX_T_FIELD value",
    *_have("ALLOCA", "ALLOCA_H", "DCGETTEXT", "GETTEXT", "ICONV", "GETOPT_H", "GETOPT_LONG", "ISASCII", "ISBLANK",
           "WCTYPE_H", "WCHAR_T", "WINT_T", "MBSTATE_T", "ISWASCII", "ISWBLANK", "ISWCTYPE", "ISWLOWER", "ISWUPPER",
           "TOWLOWER", "TOWUPPER", "WCSCHR", "WCSCPY", "WCSLEN", "WCSNCPY", "WCSRTOMBS", "WCSTOMBS", "WCTYPE",
           "MBRTOWC", "MBTOWC"),
    *_package("tre", "0.8.0", bugreport="tre-general@lists.laurikari.net"),
)

#: libtasn1-6's config.h: configure's findings that the compiled sources test, and the gnulib macros of its verbatim
#: part as they come out under clang (inline as C99's; no __malloc__ (f, i), a GCC 11 attribute). gnulib's replacement
#: headers (stdio.h, unistd.h and the like, written from *.in.h) are not written but for a part of limits.h (below): on
#: glibc they only #include_next the system's, and glibc needs none of the replacement functions.
LIBTASN1_CONFIG = _defines(
    *_AUTOCONF, *_SYSTEM_EXTENSIONS, *_have("ALLOCA", "ALLOCA_H", "VARIABLE_SIZE_ARRAYS", "STRUCT_STAT_ST_ATIM_TV_NSEC",
                                            "CLOCK_GETTIME", "GETTIMEOFDAY", "EXPLICIT_BZERO", "LIMITS_H",
                                            "SYS_TIME_H", "STDBOOL_H", "UNSIGNED_LONG_LONG_INT", "VISIBILITY"),
    "SIZEOF_UNSIGNED_INT 4", "SIZEOF_UNSIGNED_LONG_INT 8",
    "_GL_INLINE inline", "_GL_EXTERN_INLINE extern inline", "_GL_INLINE_HEADER_BEGIN", "_GL_INLINE_HEADER_END",
    "_GL_ATTRIBUTE_CONST __attribute__ ((__const__))", "_GL_ATTRIBUTE_PURE __attribute__ ((__pure__))",
    "_GL_ATTRIBUTE_MALLOC __attribute__ ((__malloc__))", "_GL_ATTRIBUTE_DEALLOC(f, i)",
    "_GL_ATTRIBUTE_ALLOC_SIZE(args) __attribute__ ((__alloc_size__ args))",
    "_GL_CMP(n1, n2) (((n1) > (n2)) - ((n1) < (n2)))",
    "_GL_ATTRIBUTE_DEALLOC_FREE _GL_ATTRIBUTE_DEALLOC (free, 1)", "_GL_ATTRIBUTE_UNUSED __attribute__ ((__unused__))",
    "_GL_ATTRIBUTE_MAYBE_UNUSED _GL_ATTRIBUTE_UNUSED", "_GL_UNUSED _GL_ATTRIBUTE_MAYBE_UNUSED",
    "_GL_ATTRIBUTE_NODISCARD __attribute__ ((__warn_unused_result__))",
    "_GL_ATTRIBUTE_SENTINEL(pos) __attribute__ ((__sentinel__ pos))",
    "_GL_ATTRIBUTE_FORMAT(spec) __attribute__ ((__format__ spec))",
    "_GL_ATTRIBUTE_NOTHROW __attribute__ ((__nothrow__))",
    "_GL_ARG_NONNULL(params) __attribute__ ((__nonnull__ params))",
    *_package("libtasn1", "4.19.0", bugreport="help-libtasn1@gnu.org", url="https://www.gnu.org/software/libtasn1/"),
)

#: lib/gl/limits.h, which configure writes from limits.in.h (glibc 2.36's has no BOOL_WIDTH): here the part the
#: library uses, WORD_BIT for a file that #includes <limits.h> before config.h and so without _GNU_SOURCE.
LIBTASN1_LIMITS_H = "#include_next <limits.h>\n#ifndef WORD_BIT\n#define WORD_BIT 32\n#endif\n"

#: pcre3's config.h (debian/rules: --enable-utf8 --enable-unicode-properties --enable-jit --enable-pcre16
#: --enable-pcre32, and configure's defaults: newline LF, 2-byte links, no zlib or bzip2 for pcregrep, no readline).
PCRE3_CONFIG = _defines(
    *_AUTOCONF, *_have("LIMITS_H", "DIRENT_H", "BCOPY", "MEMMOVE", "STRERROR", "STRING", "BITS_TYPE_TRAITS_H",
                       "LONG_LONG", "UNSIGNED_LONG_LONG", "STRTOLL", "STRTOQ", "STRTOIMAX", "PTHREAD",
                       "PTHREAD_PRIO_INHERIT", "VISIBILITY"),
    *(f"SUPPORT_{s}" for s in ("PCRE8", "PCRE16", "PCRE32", "JIT", "PCREGREP_JIT", "UTF", "UCP")),
    "NEWLINE 10", "LINK_SIZE 2", "POSIX_MALLOC_THRESHOLD 10", "PARENS_NEST_LIMIT 250", "MATCH_LIMIT 10000000",
    "MATCH_LIMIT_RECURSION MATCH_LIMIT", "MAX_NAME_SIZE 32", "MAX_NAME_COUNT 10000", "PCREGREP_BUFSIZE 20480",
    *(f'{m} {"extern " if m.endswith("DECL") or m.startswith("PCREPOSIX") else ""}'
      '__attribute__ ((visibility ("default")))'
      for m in ("PCRE_EXP_DECL", "PCRE_EXP_DEFN", "PCRE_EXP_DATA_DEFN", "PCREPOSIX_EXP_DECL", "PCREPOSIX_EXP_DEFN",
                "PCRECPP_EXP_DECL", "PCRECPP_EXP_DEFN")),
    *_package("pcre", "8.39", name="PCRE"),
)

#: Keyword arguments of each package's `Recipe`, by Debian source package.
RECIPES: dict[str, dict] = {
    # yajl: the library (the shared build's YAJL_SHARED), json_reformat, json_verify, the example, the perf test and
    # the two test programs, with CMakeLists.txt's -std=c99 and debian/rules' -fvisibility=hidden.
    "yajl": dict(
        flags=("-std=c99", "-fvisibility=hidden", "-ivfsoverlay", "{src}/yajl-include.yaml", "-I{src}/include"),
        generated={"src/api/yajl_version.h": YAJL_VERSION_H, "yajl-include.yaml": YAJL_INCLUDE},
        file_flags={"src/*": ("-DYAJL_BUILD", "-DYAJL_SHARED")},
    ),
    # libmaxminddb: the library, mmdblookup, the test programs of `make check` with their helper, and the bundled
    # libtap with the test programs its Makefile's `all` builds (t/Makefile.am's all-local); configure adds
    # -fms-extensions. Left out: nothing (src/data-pool.c is also the test-data-pool program, with -DTEST_DATA_POOL: a
    # module is one file, so only the library's build).
    "libmaxminddb": dict(
        subdirs=("src", "bin", "t"),
        # t/'s -I src and libtap's -I . for every file (no header names clash).
        flags=("-DHAVE_CONFIG_H", "-I{src}", "-I{src}/include", "-I{src}/src", "-I{src}/t/libtap", "-fms-extensions"),
        generated={"config.h": LIBMAXMINDDB_CONFIG, "include/maxminddb_config.h": LIBMAXMINDDB_CONFIG_H},
        file_flags={"bin/*": ("-pthread",), "t/threads_t.c": ("-pthread",), "t/libtap/*": ("-fPIC",)},
    ),
    # utf8proc: the library and the programs of `make check`: the ten tests and bench/'s benchmark, with the Makefile's
    # -std=c99 (the library and tests also get its -fPIC and -DUTF8PROC_EXPORTS). Left out: utf8proc_data.c (the
    # tables utf8proc.c #includes), the fuzzer's two drivers (only CMake's fuzzing build) and bench/'s ICU and
    # libunistring comparisons (other targets than `make check`'s, and their headers are not installed).
    "utf8proc": dict(
        flags=("-std=c99",),
        file_flags={"[!b]*": ("-fPIC", "-DUTF8PROC_EXPORTS"), "bench/*": ("-I..",),  # relative, as bench/Makefile's
                    "test/misc.c": ('-DUNICODE_VERSION="15.0.0"',)},
        exclude=("utf8proc_data.c", "test/fuzz*.c", "bench/icu.c", "bench/unistring.c"),
    ),
    # libuv1: the library as Makefile.am builds it on Linux (configure's -std=gnu89, -fvisibility=hidden and -pthread;
    # _GNU_SOURCE), and the benchmark program (CMake's uv_run_benchmarks_a: the runner, its two servers and the 18
    # benchmarks). Left out: the other systems' sources; random-getentropy.c (not in Linux's list); run-tests.c and
    # its 167 test-*.c, which would take the package past the corpus's ~150-module size (the runner and the servers
    # they share with the benchmarks are in); the Windows runner; docs/code/, the guide's examples, which no build
    # compiles; and src/inet.c, the ISC's inet_ntop and inet_pton (Paul Vixie's), as c-ares's inet_ntop.c and
    # inet_net_pton.c are (c-ares is an evaluation package).
    "libuv1": dict(
        subdirs=("src", "test"),
        flags=("-std=gnu89", "-fvisibility=hidden", "-pthread", "-D_GNU_SOURCE", "-I{src}/include", "-I{src}/src",
               "-I{src}/src/unix"),
        exclude=("src/win/*", "src/inet.c", "test/test-*.c", "test/runner-win.c", "test/run-tests.c",
                 *(f"src/unix/{f}.c" for f in (
                     "aix", "aix-common", "bsd-ifaddrs", "bsd-proctitle", "cygwin", "darwin", "darwin-proctitle",
                     "freebsd", "fsevents", "haiku", "hurd", "ibmi", "kqueue", "netbsd", "no-fsevents",
                     "no-proctitle", "openbsd", "os390", "os390-proctitle", "os390-syscalls", "posix-hrtime",
                     "posix-poll", "pthread-fixes", "qnx", "random-getentropy", "sunos", "sysinfo-loadavg",
                     "sysinfo-memory"))),
    ),
    # libcsv: the library, the check program of `make check` and the four examples (their Makefile builds them against
    # the installed csv.h, here the tree's). No config header: configure has no AC_CONFIG_HEADERS.
    "libcsv": dict(flags=("-I{src}",)),
    # libsrtp2: the library with debian/rules' NSS crypto engine and -D_REENTRANT, and the test programs of its
    # `test` target (debian/rules builds it), with NSS's pkg-config flags. Left out: the built-in AES, HMAC and SHA-1
    # (aes.c, aes_icm.c, hmac.c, sha1.c) and their two test programs (aes_calc, sha1_driver), which the Makefile
    # builds only without an external crypto engine; the OpenSSL and mbed TLS back ends; rtp_decoder.c (Debian's build
    # has libpcap, but its headers are not installed here) and the fuzzer.
    "libsrtp2": dict(
        subdirs=("srtp", "crypto", "test"),
        flags=("-DHAVE_CONFIG_H", "-D_REENTRANT", "-fPIC", "-I{src}/include", "-I{src}/crypto/include",
               "-I/usr/include/nss", "-I/usr/include/nspr"),
        generated={"crypto/include/config.h": LIBSRTP2_CONFIG},
        file_flags={"crypto/test/*": ("-I../../test",)},  # relative (as the Makefile's -I$(srcdir)/test)
        exclude=("crypto/cipher/aes.c", "crypto/cipher/aes_icm.c", "crypto/hash/hmac.c", "crypto/hash/sha1.c",
                 "crypto/test/aes_calc.c", "crypto/test/sha1_driver.c", "crypto/*_ossl.c", "crypto/*_mbedtls.c",
                 "test/rtp_decoder.c"),
    ),
    # hiredis: the library and its test program (the Makefile's .c.o rule: -std=c99 -pedantic, -fPIC) and the plain
    # example. Left out: dict.c (#included by async.c) and the event-loop examples (libevent, libev, GLib and ivykis
    # headers are not installed; ae, libuv and macOS need a Redis tree, a libuv tree and CoreFoundation).
    "hiredis": dict(
        flags=("-fPIC",),
        # hiredis.c passes a size_t callback for an int one (CVE-2021-32765's patch): gcc 12, Debian's compiler, only
        # warns.
        file_flags={"[!e]*": ("-std=c99",), "hiredis.c": ("-Wno-error=incompatible-function-pointer-types",)},
        exclude=("dict.c", "examples/example-?*.c"),
    ),
    # tre: the library, tre-agrep and the test programs (retest and randtest with the malloc-debugging xmalloc.c, as
    # the non-debug build's libxtre; test-str-source; bench, an EXTRA_PROGRAMS target). Left out: the Python binding
    # (python/, not in Debian's build).
    "tre": dict(
        subdirs=("lib", "src", "tests"),
        flags=("-DHAVE_CONFIG_H", "-I{src}", "-I{src}/lib"),
        generated={"config.h": TRE_CONFIG, "lib/tre-config.h": _defines(*_TRE_CONFIG_H)},
        file_flags={"src/agrep.c": ('-DLOCALEDIR="/usr/share/locale"',),
                    "lib/xmalloc.c": ("-DMALLOC_DEBUGGING",), "tests/r*": ("-DMALLOC_DEBUGGING",)},
    ),
    # libtasn1-6: the library with its gnulib part (c-ctype.c; unistd.c, inline functions only), asn1Parser, asn1Coding
    # and asn1Decoding (with benchmark.c) and the gnulib modules glibc does not make conditional away, and the test
    # programs of `make check`; configure's -fvisibility=hidden for the library and the tests. Left out: ASN1.c, bison's
    # output for ASN1.y, whose yyparse is bison's skeleton as libconfig's grammar.c (an evaluation package) has it; the
    # gnulib replacements glibc 2.36 does not need (getopt.c and getopt1.c are also glibc's own getopt, copied); the
    # test CVE-2018-1000654.c (its *_asn1_tab.h are written by the built asn1Parser); the examples and the fuzzers
    # (no target of Debian's build) and windows/.
    "libtasn1-6": dict(
        subdirs=("lib", "src", "tests"),
        flags=("-DHAVE_CONFIG_H", "-I{src}", "-I{src}/lib/includes", "-I{src}/lib/gl"),
        generated={"config.h": LIBTASN1_CONFIG, "lib/gl/limits.h": LIBTASN1_LIMITS_H},
        file_flags={"lib/*": ("-DASN1_BUILDING", "-fvisibility=hidden"), "tests/*": ("-fvisibility=hidden", "-I../lib"),
                    "src/*": ("-I../src/gl",)},
        exclude=("lib/ASN1.c", "lib/gl/strverscmp.c", "tests/CVE-2018-1000654.c",
                 *(f"src/gl/{f}.c" for f in (
                     "close", "dup2", "explicit_bzero", "fcntl", "fopen", "free", "fstat", "ftell", "ftello",
                     "getdtablesize", "getopt", "getopt1", "gettimeofday", "lseek", "malloc", "msvc-inval",
                     "msvc-nothrow", "open", "realloc", "stat", "stat-w32", "stdio-read", "stdio-write"))),
    ),
    # libscrypt: the library and the reference program of its Makefile's `all` (main.c and the hex converter), with the
    # Makefile's -fPIC. sha256.c is Colin Percival's, from scrypt, and b64.c the ISC's base64 (BIND's): copies of
    # no evaluation package's code.
    "libscrypt": dict(flags=("-fPIC",)),
    # pcre3: the 8-, 16- and 32-bit libraries with the JIT, libpcreposix, pcretest (with the three printint.c),
    # pcregrep, pcre_jit_test and pcredemo, the documentation's example; configure's -fvisibility=hidden for the
    # libraries and -pthread (the JIT's). pcre.h is pcre.h.generic (the same text, for 8.39), pcre_chartables.c the
    # Makefile's link to pcre_chartables.c.dist. Left out: sljit/ (#included by pcre_jit_compile.c) and dftables.c
    # (built only with --enable-rebuild-chartables; it #includes pcre_maketables.c) and debian/jit-test.c (debian/rules'
    # probe for --enable-jit).
    "pcre3": dict(
        flags=("-DHAVE_CONFIG_H", "-pthread", "-I{src}"),
        generated={"config.h": PCRE3_CONFIG},
        copies={"pcre.h": "pcre.h.generic", "pcre_chartables.c": "pcre_chartables.c.dist"},
        file_flags={p: ("-fvisibility=hidden",) for p in (  # the libraries' sources (not printint.c, pcretest's)
            "pcre_[!jp]*.c", "pcre16_[!jp]*.c", "pcre32_[!jp]*.c", "pcre*_jit_compile.c", "pcreposix.c")},
        exclude=("sljit/*", "dftables.c", "debian/*"),
    ),
}
