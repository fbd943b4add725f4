// mlgo-farm-flags: --target=x86_64-pc-windows-msvc -fexceptions -fcxx-exceptions
// Windows (funclet) C++ exception handling: catchswitch, catchpad, catchret, cleanuppad,
// cleanupret, and the token values they pass (TokenTy). Only MSVC-ABI targets emit these, so the
// module is compiled for x86_64-pc-windows-msvc (still x86-64 code for the MIR datasets).
struct Guard {
  int *count;
  explicit Guard(int *c) : count(c) { ++*count; }
  ~Guard() { --*count; }
};

void may_throw(int x);

int catch_int_or_any(int x) {
  int live = 0;
  try {
    Guard g(&live);
    may_throw(x);
  } catch (int e) {
    return e + live;
  } catch (...) {
    return -1;
  }
  return live;
}

int cleanup_only(int x) {
  int live = 0;
  Guard g(&live);
  may_throw(x);
  return live;
}
