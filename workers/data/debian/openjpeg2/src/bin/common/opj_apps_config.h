#include "opj_config_private.h"
#define OPJ_HAVE_LIBPNG 1
#define OPJ_HAVE_PNG_H 1
#define OPJ_HAVE_LIBTIFF 1
#define OPJ_HAVE_TIFF_H 1
#define OPJ_HAVE_LIBLCMS2
#define OPJ_HAVE_LCMS2_H
