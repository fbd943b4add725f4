"""The recipes of six more C packages the farm had never compiled: a second fresh policy-evaluation set.

libsamplerate (audio resampling), libgsm (GSM 06.10 speech codec), libmodbus (Modbus protocol), msgpack-c
(MessagePack serialisation), libsndfile (audio file formats) and jbigkit (JBIG bi-level image compression).
Written before any policy was measured on them; evaluation packages only (workers/packages.py).
Plain data, as workers/debrecipes_eval.py: each entry is the keyword arguments of a `workers.debrecipes.Recipe`,
which `workers/debrecipes.py` builds and merges into `RECIPES` (this module imports only debrecipes_eval's
helpers, so there is no import cycle). The headers are those Debian 12's build writes on x86-64, the defines
those it passes.
"""

from __future__ import annotations

from workers.debrecipes_eval import _SYSTEM_EXTENSIONS as _EXTENSIONS
from workers.debrecipes_eval import _defines, _have, _package

#: What autoconf 2.71's default includes find on Debian 12, and what libtool adds (each build runs autoreconf).
_AUTOCONF = (*_have("INTTYPES_H", "STDINT_H", "STDIO_H", "STDLIB_H", "STRINGS_H", "STRING_H", "SYS_STAT_H",
                    "SYS_TYPES_H", "UNISTD_H", "DLFCN_H"), "STDC_HEADERS 1", 'LT_OBJDIR ".libs/"')
#: What autoconf 2.71's AC_USE_SYSTEM_EXTENSIONS defines on Linux (it checks for wchar.h on the way).
_SYSTEM_EXTENSIONS = ("HAVE_WCHAR_H 1", *_EXTENSIONS)

#: libsamplerate's src/config.h (autoheader's template of configure.ac): every sinc converter on (configure
#: defines them to "yes"), x86-64 does not clip on float-to-int conversion (AC_C_CLIP_MODE's run test),
#: Debian's build has libsndfile and FFTW (for the tests and examples) and no ALSA.
LIBSAMPLERATE_CONFIG = _defines(
    *_AUTOCONF, *_have("STDBOOL_H", "SYS_TIMES_H", "MALLOC", "CALLOC", "FREE", "MEMCPY", "MEMMOVE", "ALARM",
                       "SIGNAL", "FLOOR", "CEIL", "FMOD", "LRINT", "LRINTF", "SIGALRM", "SNDFILE", "FFTW3",
                       "VISIBILITY"),
    "SIZEOF_INT 4", "SIZEOF_LONG 8", "SIZEOF_FLOAT 4", "SIZEOF_DOUBLE 8", "CPU_IS_BIG_ENDIAN 0",
    "CPU_IS_LITTLE_ENDIAN 1", "CPU_CLIPS_POSITIVE 0", "CPU_CLIPS_NEGATIVE 0",
    *(f"ENABLE_SINC_{q}_CONVERTER yes" for q in ("FAST", "MEDIUM", "BEST")),
    *_package("libsamplerate", "0.2.2", bugreport="erikd@mega-nerd.com",
              url="https://github.com/libsndfile/libsamplerate/"),
)

#: libgsm's flags: its Makefile's CC (gcc -ansi -pedantic) and options (SASR, WAV49), debian/rules' CCFLAGS and
#: MULHACK (USE_FLOAT_MUL on every architecture but ARM); inc/config.h is the one the tarball ships.
LIBGSM_FLAGS = ("-ansi", "-D_GNU_SOURCE", "-D_REENTRANT", "-DNeedFunctionPrototypes=1", "-DSASR", "-DUSE_FLOAT_MUL",
                "-DWAV49")

#: libmodbus's config.h (sys/params.h is no Linux header, glibc 2.36 has no strlcpy; TIOCSRS485 and TIOCM_RTS are
#: declared by sys/ioctl.h).
LIBMODBUS_CONFIG = _defines(
    *_AUTOCONF, *_SYSTEM_EXTENSIONS,
    *_have(*(f"{h}_H" for h in ("ARPA_INET", "BYTESWAP", "ERRNO", "FCNTL", "LIMITS", "LINUX_SERIAL", "NETDB",
                                "NETINET_IN", "NETINET_TCP", "SYS_IOCTL", "SYS_SOCKET", "SYS_TIME", "TERMIOS", "TIME")),
           "ACCEPT4", "GETADDRINFO", "GETTIMEOFDAY", "INET_NTOA", "SELECT", "SOCKET", "STRERROR"),
    "HAVE_DECL___CYGWIN__ 0", "HAVE_DECL_TIOCSRS485 1", "HAVE_DECL_TIOCM_RTS 1", "WINVER 0x0501",
    *_package("libmodbus", "3.1.6", bugreport="https://github.com/stephane/libmodbus/issues",
              url="http://libmodbus.org/"),
)
#: src/modbus-version.h as configure writes it from modbus-version.h.in.
LIBMODBUS_VERSION_H = (
    "#ifndef MODBUS_VERSION_H\n#define MODBUS_VERSION_H\n" + _defines(
        "LIBMODBUS_VERSION_MAJOR (3)", "LIBMODBUS_VERSION_MINOR (1)", "LIBMODBUS_VERSION_MICRO (6)",
        "LIBMODBUS_VERSION        3.1.6", 'LIBMODBUS_VERSION_STRING "3.1.6"',
        "LIBMODBUS_VERSION_HEX ((LIBMODBUS_VERSION_MAJOR << 16) | (LIBMODBUS_VERSION_MINOR << 8) | "
        "(LIBMODBUS_VERSION_MICRO << 0))",
        "LIBMODBUS_VERSION_CHECK(major,minor,micro) (LIBMODBUS_VERSION_MAJOR > (major) || "
        "(LIBMODBUS_VERSION_MAJOR == (major) && LIBMODBUS_VERSION_MINOR > (minor)) || "
        "(LIBMODBUS_VERSION_MAJOR == (major) && LIBMODBUS_VERSION_MINOR == (minor) && "
        "LIBMODBUS_VERSION_MICRO >= (micro)))")
    + "#endif\n"
)

#: tests/unit-test.h, which configure writes from its template with HAVE_INTTYPES_H and HAVE_STDINT_H defined to 1:
#: the template with those two as config.h (force-included before it) has them.
LIBMODBUS_UNIT_TEST_H = (
    "#undef HAVE_INTTYPES_H\n#undef HAVE_STDINT_H\n#include \"unit-test.h.in\"\n#undef HAVE_INTTYPES_H\n"
    "#undef HAVE_STDINT_H\n" + _defines("HAVE_INTTYPES_H 1", "HAVE_STDINT_H 1")
)

#: libsndfile's src/config.h (autoheader's template of configure.ac): Debian's build has FLAC, Ogg, Vorbis and Opus
#: (HAVE_EXTERNAL_XIPH_LIBS), LAME and mpg123 (HAVE_MPEG), SQLite and ALSA, and builds with gcc (COMPILER_IS_GCC).
LIBSNDFILE_CONFIG = _defines(
    *_AUTOCONF, *_SYSTEM_EXTENSIONS,
    *_have(*(f"{h}_H" for h in ("ENDIAN", "BYTESWAP", "LOCALE", "SYS_TIME", "IMMINTRIN", "STDBOOL", "SYS_WAIT",
                                "ALSA_ASOUNDLIB")),
           "MALLOC", "CALLOC", "REALLOC", "FREE", "OPEN", "READ", "WRITE", "LSEEK", "LSEEK64", "FSTAT", "FSTAT64",
           "FTRUNCATE", "FSYNC", "SNPRINTF", "VSNPRINTF", "GMTIME", "GMTIME_R", "LOCALTIME", "LOCALTIME_R",
           "GETTIMEOFDAY", "MMAP", "GETPAGESIZE", "SETLOCALE", "PIPE", "WAITPID", "FLOOR", "CEIL", "FMOD", "LRINT",
           "LRINTF", "ALSA", "EXTERNAL_XIPH_LIBS", "MPEG", "SQLITE3"),
    "HAVE_DECL_S_IRGRP 1", "HAVE_SNDIO_H 0", "ENABLE_EXPERIMENTAL_CODE 0",
    *(f"SIZEOF_{t} {n}" for t, n in (("WCHAR_T", 4), ("SHORT", 2), ("INT", 4), ("LONG", 8), ("FLOAT", 4),
                                     ("DOUBLE", 8), ("VOIDP", 8), ("SIZE_T", 8), ("INT64_T", 8), ("LONG_LONG", 8),
                                     ("OFF_T", 8))),
    "CPU_IS_BIG_ENDIAN 0", "CPU_IS_LITTLE_ENDIAN 1", "CPU_CLIPS_POSITIVE 0", "CPU_CLIPS_NEGATIVE 0",
    "OS_IS_WIN32 0", "OS_IS_OPENBSD 0", "USE_WINDOWS_API 0", "WIN32_TARGET_DLL 0", "COMPILER_IS_GCC 1",
    "HOST_TRIPLET x86_64-pc-linux-gnu",
    *_package("libsndfile", "1.2.0", bugreport="sndfile@mega-nerd.com", url="http://libsndfile.github.io/libsndfile/"),
)


def _msgpack_configured(template: str) -> str:
    """A header CMake's configure_file writes from msgpack-c's cmake/*.h.in: the template with its only two
    substitutions (the byte order, which the template takes from these defines when they are set)."""
    byte_order = _defines("MSGPACK_ENDIAN_BIG_BYTE 0", "MSGPACK_ENDIAN_LITTLE_BYTE 1")
    return byte_order + f'#include "../../cmake/{template}"\n'


#: Keyword arguments of each package's `Recipe`, by Debian source package.
RECIPES: dict[str, dict] = {
    # The library and the programs `make check` builds, but those that need libfftw3-dev (calc_snr.c, the tests'
    # SNR measure, and the three tests that #include fftw3.h) or libsndfile1-dev (src-evaluate.c; all the examples),
    # which are not installed; streaming_test.c is in the tarball only.
    "libsamplerate": dict(
        subdirs=("src", "tests"),
        flags=("-DHAVE_CONFIG_H", "-I{src}/include", "-I{src}/src"),
        generated={"src/config.h": LIBSAMPLERATE_CONFIG},
        exclude=(*(f"tests/{t}.c" for t in ("calc_snr", "snr_bw_test", "multi_channel_test", "varispeed_test",
                                              "src-evaluate", "streaming_test")),),
    ),
    # The library and toast (Debian's `make all`) and the programs of the Makefile's two test targets, with the same
    # flags: tst's converters and addtst's arithmetic test (it #includes src/add.c). tls/ holds the generators the
    # authors wrote gsm_encode.c and gsm_decode.c with (the `misc` target), which no build needs.
    "libgsm": dict(
        subdirs=("src", "tst", "add-test"),
        flags=(*LIBGSM_FLAGS, "-I{src}/inc"),
    ),
    # The library and the test programs (config.h is force-included, as AM_CPPFLAGS does).
    "libmodbus": dict(
        subdirs=("src", "tests"),
        flags=("-DHAVE_CONFIG_H", "-include", "{src}/config.h", '-DSYSCONFDIR="/etc"', '-DLIBEXECDIR="/usr/libexec"',
               "-I{src}", "-I{src}/src"),
        generated={"config.h": LIBMODBUS_CONFIG, "src/modbus-version.h": LIBMODBUS_VERSION_H,
                   "tests/unit-test.h": LIBMODBUS_UNIT_TEST_H},
        exclude=("src/win32/*",),
    ),
    # The C library and the C examples CMake builds (jsonconv.c needs cJSON, which Debian's build lacks); the
    # tests are C++ (gtest).
    "msgpack-c": dict(
        subdirs=("src", "example"),
        flags=("-I{src}", "-I{src}/include", "-I{src}/include/msgpack"),
        generated={"include/msgpack/sysdep.h": _msgpack_configured("sysdep.h.in"),
                   "include/msgpack/pack_template.h": _msgpack_configured("pack_template.h.in")},
        file_flags={"src/*": ("-DPIC", "-Dmsgpackc_EXPORTS")},  # the shared library target's
        exclude=("example/jsonconv.c",),
    ),
    # The library with its GSM 6.10, G72x and ALAC codecs, test_main and g72x_test, the programs and the C examples.
    # Left out: the glue to FLAC, Ogg/Vorbis/Opus, LAME and mpg123 and sndfile-play (ALSA), whose -dev packages are
    # not installed (ogg_speex.c and ogg_pcm.c are stubs without the experimental code, and stay); the tests but
    # sfversion.c and win32_test.c, which need the utils.h that autogen writes (not in the tarball); windows.c
    # (empty off Windows), and new.c, cue_test.c and sftest.c, which no build compiles; regtest needs SQLite.
    "libsndfile": dict(
        subdirs=("src", "programs", "examples", "tests"),
        flags=("-DHAVE_CONFIG_H", "-I{src}/src", "-I{src}/include"),
        generated={"src/config.h": LIBSNDFILE_CONFIG},
        exclude=(*(f"src/{f}.c" for f in ("flac", "ogg", "ogg_vorbis", "ogg_opus", "ogg_vcomment", "id3", "mpeg_decode",
                                          "mpeg_l3_encode", "windows", "new")),
                 "programs/sndfile-play.c", "tests/[!sw]*", "tests/s[!f]*", "tests/sftest.c",
                 "tests/win32_ordinal_test.c"),
    ),
    # The library (JBIG and JBIG85), the tstcodec programs its `make test` builds and the four pbmtools (dh exports
    # Debian's CFLAGS, which replace the Makefiles' -ansi); no configuration.
    "jbigkit": dict(subdirs=("libjbig", "pbmtools"), flags=("-I{src}/libjbig",)),
}
