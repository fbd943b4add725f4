/* A benchmark program: builds data, sorts, hashes, and prints a checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void quicksort(int *v, size_t lo, size_t hi);
long binary_search(const int *v, size_t n, int key);
unsigned long long checksum(const unsigned char *p, size_t n);
double variance(const double *xs, size_t n);

int main(int argc, char **argv) {
  size_t n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 20000;
  int *v = malloc(n * sizeof *v);
  double *d = malloc(n * sizeof *d);
  unsigned seed = 12345;
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    v[i] = (int)(seed >> 8) % 100000;
    d[i] = v[i] / 7.0;
  }
  quicksort(v, 0, n - 1);
  long found = 0;
  for (size_t i = 0; i < n; i += 7) found += binary_search(v, n, v[i]) >= 0;
  printf("%ld %llu %.3f\n", found, checksum((unsigned char *)v, n * sizeof *v), variance(d, n));
  free(v);
  free(d);
  return 0;
}
