#define HAVE_INTTYPES_H 1
#define HAVE_STDINT_H 1
#define HAVE_STDIO_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRINGS_H 1
#define HAVE_STRING_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_UNISTD_H 1
#define STDC_HEADERS 1
#define HAVE_DLFCN_H 1
#define LT_OBJDIR ".libs/"
#define HAVE_ALLOCA_H 1
#define HAVE_GETOPT_H 1
#define HAVE_SYS_SOUNDCARD_H 1
#define HAVE_GETOPT_LONG 1
#define EXPORT __attribute__((visibility("default")))
#define FLOATING_POINT
#define _USE_SSE
#define USE_SMALLFT
#define VAR_ARRAYS
#define SIZEOF_INT 4
#define SIZEOF_INT16_T 2
#define SIZEOF_INT32_T 4
#define SIZEOF_LONG 8
#define SIZEOF_SHORT 2
#define SIZEOF_UINT16_T 2
#define SIZEOF_UINT32_T 4
#define SIZEOF_U_INT16_T 2
#define SIZEOF_U_INT32_T 4
#define PACKAGE_NAME "speex"
#define PACKAGE_TARNAME "speex"
#define PACKAGE_VERSION "1.2.1"
#define PACKAGE_STRING "speex 1.2.1"
#define PACKAGE_BUGREPORT "speex-dev@xiph.org"
#define PACKAGE_URL ""
#define SPEEX_EXTRA_VERSION ""
#define SPEEX_MAJOR_VERSION 1
#define SPEEX_MINOR_VERSION 2
#define SPEEX_MICRO_VERSION 1
#define SPEEX_VERSION "1.2.1"
