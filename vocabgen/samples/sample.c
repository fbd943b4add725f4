/* Sample module for vocabulary validation: LLVM must give these functions non-zero embeddings. */
#include <stddef.h>

struct point { double x, y; int tag; };

static int counter;

int sum_ints(const int *p, size_t n) {
  int s = 0;
  for (size_t i = 0; i < n; i++)
    s += p[i] > 0 ? p[i] : -p[i];
  return s;
}

unsigned long mix(unsigned long a, unsigned long b) {
  a ^= b >> 7;
  a *= 0x9E3779B97F4A7C15ul;
  return (a << 3) | (b & 0xff);
}

int classify(int c) {
  switch (c) {
  case 0: return 10;
  case 1: return 20;
  case 7: return c * 3;
  default: return c / 2 - c % 5;
  }
}

double norm2(const struct point *p) { return p->x * p->x + p->y * p->y; }

double average(const double *v, int n) {
  double s = 0.0;
  for (int i = 0; i < n; i++)
    s += v[i];
  return n ? s / n : 0.0;
}

int call_twice(int (*f)(int), int v) {
  counter++;
  return f(f(v)) + classify(v);
}
