// Itanium C++ exception handling (the x86-64 Linux ABI): invoke, landingpad, resume, and the
// { ptr, i32 } landing-pad struct (StructTy, ExtractValue, InsertValue). LLVM's own code is
// compiled with -fno-exceptions, so a corpus of it never shows any of these.
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

int cleanup_then_resume(int x) {  // no catch: the landing pad only runs the destructor, then resumes
  int live = 0;
  Guard g(&live);
  may_throw(x);
  may_throw(x + 1);
  return live;
}

void throw_if(int x) {
  if (x > 3)
    throw x;
}

int rethrow(int x) {
  try {
    throw_if(x);
  } catch (...) {
    if (x > 10)
      throw;
    return 1;
  }
  return 0;
}
