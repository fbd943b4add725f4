"""How each known Debian source package compiles without its build system: the recipes (data).

A recipe stands in for `./configure && make`: which directories hold the sources, the defines and
include paths the build would pass, the headers it would generate (`config.h` and the like,
written here from what configure finds on x86-64 Debian 12), the files it never compiles on this
target (other architectures, fragments #included by another source, C++), and the per-file flags
of SIMD variants. `workers/debsrc.py` fetches and applies them; `workers/packages.py` names which
packages train, validate and judge the inliner policy.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

from workers import debrecipes_data as data
from workers import debrecipes_eval as fresh
from workers import debrecipes_fresh as fresh2
from workers import debrecipes_media as media
from workers import debrecipes_more as more
from workers import debrecipes_train as train
from workers.debrecipes_eval import _defines


@dataclass(frozen=True)
class Recipe:
    """What a package's own build would provide: which sources, which defines, generated headers."""

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


#: LLVM configured for a corpus: a release build's flags, and the one backend the MIR datasets use
#: (x86-64), which also keeps the other targets' tablegen out of the prerequisites.
LLVM_CMAKE_DEFINES = ("CMAKE_BUILD_TYPE=Release", "LLVM_TARGETS_TO_BUILD=X86")
LLVM = Recipe(cmake="llvm", cmake_defines=LLVM_CMAKE_DEFINES, cxx=True)

_XZ_LZMA_DIRS = ("api", "common", "check", "lz", "rangecoder", "lzma", "delta", "simple")
_XZ_FILTERS = ("ARM", "ARMTHUMB", "ARM64", "DELTA", "IA64", "LZMA1", "LZMA2", "POWERPC", "SPARC", "X86")
_XZ_CONFIG = _defines(
    "_GNU_SOURCE 1", 'PACKAGE_NAME "XZ Utils"', 'PACKAGE_BUGREPORT "xz@tukaani.org"',
    'PACKAGE_URL "https://tukaani.org/xz/"', "ASSUME_RAM 128", "SIZEOF_SIZE_T 8", "HAVE_STDBOOL_H 1", "HAVE__BOOL 1",
    "HAVE_STDINT_H 1", "HAVE_INTTYPES_H 1", "HAVE_VISIBILITY 1", "MYTHREAD_POSIX 1", "HAVE_CLOCK_GETTIME 1",
    "HAVE_CLOCK_MONOTONIC 1", "HAVE_PTHREAD_CONDATTR_SETCLOCK 1", "HAVE_FUNC_ATTRIBUTE_CONSTRUCTOR 1",
    "HAVE_IMMINTRIN_H 1", "HAVE_USABLE_CLMUL 1", "HAVE_CPUID_H 1", "HAVE_BYTESWAP_H 1", "HAVE_BSWAP_16 1",
    "HAVE_BSWAP_32 1", "HAVE_BSWAP_64 1", "TUKLIB_CPUCORES_SCHED_GETAFFINITY 1", "TUKLIB_PHYSMEM_SYSCONF 1",
    "HAVE_GETOPT_LONG 1", "HAVE_FUTIMENS 1", "HAVE_POSIX_FADVISE 1", "HAVE_STRUCT_STAT_ST_ATIM_TV_NSEC 1",
    "HAVE_PROGRAM_INVOCATION_NAME 1", "HAVE_MBRTOWC 1", "HAVE_WCWIDTH 1", "HAVE_CHECK_CRC32 1", "HAVE_CHECK_CRC64 1",
    "HAVE_CHECK_SHA256 1", "HAVE_DECODERS 1", "HAVE_ENCODERS 1", "HAVE_LZIP_DECODER 1", "HAVE_MF_BT2 1",
    "HAVE_MF_BT3 1", "HAVE_MF_BT4 1", "HAVE_MF_HC3 1", "HAVE_MF_HC4 1",
    *(f"HAVE_{d}CODER_{f} 1" for d in ("DE", "EN") for f in _XZ_FILTERS),
)

_SODIUM_DEFINES = (
    "CONFIGURED=1", "NATIVE_LITTLE_ENDIAN=1", "HAVE_TI_MODE=1", "HAVE_C_VARARRAYS=1", "HAVE_ATOMIC_OPS=1",
    "HAVE_WEAK_SYMBOLS=1", "HAVE_INLINE_ASM=1", "HAVE_CPUID=1", "HAVE_RDRAND=1", "HAVE_MMINTRIN_H=1",
    "HAVE_EMMINTRIN_H=1", "HAVE_PMMINTRIN_H=1", "HAVE_TMMINTRIN_H=1", "HAVE_SMMINTRIN_H=1", "HAVE_AVXINTRIN_H=1",
    "HAVE_AVX2INTRIN_H=1", "HAVE_AVX512FINTRIN_H=1", "HAVE_WMMINTRIN_H=1", "HAVE_SYS_MMAN_H=1",
    "HAVE_SYS_RANDOM_H=1", "HAVE_LINUX_COMPATIBLE_GETRANDOM=1", "HAVE_GETRANDOM=1", "HAVE_GETENTROPY=1",
    "HAVE_MMAP=1", "HAVE_MLOCK=1", "HAVE_MADVISE=1", "HAVE_MPROTECT=1", "HAVE_POSIX_MEMALIGN=1", "HAVE_GETPID=1",
    "HAVE_NANOSLEEP=1", "HAVE_PTHREAD=1", "HAVE_ALLOCA_H=1", "HAVE_ALLOCA=1", "HAVE_EXPLICIT_BZERO=1",
)
_SODIUM_VERSION_H = (
    '#ifndef sodium_version_H\n#define sodium_version_H\n#include "export.h"\n'
    '#define SODIUM_VERSION_STRING "1.0.18"\n#define SODIUM_LIBRARY_VERSION_MAJOR 10\n'
    '#define SODIUM_LIBRARY_VERSION_MINOR 3\n#ifdef __cplusplus\nextern "C" {\n#endif\n'
    "SODIUM_EXPORT const char *sodium_version_string(void);\nSODIUM_EXPORT int sodium_library_version_major(void);\n"
    "SODIUM_EXPORT int sodium_library_version_minor(void);\nSODIUM_EXPORT int sodium_library_minimal(void);\n"
    "#ifdef __cplusplus\n}\n#endif\n#endif\n"
)
_SSSE3 = ("-msse2", "-mssse3")
_AVX2 = (*_SSSE3, "-msse4.1", "-mavx", "-mavx2")

_OPUS_DEFINES = ("OPUS_BUILD", "VAR_ARRAYS", "FLOAT_APPROX", "HAVE_LRINT", "HAVE_LRINTF", 'PACKAGE_VERSION="1.3.1"',
                 "OPUS_HAVE_RTCD", "CPU_INFO_BY_ASM", "OPUS_X86_MAY_HAVE_SSE", "OPUS_X86_MAY_HAVE_SSE2",
                 "OPUS_X86_MAY_HAVE_SSE4_1", "OPUS_X86_MAY_HAVE_AVX", "OPUS_X86_PRESUME_SSE", "OPUS_X86_PRESUME_SSE2")

_FLAC_CONFIG = _defines(
    "CPU_IS_BIG_ENDIAN 0", "CPU_IS_LITTLE_ENDIAN 1", "WORDS_BIGENDIAN 0", "ENABLE_64_BIT_WORDS 1",
    "FLAC__ALIGN_MALLOC_DATA 1", "FLAC__CPU_X86_64 1", "FLAC__HAS_X86INTRIN 1", "FLAC__USE_AVX 1",
    "FLAC__SYS_LINUX 1", "FLAC__HAS_OGG 0", "HAVE_BSWAP16 1", "HAVE_BSWAP32 1", "HAVE_BYTESWAP_H 1",
    "HAVE_CLOCK_GETTIME 1", "HAVE_CPUID_H 1", "HAVE_FSEEKO 1", "HAVE_GETAUXVAL 1", "HAVE_GETOPT_LONG 1",
    "HAVE_ICONV 1", "ICONV_CONST", "HAVE_INTTYPES_H 1", "HAVE_LANGINFO_CODESET 1", "HAVE_LROUND 1",
    "HAVE_STDINT_H 1", "HAVE_SYS_AUXV_H 1", "HAVE_SYS_IOCTL_H 1", "HAVE_SYS_PARAM_H 1", "HAVE_TERMIOS_H 1",
    "HAVE_TYPEOF 1", "HAVE_UNISTD_H 1", "HAVE_WCHAR_H 1", "HAVE_X86INTRIN_H 1", 'PACKAGE "flac"',
    'PACKAGE_NAME "flac"', 'PACKAGE_VERSION "1.4.2"', 'VERSION "1.4.2"', "SIZEOF_OFF_T 8", "SIZEOF_VOIDP 8",
    "_FILE_OFFSET_BITS 64",
)

# c-ares's ares_config.h as its CMakeLists.txt writes it on x86-64 Debian 12 (the #undef lines left out).
_CARES_CONFIG = _defines(
    "GETHOSTNAME_TYPE_ARG2 size_t", "GETNAMEINFO_QUAL_ARG1", "GETNAMEINFO_TYPE_ARG1 struct sockaddr *",
    "GETNAMEINFO_TYPE_ARG2 socklen_t", "GETNAMEINFO_TYPE_ARG46 socklen_t", "GETNAMEINFO_TYPE_ARG7 int",
    "GETSERVBYPORT_R_ARGS 6", "GETSERVBYNAME_R_ARGS 6", 'CARES_RANDOM_FILE "/dev/urandom"',
    *(f"HAVE_{h}_H" for h in (
        "ARPA_INET", "ARPA_NAMESER_COMPAT", "ARPA_NAMESER", "ASSERT", "DLFCN", "ERRNO", "FCNTL", "INTTYPES",
        "LIMITS", "MALLOC", "MEMORY", "NETDB", "NETINET_IN", "NETINET_TCP", "NET_IF", "SIGNAL", "STDBOOL",
        "STDINT", "STDLIB", "STRINGS", "STRING", "SYS_IOCTL", "SYS_PARAM", "SYS_SELECT", "SYS_SOCKET", "SYS_STAT",
        "SYS_TIME", "SYS_TYPES", "SYS_UIO", "TIME", "UNISTD")),
    *(f"HAVE_{f}" for f in (
        "AF_INET6", "BOOL_T", "CLOCK_GETTIME_MONOTONIC", "CONNECT", "FCNTL", "FCNTL_O_NONBLOCK", "FREEADDRINFO",
        "GETADDRINFO", "GETENV", "GETHOSTBYADDR", "GETHOSTBYNAME", "GETHOSTNAME", "GETNAMEINFO", "GETSERVBYPORT_R",
        "GETSERVBYNAME_R", "GETTIMEOFDAY", "IF_INDEXTONAME", "INET_NTOP", "INET_PTON", "IOCTL", "IOCTL_FIONBIO",
        "IOCTL_SIOCGIFADDR", "LL", "LONGLONG", "MSG_NOSIGNAL", "PF_INET6", "RECV", "RECVFROM", "SEND", "SETSOCKOPT",
        "SIG_ATOMIC_T", "SOCKADDR_IN6_SIN6_SCOPE_ID", "SOCKET", "STRCASECMP", "STRDUP", "STRNCASECMP",
        "STRUCT_ADDRINFO", "STRUCT_IN6_ADDR", "STRUCT_SOCKADDR_IN6", "STRUCT_SOCKADDR_STORAGE", "STRUCT_TIMEVAL",
        "WRITEV")),
    "RECVFROM_QUAL_ARG5", "RECVFROM_TYPE_ARG1 int", "RECVFROM_TYPE_ARG2 void *", "RECVFROM_TYPE_ARG2_IS_VOID 0",
    "RECVFROM_TYPE_ARG3 size_t", "RECVFROM_TYPE_ARG4 int", "RECVFROM_TYPE_ARG5 struct sockaddr *",
    "RECVFROM_TYPE_ARG5_IS_VOID 0", "RECVFROM_TYPE_ARG6 socklen_t *", "RECVFROM_TYPE_ARG6_IS_VOID 0",
    "RECVFROM_TYPE_RETV ssize_t", "RECV_TYPE_ARG1 int", "RECV_TYPE_ARG2 void *", "RECV_TYPE_ARG3 size_t",
    "RECV_TYPE_ARG4 int", "RECV_TYPE_RETV ssize_t", "SEND_QUAL_ARG2", "SEND_TYPE_ARG1 int",
    "SEND_TYPE_ARG2 void *", "SEND_TYPE_ARG3 size_t", "SEND_TYPE_ARG4 int", "SEND_TYPE_RETV ssize_t",
    "TIME_WITH_SYS_TIME",
)
_CARES_BUILD_H = (
    "#ifndef __CARES_BUILD_H\n#define __CARES_BUILD_H\n" + _defines(
        "CARES_TYPEOF_ARES_SOCKLEN_T socklen_t", "CARES_TYPEOF_ARES_SSIZE_T ssize_t", "CARES_HAVE_SYS_TYPES_H",
        "CARES_HAVE_SYS_SOCKET_H", "CARES_HAVE_ARPA_NAMESER_H", "CARES_HAVE_ARPA_NAMESER_COMPAT_H")
    + "#include <sys/types.h>\n#include <sys/socket.h>\n"
    "typedef CARES_TYPEOF_ARES_SOCKLEN_T ares_socklen_t;\ntypedef CARES_TYPEOF_ARES_SSIZE_T ares_ssize_t;\n#endif\n"
)

#: Packages the farm knows how to compile (without their build systems, but for LLVM's).
RECIPES: dict[str, Recipe] = {
    "zlib": Recipe(flags=("-DHAVE_UNISTD_H", "-D_LARGEFILE64_SOURCE=1"), subdirs=(".",),
                   exclude=("contrib/minizip/iowin32.c",)),  # minizip's Windows file API
    "lua5.4": Recipe(
        subdirs=("src",),
        flags=("-DLUA_USE_LINUX", "-DLUA_COMPAT_5_3"),
        # debian/rules generates this header; its one definition is all luaconf.h needs.
        generated={"src/lua5.4-deb-multiarch.h": '#define DEB_HOST_MULTIARCH "x86_64-linux-gnu"\n'},
    ),
    "bzip2": Recipe(flags=("-D_FILE_OFFSET_BITS=64",)),
    # The library (all of lib/, legacy formats included) and the zstd command; the x86-64 assembly
    # Huffman decoder is a .S file, so the C fallback is selected as the Makefile does without ASM.
    "libzstd": Recipe(
        subdirs=("lib", "programs"),
        flags=("-DZSTD_DISABLE_ASM", "-DZSTD_MULTITHREAD", "-DZSTD_LEGACY_SUPPORT=5", "-DXXH_NAMESPACE=ZSTD_",
               "-D_FILE_OFFSET_BITS=64", "-pthread"),
    ),
    # The library, the lz4 command, its tests, examples and fuzzers (all plain C, no configuration).
    "lz4": Recipe(flags=("-I{src}/lib", "-I{src}/programs", "-D_FILE_OFFSET_BITS=64")),
    # liblzma, xz, xzdec, lzmainfo and the tests, as CMakeLists.txt configures them (every filter on).
    "xz-utils": Recipe(
        subdirs=("src", "tests"),
        flags=("-DHAVE_CONFIG_H", "-I{src}", "-I{src}/src/common", "-I{src}/src/liblzma",
               *(f"-I{{src}}/src/liblzma/{d}" for d in _XZ_LZMA_DIRS), "-pthread"),
        generated={"config.h": _XZ_CONFIG},
        exclude=("src/liblzma/check/crc*_small.c",),  # the --enable-small alternatives of the CRC tables
    ),
    "jansson": Recipe(
        subdirs=("src", "test", "examples"),
        flags=("-DHAVE_CONFIG_H", "-I{src}/src"),
        generated={
            "src/jansson_config.h": (
                "#ifndef JANSSON_CONFIG_H\n#define JANSSON_CONFIG_H\n" + _defines(
                    "JSON_INLINE inline", "JSON_INTEGER_IS_LONG_LONG 1", "JSON_HAVE_LOCALECONV 1",
                    "JSON_HAVE_ATOMIC_BUILTINS 1", "JSON_HAVE_SYNC_BUILTINS 1", "JSON_PARSER_MAX_DEPTH 2048")
                + "#endif\n"),
            "src/jansson_private_config.h": _defines(
                "HAVE_STDINT_H 1", "HAVE_UNISTD_H 1", "HAVE_SYS_TYPES_H 1", "HAVE_SYS_TIME_H 1", "HAVE_SYS_STAT_H 1",
                "HAVE_FCNTL_H 1", "HAVE_SCHED_H 1", "HAVE_SCHED_YIELD 1", "HAVE_LOCALECONV 1", "HAVE_OPEN 1",
                "HAVE_READ 1", "HAVE_CLOSE 1", "HAVE_GETTIMEOFDAY 1", "HAVE_ATOMIC_BUILTINS 1",
                "HAVE_SYNC_BUILTINS 1", "USE_URANDOM 1", "INITIAL_HASHTABLE_ORDER 3"),
        },
    ),
    "libyaml": Recipe(
        subdirs=("src", "tests"),
        flags=("-I{src}/include", "-DYAML_VERSION_MAJOR=0", "-DYAML_VERSION_MINOR=2", "-DYAML_VERSION_PATCH=5",
               '-DYAML_VERSION_STRING="0.2.5"'),
    ),
    # cJSON, its utilities, tests and fuzzers; of the vendored Unity test framework only what the tests link.
    "cjson": Recipe(
        flags=("-I{src}", "-I{src}/tests/unity/src"),
        exclude=("tests/unity/examples/*", "tests/unity/extras/*", "tests/unity/test/*"),
    ),
    "giflib": Recipe(),
    # The library (src/), its tests and the lzotest benchmark; minilzo is the same code cut down for embedding.
    "lzo2": Recipe(subdirs=("src", "examples", "lzotest", "tests"), flags=("-I{src}/include", "-I{src}")),
    # The C implementations plus the SSSE3/SSE4.1/AVX2/AVX-512/AES-NI variants, each with the flags its
    # Makefile.am gives it; the .S assembly (HAVE_AMD64_ASM) is left off, so the C fallbacks are compiled.
    "libsodium": Recipe(
        subdirs=("src/libsodium", "test/default"),
        flags=(*(f"-D{d}" for d in _SODIUM_DEFINES), "-I{src}/src/libsodium/include",
               "-I{src}/src/libsodium/include/sodium", "-I{src}/test/quirks", "-pthread"),
        generated={"src/libsodium/include/sodium/version.h": _SODIUM_VERSION_H},
        file_flags={
            "*/randombytes_internal_random.c": ("-mrdrnd",),
            "*/aead_aes256gcm_aesni.c": (*_SSSE3, "-maes", "-mpclmul"),
            "*-ssse3.c": _SSSE3,
            "*-sse41.c": (*_SSSE3, "-msse4.1"),
            "*-avx2.c": _AVX2,
            "*-avx512f.c": (*_AVX2, "-mavx512f"),
        },
    ),
    # Debian builds it with GMP (and libtommath, not installed here) as the math descriptor.
    "libtomcrypt": Recipe(
        subdirs=("src", "demos", "tests"),
        flags=("-DLTC_SOURCE", "-DGMP_DESC", "-DUSE_GMP", "-I{src}/src/headers", "-I{src}/tests"),
    ),
    # The C code path (WITH_SIMD=0: jsimd_none.c), the tools and TurboJPEG, with CMake's generated headers.
    "libjpeg-turbo": Recipe(
        flags=("-I{src}", "-DBMP_SUPPORTED", "-DGIF_SUPPORTED", "-DPPM_SUPPORTED", "-DTARGA_SUPPORTED"),
        generated={
            "jconfig.h": _defines(
                "JPEG_LIB_VERSION 62", "LIBJPEG_TURBO_VERSION 2.1.5", "LIBJPEG_TURBO_VERSION_NUMBER 2001005",
                "C_ARITH_CODING_SUPPORTED 1", "D_ARITH_CODING_SUPPORTED 1", "MEM_SRCDST_SUPPORTED 1",
                "BITS_IN_JSAMPLE 8"),
            "jconfigint.h": '#undef inline\n' + _defines(
                'BUILD "20230210"', "INLINE __inline__ __attribute__((always_inline))", "THREAD_LOCAL __thread",
                'PACKAGE_NAME "libjpeg-turbo"', 'VERSION "2.1.5"', "SIZEOF_SIZE_T 8", "HAVE_BUILTIN_CTZL",
                "FALLTHROUGH __attribute__((fallthrough));"),
            "jversion.h": _defines(
                'JVERSION "6b  27-Mar-1998"', 'JCOPYRIGHT "Copyright (C) 2022 The libjpeg-turbo Project"',
                'JCOPYRIGHT_SHORT "Copyright (C) 2022 The libjpeg-turbo Project and many others"'),
        },
        # simd/ is what jsimd_none.c replaces; java/ and the JNI glue need a JDK; the *ext.c,
        # *565.c and jstdhuff.c fragments are #included by jccolor.c, jdcolor.c, jdmerge.c and jcparam.c.
        exclude=("simd/*", "java/*", "win/*", "turbojpeg-jni.c", "jccolext.c", "jdcolext.c",
                 "jdmrgext.c", "jdcol565.c", "jdmrg565.c", "jstdhuff.c"),
    ),
    # The library, sharpyuv, the tools (their PNG/JPEG/TIFF/GIF/GL/SDL readers compile as stubs without those
    # libraries) and the fuzzers; the SSE4.1 variants get -msse4.1, other architectures' variants are left out.
    "libwebp": Recipe(
        subdirs=("src", "sharpyuv", "examples", "imageio", "extras", "tests"),
        flags=("-I{src}", "-I{src}/src", "-DWEBP_USE_THREAD", "-pthread"),
        file_flags={"*_sse41.c": ("-msse4.1",)},
        exclude=("*_neon.c", "*_mips32.c", "*_mips_dsp_r2.c", "*_msa.c", "swig/*"),
    ),
    # The 8-bit library with JIT and Unicode (Debian also builds 16- and 32-bit code units from the same
    # files), pcre2grep and pcre2test, configured from the generic files the tarball ships for that purpose.
    "pcre2": Recipe(
        subdirs=("src",),
        flags=("-DHAVE_CONFIG_H", "-DPCRE2_CODE_UNIT_WIDTH=8", "-DSUPPORT_PCRE2_8", "-DSUPPORT_UNICODE",
               "-DSUPPORT_JIT", "-DSUPPORT_PCRE2GREP_JIT", "-DHAVE_UNISTD_H", "-DHAVE_SYS_STAT_H", "-DHAVE_DIRENT_H",
               "-DHAVE_MEMMOVE", "-DHAVE_STRERROR", "-DHAVE_MKOSTEMP", "-DHAVE_SECURE_GETENV", "-DHAVE_REALPATH"),
        copies={"src/config.h": "src/config.h.generic", "src/pcre2.h": "src/pcre2.h.generic",
                "src/pcre2_chartables.c": "src/pcre2_chartables.c.dist"},
        exclude=("src/sljit/*", "src/pcre2_jit_match.c", "src/pcre2_jit_misc.c", "src/pcre2_ucptables.c",
                 "src/pcre2_printint.c"),  # #included by pcre2_jit_compile.c, pcre2_tables.c, pcre2test.c
        fallback_version="10.42-1",  # 10.42-1+deb12u2's debian diff is missing on this machine's mirror
    ),
    "libdeflate": Recipe(flags=("-I{src}", "-D_FILE_OFFSET_BITS=64", "-D_GNU_SOURCE")),
    # The float build with x86 run-time CPU detection (SSE4.1 variants get -msse4.1), its tests and demos.
    "opus": Recipe(
        subdirs=("celt", "silk", "src", "tests"),
        flags=(*(f"-D{d}" for d in _OPUS_DEFINES), "-I{src}", "-I{src}/include", "-I{src}/celt", "-I{src}/silk",
               "-I{src}/silk/float"),
        file_flags={"*_sse4_1.c": ("-msse4.1",)},
        exclude=("*/arm/*", "silk/fixed/*"),  # another architecture's code; the fixed-point build's
    ),
    # libFLAC (without Ogg: libogg-dev is not installed), flac, metaflac, the shared helpers and the C tests.
    "flac": Recipe(
        subdirs=("src", "examples", "microbench"),
        flags=("-DHAVE_CONFIG_H", "-D_GNU_SOURCE", "-I{src}", "-I{src}/include", "-I{src}/src/libFLAC/include"),
        generated={"config.h": _FLAC_CONFIG},
        # The Windows UTF-8 shim, other architectures' intrinsics, fragments lpc_intrin*.c #include, the Ogg
        # glue, and a test and a generator the build does not compile.
        exclude=("src/share/win_utf8_io/*", "src/libFLAC/*_neon.c", "src/libFLAC/*_vsx.c",
                 "src/libFLAC/deduplication/*", "src/libFLAC/ogg_*.c", "src/share/utf8/charset_test.c",
                 "src/share/utf8/makemap.c"),
    ),
    # Oniguruma: the library with every encoding, the samples and tests.
    "libonig": Recipe(
        subdirs=("src", "sample", "test"),
        flags=("-DHAVE_CONFIG_H", "-I{src}/src"),
        generated={"src/config.h": _defines(
            "HAVE_ALLOCA 1", "HAVE_ALLOCA_H 1", "HAVE_STDINT_H 1", "HAVE_SYS_TIMES_H 1", "HAVE_SYS_TIME_H 1",
            "HAVE_SYS_TYPES_H 1", "HAVE_UNISTD_H 1", "HAVE_INTTYPES_H 1", 'PACKAGE "onig"',
            'PACKAGE_VERSION "6.9.8"', 'VERSION "6.9.8"', "SIZEOF_INT 4", "SIZEOF_LONG 8", "SIZEOF_LONG_LONG 8",
            "SIZEOF_VOIDP 8")},
        # unicode.c #includes the Unicode tables; mktable.c is a generator the build does not run.
        exclude=("src/unicode_fold_data.c", "src/unicode_property_data*.c", "src/unicode_wb_data.c",
                 "src/unicode_egcb_data.c", "src/mktable.c"),
    ),
    # CommonMark's reference parser: the library, the cmark command, the API tests and the fuzz driver, with
    # the three headers CMake writes (exports as the static library's: no visibility attributes).
    "cmark": Recipe(
        subdirs=("src", "api_test", "test"),
        flags=("-I{src}/src", "-std=c99"),
        generated={
            "src/cmark_version.h": _defines("CMARK_VERSION ((0 << 16) | (30 << 8) | 2)",
                                            'CMARK_VERSION_STRING "0.30.2"'),
            "src/cmark_export.h": _defines("CMARK_EXPORT", "CMARK_NO_EXPORT", "CMARK_DEPRECATED",
                                           "CMARK_DEPRECATED_EXPORT"),
            "src/config.h": "#include <stdbool.h>\n" + _defines(
                "HAVE_STDBOOL_H", "HAVE___BUILTIN_EXPECT", "HAVE___ATTRIBUTE__",
                "CMARK_ATTRIBUTE(list) __attribute__ (list)", "CMARK_INLINE inline"),
        },
    ),
    # The asynchronous DNS resolver library, its tools (adig, ahost, acountry) and the C fuzz drivers (the
    # gmock tests are C++); ares_build.h replaces the generic one the tarball ships for non-configure systems.
    "c-ares": Recipe(
        subdirs=("src", "test"),
        flags=("-DHAVE_CONFIG_H=1", "-D_GNU_SOURCE", "-D_POSIX_C_SOURCE=199309L", "-D_XOPEN_SOURCE=600",
               "-I{src}/include", "-I{src}/src/lib", "-I{src}/src/tools"),
        generated={"src/lib/ares_config.h": _CARES_CONFIG, "include/ares_build.h": _CARES_BUILD_H},
        # Windows and Android code, and fallbacks for functions glibc has: empty on x86-64 Linux (no .text).
        exclude=("src/lib/windows_port.c", "src/lib/ares_platform.c", "src/lib/ares_android.c",
                 "src/lib/ares_getenv.c", "src/lib/ares_strcasecmp.c", "src/lib/ares_writev.c"),
    ),
    # The Lightning memory-mapped database: the library, its tools and the mtest programs its Makefile builds
    # (mtest6 needs the MDB_DEBUG build's mdb_dkey); no configuration.
    "lmdb": Recipe(subdirs=("libraries/liblmdb",), flags=("-pthread",), exclude=("*/mtest6.c",)),
    # LLVM's own code: the newest LLVM whose source package downloads here (llvm-toolchain-22's does not).
    "llvm-toolchain-19": LLVM,
    # Extra training packages (in no split yet); their long constants are in workers/debrecipes_train.py.
    # mbedtls: the library with Debian's config.h options, the sample/test programs and the test helpers.
    "mbedtls": Recipe(
        subdirs=("library", "programs", "tests/src"),
        flags=(*(f"-D{o}" for o in train.MBEDTLS_DEBIAN_OPTIONS), "-D_FILE_OFFSET_BITS=64", "-I{src}/include",
               "-I{src}/library", "-I{src}/tests/include", "-pthread"),
        # Windows CE's entry point; fragments that ssl_client2.c, ssl_server2.c and psa_constant_names.c #include.
        exclude=("programs/wince_main.c", "programs/ssl/ssl_test_common_source.c",
                 "programs/psa/psa_constant_names_generated.c"),
    ),
    # libtommath: the library, demo/, etc/ and mtest/ (pre_gen/mpi.c pastes every source into one; Debian deletes it).
    "libtommath": Recipe(flags=("-I{src}",), exclude=("pre_gen/*",)),
    # mujs: the interpreter file by file, the shell and mujs-pp (one.c #includes every source, for the .so).
    "mujs": Recipe(flags=("-std=c99", "-DHAVE_READLINE"), exclude=("one.c",)),
    # json-c: the library, json_parse and the tests, with CMake's headers (libjson.c: a stub CMake never builds).
    "json-c": Recipe(
        flags=("-D_GNU_SOURCE", "-DHAVE_CONFIG_H", "-I{src}"),
        generated={"config.h": _defines(*train.JSON_C_CONFIG), "json_config.h": _defines("JSON_C_HAVE_INTTYPES_H 1"),
                   "json.h": train.JSON_C_JSON_H, "apps_config.h": _defines(*train.JSON_C_APPS_CONFIG)},
        exclude=("libjson.c",),
    ),
    # wavpack: the library and its five programs as Debian configures them, but the C for the x86-64 assembly.
    "wavpack": Recipe(
        subdirs=("src", "cli"),
        flags=(*(f"-D{d}" for d in train.WAVPACK_DEFINES), "-I{src}/include", "-pthread"),
        # Legacy (< 4.0) decoding, off in Debian's build (empty files); the Windows UTF-8 shim.
        exclude=("src/unpack3*.c", "cli/win32_unicode_support.c"),
    ),
    # libpng1.6: the library, pngtest and contrib's tests, tools, examples and pngminus; pnglibconf.h as prebuilt.
    "libpng1.6": Recipe(
        flags=("-DHAVE_CONFIG_H", "-I{src}"),
        generated={"config.h": _defines(*train.LIBPNG_CONFIG)},
        copies={"pnglibconf.h": "scripts/pnglibconf.h.prebuilt"},
        exclude=train.LIBPNG_EXCLUDE,
        fallback_version="1.6.39-2+deb12u5",  # +deb12u6's files are missing on this machine's mirror
    ),
}
# Six fresh evaluation packages (workers/packages.py): their recipes are in workers/debrecipes_eval.py.
RECIPES.update({name: Recipe(**kwargs) for name, kwargs in fresh.RECIPES.items()})
# Six more, a second fresh evaluation set (workers/packages.py): their recipes are in workers/debrecipes_fresh.py.
RECIPES.update({name: Recipe(**kwargs) for name, kwargs in fresh2.RECIPES.items()})
# Eight more, seven of them training packages (workers/packages.py): their recipes are in workers/debrecipes_more.py.
RECIPES.update({name: Recipe(**kwargs) for name, kwargs in more.RECIPES.items()})
# More packages (workers/packages.py says which split each is in): audio and image codecs in
# workers/debrecipes_media.py, text, data, network and crypto libraries in workers/debrecipes_data.py.
RECIPES.update({name: Recipe(**kwargs) for name, kwargs in media.RECIPES.items()})
RECIPES.update({name: Recipe(**kwargs) for name, kwargs in data.RECIPES.items()})
# Packages whose recipes are data (workers/data/recipes.toml, read by workers/recipedata.py).
from workers import recipedata  # noqa: E402  (recipedata imports nothing of this module's: no cycle)

RECIPES.update(recipedata.load(Recipe, defined=RECIPES))
