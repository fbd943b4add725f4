#define MSGPACK_ENDIAN_BIG_BYTE 0
#define MSGPACK_ENDIAN_LITTLE_BYTE 1
#include "../../cmake/sysdep.h.in"
