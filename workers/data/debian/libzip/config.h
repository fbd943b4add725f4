#ifndef HAD_CONFIG_H
#define HAD_CONFIG_H
#ifndef _HAD_ZIPCONF_H
#include "zipconf.h"
#endif
#define HAVE_ARC4RANDOM 1
#define HAVE_CRYPTO 1
#define HAVE_FICLONERANGE 1
#define HAVE_FILENO 1
#define HAVE_FSEEKO 1
#define HAVE_FTELLO 1
#define HAVE_LIBBZ2 1
#define HAVE_LOCALTIME_R 1
#define HAVE_OPENSSL 1
#define HAVE_SNPRINTF 1
#define HAVE_STRCASECMP 1
#define HAVE_STRDUP 1
#define HAVE_STRTOLL 1
#define HAVE_STRTOULL 1
#define HAVE_STDBOOL_H 1
#define HAVE_STRINGS_H 1
#define HAVE_UNISTD_H 1
#define HAVE_FTS_H 1
#define HAVE_SHARED 1
#define SIZEOF_OFF_T 8
#define SIZEOF_SIZE_T 8
#define PACKAGE "libzip"
#define VERSION "1.7.3"
#endif
