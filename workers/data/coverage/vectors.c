// mlgo-farm-flags: -march=x86-64-v3
// Vector code for x86-64-v3 (AVX2, FMA): explicit vectors (extractelement, insertelement,
// shufflevector, VectorTy) and loops the vectorizers widen at O2/O3. LLVM's own code is built
// for the baseline x86-64 and vectorizes little.
typedef float v8f __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));
typedef double v4d __attribute__((vector_size(32)));

float lane(v8f v, int i) { return v[i]; }
v8f set_lane(v8f v, int i, float x) { v[i] = x; return v; }
v8f reverse(v8f v) { return __builtin_shufflevector(v, v, 7, 6, 5, 4, 3, 2, 1, 0); }
v8i mask_gt(v8f a, v8f b) { return a > b; }
v4d fma4(v4d a, v4d b, v4d c) { return a * b + c; }
v8i convert(v8f v) { return __builtin_convertvector(v, v8i); }
v8i reinterpret(v8f v) { return (v8i)v; } /* bitcast: with opaque pointers only non-pointer casts remain */

void saxpy(int n, float a, const float *restrict x, float *restrict y) {
  for (int i = 0; i < n; i++)
    y[i] = a * x[i] + y[i];
}

int dot(int n, const short *a, const short *b) {
  int s = 0;
  for (int i = 0; i < n; i++)
    s += a[i] * b[i];
  return s;
}

void clamp(int n, float *v, float lo, float hi) {
  for (int i = 0; i < n; i++)
    v[i] = v[i] < lo ? lo : (v[i] > hi ? hi : v[i]);
}
