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
#define PACKAGE_NAME "Lhasa"
#define PACKAGE_TARNAME "lhasa"
#define PACKAGE_VERSION "0.3.1"
#define PACKAGE_STRING "Lhasa 0.3.1"
#define PACKAGE_BUGREPORT "fraggle@gmail.com"
#define PACKAGE_URL ""
