/* Sorting and searching: recursion, function pointers, small static helpers to inline. */
#include <stddef.h>

typedef int (*cmp_fn)(const void *, const void *);

static void swap_int(int *a, int *b) { int t = *a; *a = *b; *b = t; }

static int less(int a, int b) { return a < b; }

static size_t partition(int *v, size_t lo, size_t hi) {
  int pivot = v[hi];
  size_t i = lo;
  for (size_t j = lo; j < hi; j++)
    if (less(v[j], pivot)) swap_int(&v[i++], &v[j]);
  swap_int(&v[i], &v[hi]);
  return i;
}

void quicksort(int *v, size_t lo, size_t hi) {
  if (lo >= hi) return;
  size_t p = partition(v, lo, hi);
  if (p > 0) quicksort(v, lo, p - 1);
  quicksort(v, p + 1, hi);
}

long binary_search(const int *v, size_t n, int key) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid] == key) return (long)mid;
    if (v[mid] < key) lo = mid + 1; else hi = mid;
  }
  return -1;
}

int count_if(const int *v, size_t n, int (*pred)(int)) {
  int c = 0;
  for (size_t i = 0; i < n; i++) c += pred(v[i]) != 0;
  return c;
}

unsigned long long checksum(const unsigned char *p, size_t n) {
  unsigned long long a = 1, b = 0;
  for (size_t i = 0; i < n; i++) { a = (a + p[i]) % 65521; b = (b + a) % 65521; }
  return (b << 16) | a;
}
