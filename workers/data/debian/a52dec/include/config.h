#define HAVE_INTTYPES_H 1
#define HAVE_STDINT_H 1
#define HAVE_STDIO_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRINGS_H 1
#define HAVE_STRING_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_UNISTD_H 1
#define HAVE_DLFCN_H 1
#define STDC_HEADERS 1
#define LT_OBJDIR ".libs/"
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_TIMEB_H 1
#define HAVE_MEMALIGN 1
#define HAVE_GETTIMEOFDAY 1
#define HAVE_FTIME 1
#define LIBAO_OSS
#define ATTRIBUTE_ALIGNED_MAX 64
#define RETSIGTYPE void
#define restrict __restrict__
#define SIZEOF_CHAR 1
#define SIZEOF_INT 4
#define SIZEOF_SHORT 2
#define inline __attribute__ ((__always_inline__))
#define PACKAGE_NAME "a52dec"
#define PACKAGE_TARNAME "a52dec"
#define PACKAGE_VERSION "0.7.4"
#define PACKAGE_STRING "a52dec 0.7.4"
#define PACKAGE_BUGREPORT ""
#define PACKAGE_URL ""
#define PACKAGE "a52dec"
#define VERSION "0.7.4"
