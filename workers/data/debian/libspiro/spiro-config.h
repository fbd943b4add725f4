#define PACKAGE "libspiro"
#define VERSION "20221101"
#define PACKAGE_NAME "spiro"
#define PACKAGE_TARNAME "libspiro"
#define PACKAGE_VERSION "20221101"
#define PACKAGE_STRING "spiro 20221101"
#define PACKAGE_BUGREPORT "fontforge-devel@lists.sourceforge.net"
#define PACKAGE_URL "https://github.com/fontforge/libspiro"
#define HAVE_DLFCN_H 1
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
#define LT_OBJDIR ".libs/"
#define HAVE_HYPOT 1
#define HAVE_ISFINITE 1
#define HAVE_PTHREADS 1
#define DO_TIME_DAY 1
#define S_TESTP 100
#define LS_VERSION_MJ 1
#define LS_VERSION_MN 3
#define LS_VERSION_STR "1.3"
/* Define IS_FINITE(x) to isfinite(x) or finite(x) */
#if HAVE_ISFINITE
#define IS_FINITE(x) isfinite(x)
#else
#if HAVE_FINITE
#define IS_FINITE(x) finite(x)
#endif
#endif
