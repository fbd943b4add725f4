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
#define ENABLE_NLS 1
#define HAVE_DCGETTEXT 1
#define HAVE_GETTEXT 1
#define HAVE_ICONV 1
#define ICONV_CONST
#define HAVE_LOCALTIME_R 1
#define PACKAGE_NAME "EXIF library"
#define PACKAGE_TARNAME "libexif"
#define PACKAGE_VERSION "0.6.24"
#define PACKAGE_STRING "EXIF library 0.6.24"
#define PACKAGE_BUGREPORT "libexif-devel@lists.sourceforge.net"
#define PACKAGE_URL "https://libexif.github.io/"
#define PACKAGE "libexif"
#define VERSION "0.6.24"
