#include_next <limits.h>
#ifndef WORD_BIT
#define WORD_BIT 32
#endif
