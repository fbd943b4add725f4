"""The recipes of six C packages the farm had never compiled, for a fresh policy-evaluation set.

expat (XML), lcms2 (colour management), speex (speech codec), libexif (image metadata), libconfig
(configuration files) and libxmp (tracker-module player). Plain data: each entry is the keyword arguments
of a `workers.debrecipes.Recipe`, which `workers/debrecipes.py` builds and merges into `RECIPES` (this
module imports nothing of the farm's, so there is no import cycle). The headers are those Debian 12's
build writes on x86-64, the defines those it passes. All six are evaluation packages (workers/packages.py).
"""

from __future__ import annotations


def _defines(*names: str) -> str:
    """A generated config header: one `#define` per entry (`NAME VALUE`)."""
    return "".join(f"#define {n}\n" for n in names)


def _have(*names: str) -> tuple[str, ...]:
    """`HAVE_<NAME> 1` for each header or function (autoconf's AC_CHECK_HEADERS and AC_CHECK_FUNCS)."""
    return tuple(f"HAVE_{n} 1" for n in names)


def _have_headers(*names: str) -> tuple[str, ...]:
    """`HAVE_<NAME>_H 1` for each header (autoconf's AC_CHECK_HEADERS and its default includes)."""
    return _have(*(f"{n}_H" for n in names))


def _package(tarname: str, version: str, name: str | None = None, bugreport: str = "", url: str = "",
             automake: bool = True) -> tuple[str, ...]:
    """AC_INIT's PACKAGE_* defines (and AM_INIT_AUTOMAKE's PACKAGE and VERSION unless `automake` is off)."""
    name = name or tarname
    return (f'PACKAGE_NAME "{name}"', f'PACKAGE_TARNAME "{tarname}"', f'PACKAGE_VERSION "{version}"',
            f'PACKAGE_STRING "{name} {version}"', f'PACKAGE_BUGREPORT "{bugreport}"', f'PACKAGE_URL "{url}"',
            *((f'PACKAGE "{tarname}"', f'VERSION "{version}"') if automake else ()))


#: What autoconf 2.71's default includes find on Debian 12 (each package's build runs autoreconf).
_STD_HEADERS = (*_have_headers("INTTYPES", "STDINT", "STDIO", "STDLIB", "STRINGS", "STRING", "SYS_STAT", "SYS_TYPES",
                               "UNISTD"), "STDC_HEADERS 1")
#: ... and what libtool adds.
_AUTOCONF = (*_STD_HEADERS, "HAVE_DLFCN_H 1", 'LT_OBJDIR ".libs/"')
#: What autoconf 2.71's AC_USE_SYSTEM_EXTENSIONS (AC_GNU_SOURCE) defines on Linux.
_SYSTEM_EXTENSIONS = tuple(f"{d} 1" for d in (
    "_ALL_SOURCE", "_DARWIN_C_SOURCE", "__EXTENSIONS__", "_GNU_SOURCE", "_HPUX_ALT_XOPEN_SOCKET_API", "_NETBSD_SOURCE",
    "_OPENBSD_SOURCE", "_POSIX_PTHREAD_SEMANTICS", "__STDC_WANT_IEC_60559_ATTRIBS_EXT__",
    "__STDC_WANT_IEC_60559_BFP_EXT__", "__STDC_WANT_IEC_60559_DFP_EXT__", "__STDC_WANT_IEC_60559_FUNCS_EXT__",
    "__STDC_WANT_IEC_60559_TYPES_EXT__", "__STDC_WANT_LIB_EXT2__", "__STDC_WANT_MATH_SPEC_FUNCS__", "_TANDEM_SOURCE"))

#: expat's expat_config.h as configure writes it (glibc 2.36 has arc4random_buf and getrandom).
EXPAT_CONFIG = _defines(
    *_AUTOCONF, *_have_headers("FCNTL", "SYS_PARAM"), "BYTEORDER 1234", "HAVE_ARC4RANDOM_BUF 1",
    "HAVE_GETRANDOM 1", "HAVE_SYSCALL_GETRANDOM 1", "HAVE_GETPAGESIZE 1", "HAVE_MMAP 1",
    *_package("expat", "2.5.0", bugreport="expat-bugs@libexpat.org"), "XML_CONTEXT_BYTES 1024", "XML_DEV_URANDOM 1",
    "XML_DTD 1", "XML_NS 1",
)

#: The defines lcms2's configure passes on the command line (it writes no config header; AM_INIT_AUTOMAKE has
#: no-define) with Debian's CMS_PTR_ALIGNMENT, which keeps its allocations aligned for doubles.
LCMS2_DEFINES = (
    *(d.replace(" ", "=", 1) for d in (*_AUTOCONF, *_package("lcms2", "2.14", automake=False))),
    "HAVE_FUNC_ATTRIBUTE_VISIBILITY=1", "HAVE_PTHREAD=1", "HAVE_GMTIME_R=1",
    "HasTHREADS=1", "HasJPEG=1", "HasZLIB=1", "HasTIFF=1", "CMS_PTR_ALIGNMENT=_Alignof(double)",
)

#: speex's config.h: the floating-point build with SSE (the x86-64 default), smallft unused without the Vorbis
#: psychoacoustic model, C99 variable-length arrays.
SPEEX_CONFIG = _defines(
    *_AUTOCONF, *_have_headers("ALLOCA", "GETOPT", "SYS_SOUNDCARD"), "HAVE_GETOPT_LONG 1",
    'EXPORT __attribute__((visibility("default")))', "FLOATING_POINT", "_USE_SSE", "USE_SMALLFT", "VAR_ARRAYS",
    *(f"SIZEOF_{t} {n}" for t, n in (("INT", 4), ("INT16_T", 2), ("INT32_T", 4), ("LONG", 8), ("SHORT", 2),
                                     ("UINT16_T", 2), ("UINT32_T", 4), ("U_INT16_T", 2), ("U_INT32_T", 4))),
    *_package("speex", "1.2.1", bugreport="speex-dev@xiph.org", automake=False), 'SPEEX_EXTRA_VERSION ""',
    "SPEEX_MAJOR_VERSION 1", "SPEEX_MINOR_VERSION 2", "SPEEX_MICRO_VERSION 1", 'SPEEX_VERSION "1.2.1"',
)
SPEEX_CONFIG_TYPES = (
    "#ifndef __SPEEX_TYPES_H__\n#define __SPEEX_TYPES_H__\n#include <stdint.h>\ntypedef int16_t spx_int16_t;\n"
    "typedef uint16_t spx_uint16_t;\ntypedef int32_t spx_int32_t;\ntypedef uint32_t spx_uint32_t;\n#endif\n"
)

#: libexif's config.h: gettext from glibc (NLS on), localtime_r.
LIBEXIF_CONFIG = _defines(
    *_AUTOCONF, "ENABLE_NLS 1", "HAVE_DCGETTEXT 1", "HAVE_GETTEXT 1", "HAVE_ICONV 1", "ICONV_CONST",
    "HAVE_LOCALTIME_R 1",
    *_package("libexif", "0.6.24", name="EXIF library", bugreport="libexif-devel@lists.sourceforge.net",
              url="https://libexif.github.io/"),
)

#: libexif/_stdint.h as configure's AX_NEED_STDINT_H writes it where stdint.h has uint8_t.
LIBEXIF_STDINT_H = "/* This file is generated automatically by configure */\n#include <stdint.h>\n"

#: libconfig's ac_config.h (glibc 2.36 has newlocale and uselocale but no xlocale.h; flex's yytext is a pointer).
LIBCONFIG_CONFIG = _defines(
    *_AUTOCONF, "HAVE_WCHAR_H 1", *_SYSTEM_EXTENSIONS, "HAVE_NEWLOCALE 1", "HAVE_USELOCALE 1", "HAVE_FREELOCALE 1",
    'TARGET "x86_64-pc-linux-gnu"', "YYTEXT_POINTER 1",
    *_package("libconfig", "1.5", bugreport="hyperrealm@gmail.com", url="http://www.hyperrealm.com/main.php?s=libconfig"),
)

#: The defines libxmp's configure passes (an AC_INIT without arguments: empty PACKAGE_*; no config header) and
#: its visibility switches for the shared library, as gcc 12 passes the checks.
LIBXMP_DEFINES = (
    *(d.replace(" ", "=", 1) for d in (*_package("", "", automake=False), *_STD_HEADERS)),
    "HAVE_LIBM=1", "HAVE_ALLOCA_H=1", "HAVE_DIRENT_H=1",
    *(f"HAVE_{f}=1" for f in ("POPEN", "MKSTEMP", "FNMATCH", "UMASK", "ROUND", "POWF", "WAIT", "PIPE", "FORK",
                              "EXECVP", "DUP2")),
    "XMP_SYM_VISIBILITY", "HAVE_EXTERNAL_VISIBILITY", "HAVE_ATTRIBUTE_SYMVER", "_REENTRANT",
)

#: Keyword arguments of each package's `Recipe`, by Debian source package.
RECIPES: dict[str, dict] = {
    # The library, xmlwf (with the mmap file reader configure picks), the tests, the benchmark and the examples;
    # xmltok_impl.c and xmltok_ns.c are #included by xmltok.c; ct.c, xmlmime.c, readfilemap.c and gennmtab are
    # in the tarball only; the fuzzers are CMake's alone.
    "expat": dict(
        subdirs=("expat/lib", "expat/xmlwf", "expat/tests", "expat/examples"),
        flags=("-DHAVE_CONFIG_H", "-DXML_ENABLE_VISIBILITY=1", "-I{src}/expat", "-I{src}/expat/lib"),
        generated={"expat/expat_config.h": EXPAT_CONFIG},
        exclude=("expat/lib/xmltok_impl.c", "expat/lib/xmltok_ns.c", "expat/xmlwf/ct.c", "expat/xmlwf/xmlmime.c",
                 "expat/xmlwf/readfilemap.c", "expat/xmlwf/win32filemap.c"),
        fallback_version="2.5.0-1+deb12u2",  # +deb12u5's debian diff is missing on this machine's mirror
    ),
    # The library, testcms and the transicc, linkicc and psicc tools with their shared helpers; jpgicc and tificc
    # need libjpeg-dev and libtiff-dev (not installed); Debian builds neither alpha_test.c, the samples nor the plugins.
    "lcms2": dict(
        subdirs=("src", "testbed", "utils"),
        flags=(*(f"-D{d}" for d in LCMS2_DEFINES), "-I{src}/include", "-I{src}/src", "-I{src}/utils/common",
               "-pthread"),
        exclude=("testbed/alpha_test.c", "utils/jpgicc/*", "utils/tificc/*", "utils/samples/*", "utils/matlab/*"),
    ),
    # libspeex and its testenc programs, and the WAV reader of speexenc/speexdec; the programs themselves need
    # libogg-dev (not installed); the FFTs and the Vorbis model are --enable-vorbis-psy's; getopt is glibc's.
    "speex": dict(
        subdirs=("libspeex", "src"),
        flags=("-DHAVE_CONFIG_H", "-I{src}", "-I{src}/include", "-I{src}/include/speex"),
        generated={"config.h": SPEEX_CONFIG, "include/speex/speex_config_types.h": SPEEX_CONFIG_TYPES},
        exclude=("libspeex/vorbis_psy.c", "libspeex/kiss_fft*.c", "libspeex/smallft.c", "src/speexenc.c",
                 "src/speexdec.c", "src/skeleton.c", "src/getopt*.c", "src/wave_out.c"),
    ),
    # The library with its maker-note readers, the check programs and the contrib examples `make check` builds.
    "libexif": dict(
        subdirs=("libexif", "test", "contrib/examples"),
        flags=("-DHAVE_CONFIG_H", '-DGETTEXT_PACKAGE="libexif-12"', '-DLOCALEDIR="/usr/share/locale"', "-I{src}"),
        generated={"config.h": LIBEXIF_CONFIG, "libexif/_stdint.h": LIBEXIF_STDINT_H},
        exclude=("test/test-fuzzer-persistent.c", "test/nls/test-nls.c", "test/nls/test-codeset.c",
                 "contrib/examples/cam_features.c"),
    ),
    # The C library (its scanner and parser as the tarball ships them from flex and bison), tinytest, the tests
    # and the C examples; libconfig++ is C++.
    "libconfig": dict(
        subdirs=("lib", "tinytest", "tests", "examples/c"),
        flags=("-DHAVE_CONFIG_H", "-D_REENTRANT", '-DPARSER_PREFIX="libconfig_yy"', "-I{src}", "-I{src}/lib",
               "-I{src}/tinytest"),
        generated={"ac_config.h": LIBCONFIG_CONFIG},
    ),
    # The library (every loader, ProWizard converter and depacker) and the test its `make check` builds; win32.c
    # and mkstemp.c are empty on Linux (a Windows snprintf, a fallback for glibc's mkstemp), the PROWIZ_OBJS2
    # converters are in the tarball only (they no longer compile). clang ignores gcc's externally_visible and symver.
    "libxmp": dict(
        subdirs=("src", "test"),
        flags=(*(f"-D{d}" for d in LIBXMP_DEFINES), "-I{src}/include", "-I{src}/src"),
        exclude=("src/win32/*", "src/os2/*", "src/win32.c", "src/mkstemp.c",
                 *(f"src/loaders/prowizard/{f}.c" for f in ("pm", "pm01", "pm20", "pm40", "pp30"))),
    ),
}
