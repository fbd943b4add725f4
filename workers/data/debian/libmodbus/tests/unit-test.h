#undef HAVE_INTTYPES_H
#undef HAVE_STDINT_H
#include "unit-test.h.in"
#undef HAVE_INTTYPES_H
#undef HAVE_STDINT_H
#define HAVE_INTTYPES_H 1
#define HAVE_STDINT_H 1
