// Signed division and remainder, shifts and pointer <-> integer conversions (sdiv, srem, shl,
// ptrtoint, inttoptr): common in any C, here so that the coverage corpus alone reaches every
// opcode clang emits, whatever corpus it is added to.
#include <stdint.h>

int quotient(int a, int b) { return a / b; }
int remainder_of(int a, int b) { return a % b; }
unsigned scale(unsigned a, int s) { return a << s; }
uintptr_t address_of(const void *p) { return (uintptr_t)p; }
void *pointer_at(uintptr_t a) { return (void *)a; }
void *align_up(void *p, uintptr_t align) { return (void *)(((uintptr_t)p + align - 1) & ~(align - 1)); }
