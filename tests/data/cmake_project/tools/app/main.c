#include <stdio.h>

#include "extra/api.h"

int main(int argc, char **argv) {
  (void)argv;
  printf("%d\n", extra_score(argc * 10));
  return 0;
}
