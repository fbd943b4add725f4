// mlgo-farm-flags: -fno-math-errno
// Floating point: fneg, frem (fmod without errno becomes the instruction), every conversion
// (fptosi, fptoui, sitofp, uitofp, fptrunc, fpext), fdiv, and ordered and unordered compares: 14 of
// the 16 FCMP_* predicates (clang never emits `fcmp false`/`fcmp true`, and LLVM folds them). LLVM's code hardly computes in floating point.
double negate(double x) { return -x; }
float negatef(float x) { return -x; }
double remainder_of(double a, double b) { return __builtin_fmod(a, b); }
float remainder_off(float a, float b) { return __builtin_fmodf(a, b); }

int to_signed(double x) { return (int)x; }
long long to_signed_wide(float x) { return (long long)x; }
unsigned to_unsigned(double x) { return (unsigned)x; }
double from_signed(int x) { return x; }
double from_unsigned(unsigned long x) { return (double)x; }
float narrow(double x) { return (float)x; }
long double widen(double x) { return x; }

/* One predicate per function: combined in one expression the optimizer folds them away. The
   unordered ones come from negated ordered compares (InstCombine inverts the predicate). */
int p_oeq(double a, double b) { return a == b; }
int p_une(double a, double b) { return a != b; }
int p_olt(double a, double b) { return a < b; }
int p_ole(double a, double b) { return a <= b; }
int p_ogt(double a, double b) { return a > b; }
int p_oge(double a, double b) { return a >= b; }
int p_uno(double a, double b) { return __builtin_isunordered(a, b); }
int p_ord(double a, double b) { return !__builtin_isunordered(a, b); }
int p_one(double a, double b) { return __builtin_islessgreater(a, b); }
int p_ueq(double a, double b) { return !__builtin_islessgreater(a, b); }
int p_uge(double a, double b) { return !(a < b); }
int p_ugt(double a, double b) { return !(a <= b); }
int p_ule(double a, double b) { return !(a > b); }
int p_ult(double a, double b) { return !(a >= b); }
double ratio(double a, double b) { return a / b; }

int classify(float x) { return __builtin_isnan(x) + __builtin_isinf(x) * 2 + __builtin_isfinite(x) * 4; }
