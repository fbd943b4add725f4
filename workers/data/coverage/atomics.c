// Atomics: fence, atomicrmw, cmpxchg (whose { i32, i1 } result is a StructTy read with
// extractvalue), atomic loads and stores. LLVM's passes themselves are single-threaded code.
int counter;
long wide;

void fences(void) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  __atomic_signal_fence(__ATOMIC_ACQUIRE);
  __atomic_thread_fence(__ATOMIC_RELEASE);
}

int rmw(int x) {
  int a = __atomic_fetch_add(&counter, x, __ATOMIC_SEQ_CST);
  int b = __atomic_fetch_sub(&counter, 1, __ATOMIC_RELAXED);
  int c = __atomic_fetch_and(&counter, 0xff, __ATOMIC_ACQ_REL);
  int d = __atomic_fetch_or(&counter, 4, __ATOMIC_RELEASE);
  int e = __atomic_exchange_n(&counter, x, __ATOMIC_ACQUIRE);
  long f = __atomic_fetch_max(&wide, (long)x, __ATOMIC_SEQ_CST);
  return a + b + c + d + e + (int)f;
}

int cas(int expected, int desired) {
  int ok = __atomic_compare_exchange_n(&counter, &expected, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  long w = 0;
  ok += __atomic_compare_exchange_n(&wide, &w, 7L, 1, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
  return ok ? expected : -expected;
}

int spin_once(void) {
  int v = __atomic_load_n(&counter, __ATOMIC_ACQUIRE);
  __atomic_store_n(&counter, v + 1, __ATOMIC_RELEASE);
  return v;
}
