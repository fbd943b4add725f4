// mlgo-farm-flags: --target=aarch64-linux-gnu -march=armv9-a+sme2 -ffreestanding
// Types x86-64 C does not produce as instruction results: a target extension type
// (`target("aarch64.svcount")`, which IR2Vec files under UnknownTy) and arrays (`[4 x float]`,
// how AArch64 passes a homogeneous float aggregate, loaded as one ArrayTy value). IR datasets only.
#include <arm_sve.h>

struct Quad { float a, b, c, d; };

float quad_sum(struct Quad q) { return q.a + q.b + q.c + q.d; }
float call_quad(const struct Quad *q) { return quad_sum(*q); }

svcount_t keep_count(svcount_t c) { return c; }
svcount_t pass_count(svcount_t c) {
  svcount_t copy = c;
  return keep_count(copy);
}
