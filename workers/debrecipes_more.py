"""The recipes of eight more C packages the farm had never compiled: seven train the policy since 2026-11-26, and
speexdsp is in no split, as two of its files are near-copies of speex's, an evaluation package (workers/packages.py).

zopfli (Deflate compression), xxhash (non-cryptographic hashing), lzlib (lzip compression), speexdsp (audio
preprocessing and resampling), openjpeg2 (JPEG 2000 codec), libzip (zip archives), libevent (event loop, DNS and
HTTP) and libdivsufsort (suffix sorting).
Plain data, as workers/debrecipes_fresh.py: each entry is the keyword arguments of a `workers.debrecipes.Recipe`,
which `workers/debrecipes.py` builds and merges into `RECIPES` (this module imports only debrecipes_eval's helpers
and debrecipes_fresh's autoconf defines, so there is no import cycle). The headers are those Debian 12's build
writes on x86-64, the defines those it passes.
"""

from __future__ import annotations

from workers.debrecipes_eval import _defines, _have, _package
from workers.debrecipes_fresh import _AUTOCONF

#: speexdsp's config.h: the floating-point build (so smallft, not KISS FFT), SSE and SSE2 found in x86-64's
#: default CFLAGS, C99 variable-length arrays, ELF visibility; AM_INIT_AUTOMAKE has no-define.
SPEEXDSP_CONFIG = _defines(
    *_AUTOCONF, "HAVE_SYS_SOUNDCARD_H 1", 'EXPORT __attribute__((visibility("default")))', "FLOATING_POINT",
    "USE_SSE", "USE_SSE2", "USE_SMALLFT", "VAR_ARRAYS",
    *(f"SIZEOF_{t} {n}" for t, n in (("INT", 4), ("INT16_T", 2), ("INT32_T", 4), ("LONG", 8), ("SHORT", 2),
                                     ("UINT16_T", 2), ("UINT32_T", 4), ("U_INT16_T", 2), ("U_INT32_T", 4))),
    *_package("speexdsp", "1.2.1", bugreport="speex-dev@xiph.org", automake=False),
)
#: include/speex/speexdsp_config_types.h as configure writes it from its template (stdint.h found).
SPEEXDSP_CONFIG_TYPES = (
    "#ifndef __SPEEX_TYPES_H__\n#define __SPEEX_TYPES_H__\n#include <stdint.h>\ntypedef int16_t spx_int16_t;\n"
    "typedef uint16_t spx_uint16_t;\ntypedef int32_t spx_int32_t;\ntypedef uint32_t spx_uint32_t;\n#endif\n"
)

#: openjpeg2's src/lib/openjp2/opj_config.h and opj_config_private.h as CMake writes them (64-bit off_t and
#: fseeko without any define; malloc.h, posix_memalign and memalign found, aligned_alloc not checked for).
OPENJPEG2_CONFIG = _defines("OPJ_HAVE_STDINT_H 1", "OPJ_VERSION_MAJOR 2", "OPJ_VERSION_MINOR 5", "OPJ_VERSION_BUILD 0")
OPENJPEG2_CONFIG_PRIVATE = _defines(
    "OPJ_HAVE_INTTYPES_H 1", 'OPJ_PACKAGE_VERSION "2.5.0"', "OPJ_HAVE_FSEEKO ON", "OPJ_HAVE_MALLOC_H",
    "OPJ_HAVE_MEMALIGN", "OPJ_HAVE_POSIX_MEMALIGN",
) + ("#if !defined(_POSIX_C_SOURCE)\n#if defined(OPJ_HAVE_FSEEKO) || defined(OPJ_HAVE_POSIX_MEMALIGN)\n"
     "#define _POSIX_C_SOURCE 200112L\n#endif\n#endif\n")
#: src/bin/common/opj_apps_config.h: Debian's build has libpng, libtiff and Little CMS 2.
OPENJPEG2_APPS_CONFIG = '#include "opj_config_private.h"\n' + _defines(
    "OPJ_HAVE_LIBPNG 1", "OPJ_HAVE_PNG_H 1", "OPJ_HAVE_LIBTIFF 1", "OPJ_HAVE_TIFF_H 1", "OPJ_HAVE_LIBLCMS2",
    "OPJ_HAVE_LCMS2_H")

#: libzip's config.h as CMake writes it from cmake-config.h.in: OpenSSL for WinZip AES (Debian's build depends on
#: libssl-dev, not GnuTLS), bzip2 but no xz (liblzma-dev is no build dependency), glibc 2.36's arc4random, FICLONERANGE.
LIBZIP_CONFIG = (
    "#ifndef HAD_CONFIG_H\n#define HAD_CONFIG_H\n#ifndef _HAD_ZIPCONF_H\n#include \"zipconf.h\"\n#endif\n" + _defines(
        *_have("ARC4RANDOM", "CRYPTO", "FICLONERANGE", "FILENO", "FSEEKO", "FTELLO", "LIBBZ2", "LOCALTIME_R",
               "OPENSSL", "SNPRINTF", "STRCASECMP", "STRDUP", "STRTOLL", "STRTOULL", "STDBOOL_H",
               "STRINGS_H", "UNISTD_H", "FTS_H", "SHARED"),
        "SIZEOF_OFF_T 8", "SIZEOF_SIZE_T 8", 'PACKAGE "libzip"', 'VERSION "1.7.3"')
    + "#endif\n"
)
#: zipconf.h from cmake-zipconf.h.in: inttypes.h's types, and _Nullable defined away (gcc, which Debian builds with,
#: fails the check for it).
LIBZIP_ZIPCONF = (
    "#ifndef _HAD_ZIPCONF_H\n#define _HAD_ZIPCONF_H\n" + _defines(
        'LIBZIP_VERSION "1.7.3"', "LIBZIP_VERSION_MAJOR 1", "LIBZIP_VERSION_MINOR 7", "LIBZIP_VERSION_MICRO 3",
        "_Nullable", "_Nonnull")
    + "#if !defined(__STDC_FORMAT_MACROS)\n#define __STDC_FORMAT_MACROS 1\n#endif\n#include <inttypes.h>\n"
    + "".join(f"typedef {u}int{n}_t zip_{u}int{n}_t;\n" for n in (8, 16, 32, 64) for u in ("", "u"))
    + _defines(
        "ZIP_INT8_MIN (-ZIP_INT8_MAX-1)", "ZIP_INT8_MAX 0x7f", "ZIP_UINT8_MAX 0xff",
        "ZIP_INT16_MIN (-ZIP_INT16_MAX-1)", "ZIP_INT16_MAX 0x7fff", "ZIP_UINT16_MAX 0xffff",
        "ZIP_INT32_MIN (-ZIP_INT32_MAX-1L)", "ZIP_INT32_MAX 0x7fffffffL", "ZIP_UINT32_MAX 0xffffffffLU",
        "ZIP_INT64_MIN (-ZIP_INT64_MAX-1LL)", "ZIP_INT64_MAX 0x7fffffffffffffffLL",
        "ZIP_UINT64_MAX 0xffffffffffffffffULL")
    + "#endif\n"
)
#: The error strings and types lib/CMakeLists.txt extracts from zip.h's ZIP_ER_* comments (N: none, S: system, Z: zlib).
_LIBZIP_ERRORS = (
    ("N", "No error"), ("N", "Multi-disk zip archives not supported"), ("S", "Renaming temporary file failed"),
    ("S", "Closing zip archive failed"), ("S", "Seek error"), ("S", "Read error"), ("S", "Write error"),
    ("N", "CRC error"), ("N", "Containing zip archive was closed"), ("N", "No such file"),
    ("N", "File already exists"), ("S", "Can't open file"), ("S", "Failure to create temporary file"),
    ("Z", "Zlib error"), ("N", "Malloc failure"), ("N", "Entry has been changed"),
    ("N", "Compression method not supported"), ("N", "Premature end of file"), ("N", "Invalid argument"),
    ("N", "Not a zip archive"), ("N", "Internal error"), ("N", "Zip archive inconsistent"), ("S", "Can't remove file"),
    ("N", "Entry has been deleted"), ("N", "Encryption method not supported"), ("N", "Read-only archive"),
    ("N", "No password provided"), ("N", "Wrong password provided"), ("N", "Operation not supported"),
    ("N", "Resource still in use"), ("S", "Tell error"), ("N", "Compressed data invalid"),
    ("N", "Operation cancelled"),
)
#: zip_err_str.c as lib/CMakeLists.txt writes it (into the build directory; here next to the library's sources).
LIBZIP_ERR_STR = (
    '#include "zipint.h"\n\nconst char * const _zip_err_str[] = {\n'
    + "".join(f'    "{m}",\n' for _, m in _LIBZIP_ERRORS)
    + "};\n\nconst int _zip_nerr_str = sizeof(_zip_err_str)/sizeof(_zip_err_str[0]);\n\n"
    "#define N ZIP_ET_NONE\n#define S ZIP_ET_SYS\n#define Z ZIP_ET_ZLIB\n\nconst int _zip_err_type[] = {\n"
    + "".join(f"    {t},\n" for t, _ in _LIBZIP_ERRORS) + "};\n"
)

#: libevent's config.h (configure on glibc 2.36: arc4random and arc4random_buf but not _addrandom, no strlcpy and
#: no sysctl; epoll, poll and select back ends; pthreads; OpenSSL, Debian's one build dependency, and no zlib).
LIBEVENT_DEFINES = (
    *_AUTOCONF,
    *_have(*(f"{h}_H" for h in ("ARPA_INET", "FCNTL", "IFADDRS", "NETDB", "NETINET_IN", "NETINET_TCP", "SYS_UN",
                                "POLL", "STDARG", "STDDEF", "SYS_EPOLL", "SYS_EVENTFD", "SYS_IOCTL", "SYS_MMAN",
                                "SYS_PARAM", "SYS_QUEUE", "SYS_RESOURCE", "SYS_SELECT", "SYS_SENDFILE", "SYS_SOCKET",
                                "SYS_TIME", "SYS_TIMERFD", "SYS_UIO", "SYS_WAIT", "SYS_RANDOM", "ERRNO",
                                "OPENSSL_SSL")),
           "ACCEPT4", "ARC4RANDOM", "ARC4RANDOM_BUF", "EVENTFD", "EPOLL_CREATE1", "FCNTL", "GETEGID", "GETEUID",
           "GETIFADDRS", "GETTIMEOFDAY", "MMAP", "NANOSLEEP", "PIPE", "PIPE2", "PUTENV", "SENDFILE", "SETENV",
           "SETRLIMIT", "SIGACTION", "SIGNAL", "SPLICE", "STRSEP", "STRTOK_R", "STRTOLL", "TIMERFD_CREATE", "UMASK",
           "UNSETENV", "USLEEP", "VASPRINTF", "GETRANDOM", "CLOCK_GETTIME", "GETNAMEINFO", "GETPROTOBYNUMBER",
           "GETSERVBYNAME", "INET_NTOP", "INET_PTON", "GETADDRINFO", "GETHOSTBYNAME_R", "GETHOSTBYNAME_R_6_ARG",
           "SELECT", "POLL", "EPOLL", "EPOLL_CTL", "SETFD", "TAILQFOREACH", "TIMERADD", "TIMERCLEAR", "TIMERCMP",
           "TIMERISSET", "FD_MASK", "SA_FAMILY_T", "STRUCT_ADDRINFO", "STRUCT_IN6_ADDR", "STRUCT_IN6_ADDR_S6_ADDR16",
           "STRUCT_IN6_ADDR_S6_ADDR32", "STRUCT_LINGER", "STRUCT_SOCKADDR_IN6", "STRUCT_SOCKADDR_STORAGE",
           "STRUCT_SOCKADDR_STORAGE_SS_FAMILY", "STRUCT_SOCKADDR_UN", "UINT8_T", "UINT16_T", "UINT32_T", "UINT64_T",
           "UINTPTR_T", "__func__", "__FUNCTION__", "OPENSSL", "PTHREADS"),
    *(f"SIZEOF_{t} {n}" for t, n in (("INT", 4), ("LONG", 8), ("LONG_LONG", 8), ("OFF_T", 8), ("PTHREAD_T", 8),
                                     ("SHORT", 2), ("SIZE_T", 8), ("TIME_T", 8), ("VOID_P", 8))),
    "TIME_WITH_SYS_TIME 1", "NUMERIC_VERSION 0x02010c00",
    *_package("libevent", "2.1.12-stable"),
)
#: include/event2/event-config.h: config.h through make-event-config.sed (EVENT__ before each capitalised macro but
#: STDC_HEADERS).
LIBEVENT_EVENT_CONFIG = (
    "#ifndef EVENT2_EVENT_CONFIG_H_INCLUDED_\n#define EVENT2_EVENT_CONFIG_H_INCLUDED_\n"
    + _defines(*(d if d.startswith("STDC_HEADERS") else f"EVENT__{d}" for d in LIBEVENT_DEFINES))
    + "#endif\n"
)
#: evconfig-private.h: what AC_USE_SYSTEM_EXTENSIONS defines on Linux (2.69's set: libevent's template has no more).
LIBEVENT_EVCONFIG_PRIVATE = (
    "#ifndef EVCONFIG_PRIVATE_H_INCLUDED_\n#define EVCONFIG_PRIVATE_H_INCLUDED_\n"
    + _defines("_ALL_SOURCE 1", "_GNU_SOURCE 1", "_POSIX_PTHREAD_SEMANTICS 1", "_TANDEM_SOURCE 1", "__EXTENSIONS__ 1")
    + "#endif\n"
)

#: libdivsufsort's include/config.h and lfs.h as CMake writes them (64-bit off_t, so fseeko and PRIdMAX).
LIBDIVSUFSORT_CONFIG = _defines(
    'PROJECT_VERSION_FULL "2.0.1"', *_have("INTTYPES_H", "STDDEF_H", "STDINT_H", "STDLIB_H", "STRING_H", "STRINGS_H",
                                           "MEMORY_H", "SYS_TYPES_H"), "INLINE inline")
LIBDIVSUFSORT_LFS = _defines("LFS_OFF_T off_t", "LFS_FOPEN fopen", "LFS_FTELL ftello", "LFS_FSEEK fseeko",
                             "LFS_PRId PRIdMAX", "PRIdOFF_T LFS_PRId")
#: include/divsufsort.h, CMake's substitution of divsufsort.h.cmake for the 32-bit index (its comments left out):
#: inttypes.h's types, and no __declspec for DIVSUFSORT_API.
_DIVSUFSORT_PROTOTYPES = (
    "saint_t divsufsort(const sauchar_t *T, saidx_t *SA, saidx_t n)",
    "saidx_t divbwt(const sauchar_t *T, sauchar_t *U, saidx_t *A, saidx_t n)",
    "const char *divsufsort_version(void)",
    "saint_t bw_transform(const sauchar_t *T, sauchar_t *U, saidx_t *SA, saidx_t n, saidx_t *idx)",
    "saint_t inverse_bw_transform(const sauchar_t *T, sauchar_t *U, saidx_t *A, saidx_t n, saidx_t idx)",
    "saint_t sufcheck(const sauchar_t *T, const saidx_t *SA, saidx_t n, saint_t verbose)",
    "saidx_t sa_search(const sauchar_t *T, saidx_t Tsize, const sauchar_t *P, saidx_t Psize, const saidx_t *SA, "
    "saidx_t SAsize, saidx_t *left)",
    "saidx_t sa_simplesearch(const sauchar_t *T, saidx_t Tsize, const saidx_t *SA, saidx_t SAsize, saint_t c, "
    "saidx_t *left)",
)
LIBDIVSUFSORT_H = (
    "#ifndef _DIVSUFSORT_H\n#define _DIVSUFSORT_H 1\n#include <inttypes.h>\n#ifndef DIVSUFSORT_API\n"
    "# define DIVSUFSORT_API\n#endif\ntypedef uint8_t sauchar_t;\ntypedef int32_t saint_t;\ntypedef int32_t saidx_t;\n"
    + _defines("SAUCHAR_T", "SAINT_T", "SAIDX_T", "PRIdSAINT_T PRId32", "PRIdSAIDX_T PRId32")
    + "".join(f"DIVSUFSORT_API {p};\n" for p in _DIVSUFSORT_PROTOTYPES) + "#endif\n"
)

#: Keyword arguments of each package's `Recipe`, by Debian source package.
RECIPES: dict[str, dict] = {
    # zopfli: the library and the zopfli command with its Makefile's -ansi (its CFLAGS override Debian's); zopflipng
    # and lodepng are C++.
    "zopfli": dict(subdirs=("src/zopfli",), flags=("-ansi",)),
    # xxhash: the library (xxhash.c, and the x86 dispatcher debian/rules turns on with DISPATCH=1), xxhsum and the
    # programs `make test` builds: tests/'s multi-include and Unicode tests, the hash benchmark and the collision
    # tester (its sort.cc is C++). ppc_define.c is a compile test for PowerPC's AltiVec keywords.
    "xxhash": dict(
        file_flags={"cli/*": ("-DXXHSUM_DISPATCH=1",), "tests/bench/*": ("-std=c99",),
                    "tests/collisions/*": ("-std=c99", "-pthread", "-Iallcodecs")},  # relative, as in its Makefile
        exclude=("tests/ppc_define.c",),
    ),
    # lzlib: the library, minilzip and the three programs of `make check`; lzlib.c #includes the codec's sources.
    "lzlib": dict(file_flags={"minilzip.c": ('-DPROGVERSION="1.13"',)},
                  exclude=("cbuffer.c", "decoder.c", "encoder_base.c", "encoder.c", "fast_encoder.c")),
    # speexdsp: the library and its five example programs (--enable-examples is the default); the KISS FFT is the
    # fixed-point build's.
    "speexdsp": dict(
        subdirs=("libspeexdsp",),
        flags=("-DHAVE_CONFIG_H", "-I{src}", "-I{src}/include", "-I{src}/include/speex", "-fvisibility=hidden"),
        generated={"config.h": SPEEXDSP_CONFIG, "include/speex/speexdsp_config_types.h": SPEEXDSP_CONFIG_TYPES},
        exclude=("libspeexdsp/kiss_fft*.c",),
    ),
    # openjpeg2: libopenjp2 and libopenjpip (the client library; BUILD_JPIP) and the programs of BUILD_CODEC and
    # BUILD_JPIP that need no -dev package missing here. Left out: the unit tests and LUT generators (BUILD_UNIT_TESTS
    # and BUILD_LUTS_GENERATOR are off); the JPIP server's opj_server.c and auxtrans_manager.c (FastCGI and curl);
    # opj_decompress.c, color.c and converttif.c (Little CMS and libtiff headers, not installed); the bundled
    # thirdparty/ libraries (BUILD_THIRDPARTY off), the Java binding, the fuzzers and the test tools.
    "openjpeg2": dict(
        subdirs=("src/lib/openjp2", "src/lib/openjpip", "src/bin/common", "src/bin/jp2", "src/bin/jpip"),
        flags=("-I{src}/src/lib/openjp2", "-I{src}/src/lib/openjpip", "-I{src}/src/bin/common", "-I{src}/src/bin/jp2",
               "-fvisibility=hidden", "-pthread"),  # debian/rules appends -fvisibility=hidden to CFLAGS
        generated={"src/lib/openjp2/opj_config.h": OPENJPEG2_CONFIG,
                   "src/lib/openjp2/opj_config_private.h": OPENJPEG2_CONFIG_PRIVATE,
                   "src/bin/common/opj_apps_config.h": OPENJPEG2_APPS_CONFIG},
        file_flags={"src/lib/*": ("-DUSE_JPIP",), "src/lib/openjp2/*": ("-DMUTEX_pthread",)},
        exclude=(*(f"src/lib/openjp2/{f}.c" for f in ("bench_dwt", "test_sparse_array", "t1_generate_luts",
                                                        "t1_ht_generate_luts")),
                 "src/lib/openjpip/auxtrans_manager.c", "src/bin/jpip/opj_server.c", "src/bin/jp2/opj_decompress.c",
                 "src/bin/common/color.c", "src/bin/jp2/converttif.c"),
    ),
    # libzip: the library, zipcmp, zipmerge and ziptool, the regression programs and the in-memory example, as CMake
    # builds them on Linux. Left out: the Windows file and random sources, the crypto back ends but OpenSSL's, xz
    # (no liblzma-dev in the build), getopt.c (glibc has getopt), the malloc-failure preload (commented out of
    # regress/CMakeLists.txt) and the Windows example.
    "libzip": dict(
        subdirs=("lib", "src", "regress", "examples"),
        flags=("-I{src}", "-I{src}/lib", "-I{src}/src"),
        generated={"config.h": LIBZIP_CONFIG, "zipconf.h": LIBZIP_ZIPCONF, "lib/zip_err_str.c": LIBZIP_ERR_STR},
        file_flags={"lib/*": ("-fvisibility=hidden",)},
        exclude=("lib/*win32*", "lib/zip_random_uwp.c", "lib/zip_crypto_[!o]*", "lib/zip_algorithm_xz.c",
                 "src/getopt.c", "regress/malloc.c", "examples/windows-open.c"),
    ),
    # libevent: libevent (core and extras), libevent_pthreads, libevent_openssl and the samples, with strlcpy.c (glibc
    # 2.36 has no strlcpy) and the epoll, poll and select back ends. Left out: the other systems' back ends and
    # Windows files, arc4random.c (#included by evutil_rand.c when libc has no arc4random) and epoll_sub.c (the
    # syscall wrappers for a libc without epoll), and test/ (debian/rules passes --disable-libevent-regress).
    "libevent": dict(
        flags=("-I{src}/compat", "-I{src}/include", "-fno-strict-aliasing", "-pthread"),
        generated={"include/event2/event-config.h": LIBEVENT_EVENT_CONFIG,
                   "evconfig-private.h": LIBEVENT_EVCONFIG_PRIVATE},
        exclude=("test/*", "cmake/*", "WIN32-Code/*", "win32select.c", "*iocp.c", "bufferevent_async.c",
                 "evthread_win32.c", "devpoll.c", "kqueue.c", "evport.c", "arc4random.c", "epoll_sub.c"),
    ),
    # libdivsufsort: the library and the five examples, with CMake's Release flags (debian/rules). The library's four
    # sources are also compiled a second time with -DBUILD_DIVSUFSORT64 for libdivsufsort64; a module is one file,
    # so the corpus has the 32-bit build only.
    "libdivsufsort": dict(
        subdirs=("lib", "examples"),
        flags=("-DHAVE_CONFIG_H=1", "-D__STDC_LIMIT_MACROS", "-D__STDC_CONSTANT_MACROS", "-D__STDC_FORMAT_MACROS",
               "-DNDEBUG", "-fomit-frame-pointer", "-I{src}/include"),
        generated={"include/config.h": LIBDIVSUFSORT_CONFIG, "include/lfs.h": LIBDIVSUFSORT_LFS,
                   "include/divsufsort.h": LIBDIVSUFSORT_H},
        file_flags={"lib/*": ("-DDIVSUFSORT_BUILD_DLL",),
                    "examples/*": ("-D_LARGEFILE_SOURCE", "-D_LARGE_FILES", "-D_FILE_OFFSET_BITS=64")},
    ),
}
