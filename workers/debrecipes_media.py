"""The recipes of eight audio and image codec packages the farm had never compiled, written as training data.

In no split (workers/packages.py): with these and debrecipes_data.py's eleven, the nightly ranked worse on the
eleven packages that decide than without them (bench/README.md, "Still more training packages").

lame (MP3 encoder), twolame (MPEG audio layer 2 encoder), faad2 (AAC decoder), a52dec (ATSC A/52 decoder), libdca
(DTS decoder), vo-aacenc (AAC encoder), libmikmod (tracker-module player) and jbig2dec (JBIG2 decoder). No recipe
compiles code copied from an evaluation package (workers/packages.py): the copies of GNU getopt (speex has one), the
ReplayGain analysis (flac's), Windows Unicode support (wavpack's) and libxmp's depackers are left out.
Plain data, as workers/debrecipes_more.py: each entry is the keyword arguments of a `workers.debrecipes.Recipe`,
which `workers/debrecipes.py` builds and merges into `RECIPES` (this module imports only debrecipes_eval's helpers
and debrecipes_fresh's autoconf defines, so there is no import cycle). The headers are those Debian 12's build
writes on x86-64, the defines those it passes.
"""

from __future__ import annotations

from workers.debrecipes_eval import _defines, _have, _package
from workers.debrecipes_fresh import _AUTOCONF

#: lame's config.h: configure on x86-64 (the IEEE 754 hacks and SSE intrinsics, no nasm code), the mpglib decoder,
#: ncurses (termcap.h) and libsndfile for the frontend (--with-fileio=sndfile).
LAME_CONFIG = "#ifndef LAME_CONFIG_H\n#define LAME_CONFIG_H\n" + _defines(
    *_AUTOCONF, *_have("ERRNO_H", "FCNTL_H", "LIMITS_H", "SYS_SOUNDCARD_H", "SYS_TIME_H",
                       "LINUX_SOUNDCARD_H", "XMMINTRIN_H", "TERMCAP_H", "GETTIMEOFDAY", "STRTOL", "SOCKET", "ICONV",
                       "TERMCAP", "MPGLIB", "LONG_DOUBLE", "LONG_DOUBLE_WIDER", "IEEE854_FLOAT80", "INT8_T",
                       "INT16_T", "INT32_T", "INT64_T", "UINT8_T", "UINT16_T", "UINT32_T", "UINT64_T", "ALLOCA",
                       "ALLOCA_H"),
    "ICONV_CONST", "DECODE_ON_THE_FLY 1", "LAME_LIBRARY_BUILD 1", "LIBSNDFILE 1", "TAKEHIRO_IEEE754_HACK 1",
    "USE_FAST_LOG 1", "TIME_WITH_SYS_TIME 1",
    *(f"SIZEOF_{t} {n}" for t, n in (("DOUBLE", 8), ("FLOAT", 4), ("INT", 4), ("LONG", 8), ("LONG_DOUBLE", 16),
                                     ("LONG_LONG", 8), ("SHORT", 2), ("UNSIGNED_INT", 4), ("UNSIGNED_LONG", 8),
                                     ("UNSIGNED_LONG_LONG", 8), ("UNSIGNED_SHORT", 2))),
    *_package("lame", "3.100", bugreport="lame-dev@lists.sf.net"),
) + ("typedef float ieee754_float32_t;\ntypedef double ieee754_float64_t;\ntypedef long double ieee854_float80_t;\n"
     "#endif\n")  # the types config.h.in adds when glibc has none of those names

#: twolame's libtwolame/config.h (configure: libm, no libmx; malloc.h and assert.h found).
TWOLAME_CONFIG = _defines(
    *_AUTOCONF, *_have("ASSERT_H", "MALLOC_H", "LIBM"), "SIZEOF_FLOAT 4", "SIZEOF_SHORT 2",
    *_package("twolame", "0.4.0", name="TwoLAME", bugreport="twolame-discuss@lists.sourceforge.net",
              url="http://www.twolame.org/"),
)

#: faad2's config.h (configure without --with-drm and --with-drc, as debian/rules runs it).
FAAD2_CONFIG = _defines(
    *_AUTOCONF, *_have("FLOAT_H", "SYS_TIME_H", "ERRNO_H", "LIMITS_H", "STRCHR", "MEMCPY", "GETPWUID", "LRINTF",
                       "STRSEP"),
    "TIME_WITH_SYS_TIME 1", *_package("faad2", "2.10.1"),
)

#: What a52dec's and libdca's configure find alike (both from the mpeg2dec family): the OSS output, gettimeofday
#: (so no ftime fallback), memalign, 64-byte alignment attributes, `restrict` spelt __restrict__ (autoconf 2.71).
_MPEG2DEC_FAMILY = (*_AUTOCONF, *_have("SYS_TIME_H", "SYS_TIMEB_H", "MEMALIGN", "GETTIMEOFDAY", "FTIME"),
                    "LIBAO_OSS", "ATTRIBUTE_ALIGNED_MAX 64", "RETSIGTYPE void", "restrict __restrict__")
#: What a52dec and libdca leave out alike: src/getopt.c (a copy of GNU getopt, as in speex), gettimeofday.c (its
#: ftime fallback: empty with glibc) and libao's Windows, Solaris and IRIX outputs (empty off those systems).
_MPEG2DEC_EXCLUDE = ("src/getopt.c", "src/gettimeofday.c", "libao/audio_out_win.c", "libao/audio_out_solaris.c",
                     "libao/audio_out_al.c")
#: a52dec's include/config.h; its AC_C_ALWAYS_INLINE makes every `inline` gcc's always_inline.
A52DEC_CONFIG = _defines(*_MPEG2DEC_FAMILY, "SIZEOF_CHAR 1", "SIZEOF_INT 4", "SIZEOF_SHORT 2",
                         "inline __attribute__ ((__always_inline__))", *_package("a52dec", "0.7.4"))
#: libdca's config.h (its own check for __builtin_expect and struct timeval, and the floating-point build).
LIBDCA_CONFIG = _defines(*_MPEG2DEC_FAMILY, "HAVE_TIME_H 1", "HAVE_STRUCT_TIMEVAL 1", "HAVE_BUILTIN_EXPECT",
                         *_package("libdca", "0.0.7"))

#: libmikmod's config.h (configure with debian/rules' options on Linux: dlopen()ed drivers, POSIX threads, the
#: high-quality mixer, no SIMD; the OSS and file drivers, and ALSA, PulseAudio, OpenAL and SDL2).
LIBMIKMOD_CONFIG = _defines(
    *_AUTOCONF, *_have("FCNTL_H", "LIMITS_H", "MALLOC_H", "MEMORY_H", "SYS_IOCTL_H", "SYS_WAIT_H", "SYS_SOUNDCARD_H",
                       "ALSA_ASOUNDLIB_H", "PULSE_SIMPLE_H", "AL_AL_H", "AL_ALC_H", "AL_ALEXT_H", "POSIX_MEMALIGN",
                       "SETENV", "SNPRINTF", "SRANDOM", "MEMCMP", "STRSTR", "RTLD_GLOBAL", "PTHREAD"),
    *(f"DRV_{d} 1" for d in ("AIFF", "ALSA", "OPENAL", "OSS", "PIPE", "PULSEAUDIO", "RAW", "SDL", "STDOUT", "WAV")),
    "MIKMOD_DYNAMIC 1", *_package("libmikmod", "3.3.11"),
)

#: jbig2dec's config.h (autoheader's, AC_INIT's version set by autogen.sh from jbig2.h; libpng found) and
#: config_types.h (configure's substitution of config_types.h.in: stdint.h found).
JBIG2DEC_CONFIG = _defines(
    *_AUTOCONF, *_have("LIBINTL_H", "STDDEF_H", "MEMSET", "STRDUP", "LIBPNG"), "HAVE_GETOPT_LONG",
    "SIZEOF_CHAR 1", "SIZEOF_SHORT 2", "SIZEOF_INT 4", "SIZEOF_LONG 8",
    *_package("jbig2dec", "0.19", bugreport="gs-devel@ghostscript.com"),
)
JBIG2DEC_CONFIG_TYPES = "#ifdef HAVE_STDINT_H\n#  include <stdint.h>\n#endif\n"

#: Keyword arguments of each package's `Recipe`, by Debian source package.
RECIPES: dict[str, dict] = {
    # lame: libmp3lame with its SSE routines and the mpglib decoder, and the lame and mp3rtp programs. Left out:
    # gain_analysis.c (the ReplayGain reference code of Robinson and Sawyer, which flac ships as
    # replaygain_analysis.c), get_audio.c (the frontend's sound-file input: Debian builds it with libsndfile, whose
    # headers are not installed), mp3x's GTK analyser, the AmigaOS frontend, the Windows and Mac DLLs and misc/.
    "lame": dict(
        subdirs=("libmp3lame", "mpglib", "frontend"),
        flags=("-DHAVE_CONFIG_H", "-I{src}", "-I{src}/include", "-I{src}/libmp3lame", "-I{src}/mpglib"),
        generated={"config.h": LAME_CONFIG},
        file_flags={"libmp3lame/vector/*": ("-msse",)},
        exclude=("libmp3lame/gain_analysis.c", "frontend/get_audio.c", "frontend/mp3x.c", "frontend/gtkanal.c",
                 "frontend/gpkplotting.c", "frontend/amiga_mpega.c"),
    ),
    # twolame: libtwolame and the stwolame example program (-fvisibility=hidden from debian/rules). Left out: the
    # twolame command, frontend/frontend.c, which needs libsndfile's headers (not installed).
    "twolame": dict(
        subdirs=("libtwolame", "simplefrontend"),
        flags=("-DHAVE_CONFIG_H", "-I{src}/libtwolame", "-fvisibility=hidden"),
        generated={"libtwolame/config.h": TWOLAME_CONFIG},
        file_flags={"libtwolame/*": ("-DLIBTWOLAME_BUILD",)},
    ),
    # faad2: libfaad (not libfaad_drm, the same sources again with -DDRM_SUPPORT) and the faad command, with the
    # BUILD_DATE debian/rules adds to CPPFLAGS (its changelog's date). Left out: frontend/getopt.c (GNU getopt, as
    # in speex; built only without getopt_long) and unicode_support.c (empty off Windows, and the file wavpack ships
    # as cli/win32_unicode_support.c); aacDECdrop, the plugins and utils/win32 (Windows or XMMS, not built here).
    "faad2": dict(
        subdirs=("libfaad", "frontend"),
        flags=("-DHAVE_CONFIG_H", "-I{src}", "-I{src}/include", '-DBUILD_DATE="2022-10-20"'),
        generated={"config.h": FAAD2_CONFIG},
        file_flags={"libfaad/*": ("-fvisibility=hidden",)},
        exclude=("frontend/getopt.c", "frontend/unicode_support.c"),
    ),
    # a52dec: liba52, the libao output library, a52dec, extract_a52 and the compare test program. Left out:
    # src/getopt.c (a copy of GNU getopt, as in speex), gettimeofday.c (its ftime fallback: empty with glibc) and
    # libao's Windows, Solaris and IRIX outputs (empty off those systems).
    "a52dec": dict(
        subdirs=("liba52", "libao", "src", "test"),
        flags=("-DHAVE_CONFIG_H", "-I{src}/include"),
        generated={"include/config.h": A52DEC_CONFIG},
        exclude=_MPEG2DEC_EXCLUDE,
    ),
    # libdca: the library, libao, dcadec, extract_dca and compare, with the large-file defines of debian/rules; left
    # out as in a52dec (getopt.c a copy of GNU getopt, as in speex).
    "libdca": dict(
        subdirs=("libdca", "libao", "src", "test"),
        flags=("-DHAVE_CONFIG_H", "-I{src}", "-I{src}/include", "-D_FILE_OFFSET_BITS=64", "-D_LARGEFILE_SOURCE",
               "-D_LARGEFILE64_SOURCE"),
        generated={"config.h": LIBDCA_CONFIG},
        exclude=_MPEG2DEC_EXCLUDE,
    ),
    # vo-aacenc: the library, in its C version (the ARM assembly is off); configure writes no header, so its defines
    # are on the command line. Left out: the aac-enc example (--enable-example is off) and the Android sample code.
    "vo-aacenc": dict(
        flags=(*(f"-D{d.replace(' ', '=', 1)}" for d in (*_AUTOCONF, *_package(
                   "vo-aacenc", "0.1.3", bugreport="http://sourceforge.net/projects/opencore-amr/"))),
               "-I{src}/aacenc/inc", "-I{src}/aacenc/basic_op", "-I{src}/common/include"),
        exclude=("aac-enc.c", "wavreader.c", "aacenc/SampleCode/*"),
    ),
    # libmikmod: the library, with configure's -ffast-math, -D_REENTRANT and hidden visibility. Left out: the ALSA,
    # PulseAudio, OpenAL and SDL drivers (Debian builds them; their headers are not installed), the other systems'
    # drivers and dlapi/dl_hpux.c (empty off those systems), posix/memcmp.c and strstr.c (replacements glibc does not
    # need), the examples and PSP code (not built), and the code derived from libxmp's: depackers/ (mmcmp, pp20,
    # s404 and xpk, from libxmp's depackers) and loaders/load_umx.c (from its umx_load.c).
    "libmikmod": dict(
        subdirs=("playercode", "loaders", "mmio", "drivers", "posix"),
        flags=("-DHAVE_CONFIG_H", "-DMIKMOD_BUILD=1", "-I{src}", "-I{src}/include", "-ffast-math", "-D_REENTRANT",
               "-DSYM_VISIBILITY", "-fvisibility=hidden"),
        generated={"config.h": LIBMIKMOD_CONFIG},
        exclude=(*(f"drivers/drv_{d}.c" for d in (
                     "alsa", "pulseaudio", "openal", "sdl", "AF", "ahi", "aix", "dart", "dc", "ds", "esd", "gp32",
                     "hp", "mac", "nas", "os2", "osles", "osx", "psp", "sam9407", "sb", "sgi", "sndio", "sun",
                     "ultra", "win", "wss", "xaudio2")),
                 "drivers/dos/*", "posix/memcmp.c", "posix/strstr.c", "loaders/load_umx.c"),
    ),
    # jbig2dec (0.19-3: the security update's files are not on the mirror): the library, and the jbig2dec command
    # with its SHA-1 and PNG output. Left out: getopt.c and getopt1.c (GNU getopt, as in speex; not built with
    # glibc's getopt_long), memcmp.c (AC_FUNC_MEMCMP's replacement), memento.c and pbm2png.c (not built).
    "jbig2dec": dict(
        flags=("-DHAVE_CONFIG_H",),
        generated={"config.h": JBIG2DEC_CONFIG, "config_types.h": JBIG2DEC_CONFIG_TYPES},
        exclude=("getopt.c", "getopt1.c", "memcmp.c", "memento.c", "pbm2png.c"),
        fallback_version="0.19-3",
    ),
}
