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
#define HAVE_LIMITS_H 1
#define HAVE_DIRENT_H 1
#define HAVE_BCOPY 1
#define HAVE_MEMMOVE 1
#define HAVE_STRERROR 1
#define HAVE_STRING 1
#define HAVE_BITS_TYPE_TRAITS_H 1
#define HAVE_LONG_LONG 1
#define HAVE_UNSIGNED_LONG_LONG 1
#define HAVE_STRTOLL 1
#define HAVE_STRTOQ 1
#define HAVE_STRTOIMAX 1
#define HAVE_PTHREAD 1
#define HAVE_PTHREAD_PRIO_INHERIT 1
#define HAVE_VISIBILITY 1
#define SUPPORT_PCRE8
#define SUPPORT_PCRE16
#define SUPPORT_PCRE32
#define SUPPORT_JIT
#define SUPPORT_PCREGREP_JIT
#define SUPPORT_UTF
#define SUPPORT_UCP
#define NEWLINE 10
#define LINK_SIZE 2
#define POSIX_MALLOC_THRESHOLD 10
#define PARENS_NEST_LIMIT 250
#define MATCH_LIMIT 10000000
#define MATCH_LIMIT_RECURSION MATCH_LIMIT
#define MAX_NAME_SIZE 32
#define MAX_NAME_COUNT 10000
#define PCREGREP_BUFSIZE 20480
#define PCRE_EXP_DECL extern __attribute__ ((visibility ("default")))
#define PCRE_EXP_DEFN __attribute__ ((visibility ("default")))
#define PCRE_EXP_DATA_DEFN __attribute__ ((visibility ("default")))
#define PCREPOSIX_EXP_DECL extern __attribute__ ((visibility ("default")))
#define PCREPOSIX_EXP_DEFN extern __attribute__ ((visibility ("default")))
#define PCRECPP_EXP_DECL extern __attribute__ ((visibility ("default")))
#define PCRECPP_EXP_DEFN __attribute__ ((visibility ("default")))
#define PACKAGE_NAME "PCRE"
#define PACKAGE_TARNAME "pcre"
#define PACKAGE_VERSION "8.39"
#define PACKAGE_STRING "PCRE 8.39"
#define PACKAGE_BUGREPORT ""
#define PACKAGE_URL ""
#define PACKAGE "pcre"
#define VERSION "8.39"
