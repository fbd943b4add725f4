#ifdef HAVE_STDINT_H
#  include <stdint.h>
#endif
