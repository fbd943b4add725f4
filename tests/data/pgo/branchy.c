/* A PGO benchmark: which branch of `classify` is hot depends on the input, so a profile flips the code's layout.
   The argument is a count, or a file holding "MODE COUNT" (the training input, train/hot.txt); mode 9 waits for a
   signal forever (a training run that hangs). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) long classify(long x, int mode) {
  if ((x % 5 == 0) == (mode != 0)) {
    long s = x;
    for (int k = 0; k < 3; k++) s = s * 31 + (s >> 7);
    return s & 0xffff;
  }
  return x % 13 == 0 ? -x : x / 3;
}

__attribute__((noinline)) long never_in_training(long x) { return x * 7 + (x >> 2) - 1; }

int main(int argc, char **argv) {
  long n = 200000;
  int mode = 0;
  if (argc > 1 && (argv[1][0] < '0' || argv[1][0] > '9')) {
    FILE *f = fopen(argv[1], "r");
    if (!f || fscanf(f, "%d %ld", &mode, &n) != 2) {
      fprintf(stderr, "cannot read %s\n", argv[1]);
      return 2;
    }
    fclose(f);
    while (mode == 9) pause();
  } else if (argc > 1) {
    n = strtol(argv[1], NULL, 10);
  }
  long sum = 0;
  for (long i = 0; i < n; i++) sum += classify(i, mode);
  if (argc > 2) sum += never_in_training(sum);
  printf("%ld\n", sum);
  return 0;
}
