/* Floating point statistics: fcmp predicates, divisions, conversions, a switch. */
#include <math.h>
#include <stddef.h>

double mean(const double *xs, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s += xs[i];
  return n ? s / (double)n : 0.0;
}

double variance(const double *xs, size_t n) {
  double m = mean(xs, n), s = 0.0;
  for (size_t i = 0; i < n; i++) { double d = xs[i] - m; s += d * d; }
  return n > 1 ? s / (double)(n - 1) : 0.0;
}

double clamp(double x, double lo, double hi) { return x < lo ? lo : (x > hi ? hi : x); }

int classify(double x) {
  if (isnan(x)) return -1;
  if (x >= 1e6) return 3;
  if (x > 1.0) return 2;
  if (x != 0.0) return 1;
  return 0;
}

float scale(float x, int mode) {
  switch (mode) {
    case 0: return x;
    case 1: return x * 2.0f;
    case 2: return x / 3.0f;
    case 3: return sqrtf(fabsf(x));
    default: return (float)(int)x;
  }
}
