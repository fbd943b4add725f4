// Aggregates as values: _Complex double is returned as { double, double } (insertvalue,
// extractvalue), overflow builtins give { i32, i1 }, and a two-pointer struct travels by value.
struct Pair { void *a, *b; };

_Complex double cmul(_Complex double x, _Complex double y) { return x * y; }
double cabs2(_Complex double x) { return __real__ x * __real__ x + __imag__ x * __imag__ x; }

int add_checked(int a, int b, int *overflow) {
  int r;
  *overflow = __builtin_sadd_overflow(a, b, &r);
  return r;
}

unsigned mul_checked(unsigned a, unsigned b, int *overflow) {
  unsigned r;
  *overflow = __builtin_umul_overflow(a, b, &r);
  return r;
}

struct Pair swap(struct Pair p) { struct Pair q = {p.b, p.a}; return q; }
int integer_compares(int a, int b, unsigned ua, unsigned ub) {
  return (a == b) + (a != b) + (a < b) + (a <= b) + (a > b) + (a >= b) + (ua < ub) + (ua <= ub) + (ua > ub) +
         (ua >= ub);
}
