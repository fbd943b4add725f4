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
#define HAVE_WCHAR_H 1
#define _ALL_SOURCE 1
#define _DARWIN_C_SOURCE 1
#define __EXTENSIONS__ 1
#define _GNU_SOURCE 1
#define _HPUX_ALT_XOPEN_SOCKET_API 1
#define _NETBSD_SOURCE 1
#define _OPENBSD_SOURCE 1
#define _POSIX_PTHREAD_SEMANTICS 1
#define __STDC_WANT_IEC_60559_ATTRIBS_EXT__ 1
#define __STDC_WANT_IEC_60559_BFP_EXT__ 1
#define __STDC_WANT_IEC_60559_DFP_EXT__ 1
#define __STDC_WANT_IEC_60559_FUNCS_EXT__ 1
#define __STDC_WANT_IEC_60559_TYPES_EXT__ 1
#define __STDC_WANT_LIB_EXT2__ 1
#define __STDC_WANT_MATH_SPEC_FUNCS__ 1
#define _TANDEM_SOURCE 1
#define HAVE_ALLOCA 1
#define HAVE_ALLOCA_H 1
#define HAVE_VARIABLE_SIZE_ARRAYS 1
#define HAVE_STRUCT_STAT_ST_ATIM_TV_NSEC 1
#define HAVE_CLOCK_GETTIME 1
#define HAVE_GETTIMEOFDAY 1
#define HAVE_EXPLICIT_BZERO 1
#define HAVE_LIMITS_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_STDBOOL_H 1
#define HAVE_UNSIGNED_LONG_LONG_INT 1
#define HAVE_VISIBILITY 1
#define SIZEOF_UNSIGNED_INT 4
#define SIZEOF_UNSIGNED_LONG_INT 8
#define _GL_INLINE inline
#define _GL_EXTERN_INLINE extern inline
#define _GL_INLINE_HEADER_BEGIN
#define _GL_INLINE_HEADER_END
#define _GL_ATTRIBUTE_CONST __attribute__ ((__const__))
#define _GL_ATTRIBUTE_PURE __attribute__ ((__pure__))
#define _GL_ATTRIBUTE_MALLOC __attribute__ ((__malloc__))
#define _GL_ATTRIBUTE_DEALLOC(f, i)
#define _GL_ATTRIBUTE_ALLOC_SIZE(args) __attribute__ ((__alloc_size__ args))
#define _GL_CMP(n1, n2) (((n1) > (n2)) - ((n1) < (n2)))
#define _GL_ATTRIBUTE_DEALLOC_FREE _GL_ATTRIBUTE_DEALLOC (free, 1)
#define _GL_ATTRIBUTE_UNUSED __attribute__ ((__unused__))
#define _GL_ATTRIBUTE_MAYBE_UNUSED _GL_ATTRIBUTE_UNUSED
#define _GL_UNUSED _GL_ATTRIBUTE_MAYBE_UNUSED
#define _GL_ATTRIBUTE_NODISCARD __attribute__ ((__warn_unused_result__))
#define _GL_ATTRIBUTE_SENTINEL(pos) __attribute__ ((__sentinel__ pos))
#define _GL_ATTRIBUTE_FORMAT(spec) __attribute__ ((__format__ spec))
#define _GL_ATTRIBUTE_NOTHROW __attribute__ ((__nothrow__))
#define _GL_ARG_NONNULL(params) __attribute__ ((__nonnull__ params))
#define PACKAGE_NAME "libtasn1"
#define PACKAGE_TARNAME "libtasn1"
#define PACKAGE_VERSION "4.19.0"
#define PACKAGE_STRING "libtasn1 4.19.0"
#define PACKAGE_BUGREPORT "help-libtasn1@gnu.org"
#define PACKAGE_URL "https://www.gnu.org/software/libtasn1/"
#define PACKAGE "libtasn1"
#define VERSION "4.19.0"
