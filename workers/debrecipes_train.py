"""The long constants of the recipes of the extra training packages (mbedtls, json-c, wavpack, libpng1.6).

Plain data, read by `workers/debrecipes.py`, whose `RECIPES` holds the recipes themselves: what Debian 12's
build would configure on x86-64, spelled as the defines each package's build passes or writes.
"""

from __future__ import annotations

#: The options debian/rules turns on in mbedtls's config.h with scripts/config.py (all commented out upstream).
MBEDTLS_DEBIAN_OPTIONS = (
    "MBEDTLS_DEPRECATED_WARNING", "MBEDTLS_HAVEGE_C", "MBEDTLS_MD2_C", "MBEDTLS_MD4_C", "MBEDTLS_THREADING_C",
    "MBEDTLS_THREADING_PTHREAD", "MBEDTLS_CMAC_C", "MBEDTLS_SSL_DTLS_SRTP",
)

#: json-c's config.h as its CMakeLists.txt writes it from cmake/config.h.in on Debian 12 (glibc 2.36 has
#: arc4random and getrandom; no xlocale.h), with Debian's patch that drops PACKAGE_NAME.
JSON_C_CONFIG = (
    *(f"HAVE_{h}_H" for h in (
        "DLFCN", "ENDIAN", "FCNTL", "INTTYPES", "LIMITS", "LOCALE", "MEMORY", "STDARG", "STDINT", "STDLIB",
        "STRINGS", "STRING", "SYS_CDEFS", "SYS_RANDOM", "SYS_RESOURCE", "SYS_STAT")),
    "HAVE_SYSLOG_H 1", "HAVE_SYS_PARAM_H 1", "HAVE_SYS_TYPES_H 1", "HAVE_UNISTD_H 1",
    *(f"HAVE_{f}" for f in (
        "ARC4RANDOM", "ATOMIC_BUILTINS", "DECL_INFINITY", "DECL_ISINF", "DECL_ISNAN", "DECL_NAN", "OPEN",
        "REALLOC", "SETLOCALE", "SNPRINTF", "STRDUP", "STRERROR", "USELOCALE", "VASPRINTF", "VPRINTF",
        "VSNPRINTF", "GETRANDOM", "GETRUSAGE", "STRTOLL", "STRTOULL", "__THREAD")),
    "HAVE_STRCASECMP 1", "HAVE_STRNCASECMP 1", "HAVE_VSYSLOG 1", "JSON_C_HAVE_INTTYPES_H 1", 'PACKAGE "json-c"',
    'PACKAGE_BUGREPORT "json-c@googlegroups.com"', 'PACKAGE_STRING "json-c 0.16.0"', 'PACKAGE_TARNAME "json-c"',
    'PACKAGE_URL "https://github.com/json-c/json-c"', 'PACKAGE_VERSION "0.16.0"', "SIZEOF_INT 4",
    "SIZEOF_INT64_T 8", "SIZEOF_LONG 8", "SIZEOF_LONG_LONG 8", "SIZEOF_SIZE_T 8", "SIZEOF_SSIZE_T 8",
    "SPEC___THREAD __thread", "STDC_HEADERS", 'VERSION "0.16.0"',
)
#: apps/'s apps_config.h as CMake writes it.
JSON_C_APPS_CONFIG = ("HAVE_SYS_RESOURCE_H", "HAVE_GETRUSAGE", "HAVE_JSON_TOKENER_GET_PARSE_END")
#: json.h as CMake writes it from json.h.cmakein (JSON pointer support on).
JSON_C_JSON_H = (
    '#ifndef _json_h_\n#define _json_h_\n#ifdef __cplusplus\nextern "C" {\n#endif\n'
    + "".join(f'#include "{h}.h"\n' for h in (
        "arraylist", "debug", "json_c_version", "json_object", "json_object_iterator", "json_pointer",
        "json_tokener", "json_util", "linkhash"))
    + "#ifdef __cplusplus\n}\n#endif\n#endif\n"
)

#: The defines wavpack's configure passes on the command line (it writes no config.h): Debian's options
#: (DSD on, legacy decoding off) without the x86-64 assembly, whose C fallbacks are compiled instead.
WAVPACK_DEFINES = (
    'PACKAGE_NAME="wavpack"', 'PACKAGE_TARNAME="wavpack"', 'PACKAGE_VERSION="5.6.0"', 'PACKAGE_STRING="wavpack 5.6.0"',
    'PACKAGE_BUGREPORT="bryant@wavpack.com"', 'PACKAGE_URL=""', 'PACKAGE="wavpack"', 'VERSION="5.6.0"',
    "LIBWAVPACK_MAJOR=5", "LIBWAVPACK_MINOR=6", "LIBWAVPACK_MICRO=0", 'LIBWAVPACK_VERSION_STRING="5.6.0"',
    'VERSION_OS="linux-gnu"', "_FILE_OFFSET_BITS=64", "HAVE_FSEEKO=1", "HAVE_ICONV=1", "ICONV_CONST=",
    "ENABLE_DSD=1", "HAVE___BUILTIN_CLZ=1", "HAVE___BUILTIN_CTZ=1",
)

#: libpng's config.h as configure writes it on x86-64 Debian 12 (no hardware-optimization option given: no
#: PNG_*_OPT, so pngpriv.h leaves the SSE2 filters off).
LIBPNG_CONFIG = (
    *(f"HAVE_{h}_H 1" for h in (
        "DLFCN", "INTTYPES", "STDINT", "STDIO", "STDLIB", "STRINGS", "STRING", "SYS_STAT", "SYS_TYPES", "UNISTD")),
    "HAVE_FEENABLEEXCEPT 1", "HAVE_LIBM 1", "HAVE_LIBZ 1", "HAVE_POW 1", 'PACKAGE "libpng"',
    'PACKAGE_BUGREPORT "png-mng-implement@lists.sourceforge.net"', 'PACKAGE_NAME "libpng"',
    'PACKAGE_STRING "libpng 1.6.39"', 'PACKAGE_TARNAME "libpng"', 'PACKAGE_URL ""', 'PACKAGE_VERSION "1.6.39"',
    "STDC_HEADERS 1", 'VERSION "1.6.39"',
)
#: What libpng's recipe leaves out: other architectures' and Windows code; the SSE2 filters (empty: Debian's
#: configure does not turn them on); example.c, documentation inside `#if 0`; scripts/, inputs of the preprocessor
#: runs that make the symbol lists; contrib code the build never makes and that no longer compiles (gregbook's
#: viewers and makepng.c have syntax errors, tarith.c calls a function png.c lost).
LIBPNG_EXCLUDE = (
    "arm/*", "mips/*", "powerpc/*", "intel/*", "contrib/arm-neon/*", "contrib/mips-msa/*", "contrib/powerpc-vsx/*",
    "contrib/visupng/*", "example.c", "scripts/*", "contrib/gregbook/*", "contrib/libtests/makepng.c",
    "contrib/libtests/tarith.c",
)
